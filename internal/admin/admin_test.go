package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/internal/progress"
	"github.com/signalbox/signalbox/internal/version"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/tables"
)

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		":0":             "127.0.0.1:0",
		":9321":          "127.0.0.1:9321",
		"127.0.0.1:8080": "127.0.0.1:8080",
		"0.0.0.0:9321":   "0.0.0.0:9321",
		"[::]:9321":      "[::]:9321",
		"localhost:1":    "localhost:1",
	} {
		if got, err := admin.ListenAddr(in); err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"9321", "127.0.0.1", ":http", ":65536", ":-1", "host:port"} {
		if _, err := admin.ListenAddr(bad); err == nil {
			t.Errorf("ListenAddr(%q) accepted", bad)
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStartLoopbackAndPortInUse: an address without a host binds loopback
// and logs its URL; a port in use fails with the setting's name.
func TestStartLoopbackAndPortInUse(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	stats := func() signalbox.Stats { return signalbox.Stats{} }
	srv, err := admin.Start(admin.Options{Addr: ":0", Setting: "admin.addr", Stats: stats, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || strings.HasSuffix(srv.URL, ":0") {
		t.Fatalf("URL %q, want loopback with the port bound", srv.URL)
	}
	if l := logs.FilterMessage("admin server listening").All(); len(l) != 1 || l[0].ContextMap()["url"] != srv.URL {
		t.Errorf("logged %v, want the URL %s", logs.All(), srv.URL)
	}
	if code, body := get(t, srv.URL+"/metrics"); code != 200 || !strings.Contains(body, "signalbox_records_in_total 0") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	_, err = admin.Start(admin.Options{Addr: strings.TrimPrefix(srv.URL, "http://"), Setting: "--admin-addr", Stats: stats})
	if err == nil || !strings.HasPrefix(err.Error(), "--admin-addr: ") || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("second server on the same port: %v", err)
	}
}

// TestNonLoopbackWarns: a named wildcard address is bound, with a warning.
// 0.0.0.0 binds IPv4 only, and the URL logged is the address as given with
// the port bound.
func TestNonLoopbackWarns(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	srv, err := admin.Start(admin.Options{Addr: "0.0.0.0:0", Setting: "admin.addr", Stats: func() signalbox.Stats { return signalbox.Stats{} }, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	warns := logs.FilterLevelExact(zap.WarnLevel).All()
	if len(warns) != 1 {
		t.Fatalf("no warning for a non-loopback address: %v", logs.All())
	}
	port := strings.TrimPrefix(srv.URL, "http://0.0.0.0:")
	if port == srv.URL || port == "0" || warns[0].ContextMap()["url"] != srv.URL {
		t.Fatalf("URL %q, logged %v: want http://0.0.0.0:<bound port>", srv.URL, warns[0].ContextMap()["url"])
	}
	if code, _ := get(t, "http://127.0.0.1:"+port+"/healthz"); code != 200 {
		t.Errorf("IPv4 loopback: /healthz %d", code)
	}
	v6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Logf("no IPv6 loopback here (%v): the IPv4-only check is skipped", err)
		return
	}
	_ = v6.Close()
	if c, err := net.DialTimeout("tcp6", "[::1]:"+port, 5*time.Second); err == nil {
		_ = c.Close()
		t.Errorf("0.0.0.0 also accepts IPv6 connections on [::1]:%s", port)
	}
}

// TestIdleConnectionsClosed: a connection that sends nothing is closed by
// the server's timeouts rather than held open. (The read timeout is
// shortened to 300 ms: its 10 s are a constant, the closing is the point.)
func TestIdleConnectionsClosed(t *testing.T) {
	admin.ShortenReadTimeout(t, 300*time.Millisecond)
	srv, err := admin.Start(admin.Options{Addr: "127.0.0.1:0", Setting: "admin.addr", Stats: func() signalbox.Stats { return signalbox.Stats{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read on an idle connection: %v, want EOF (closed by the server)", err)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	now := time.Unix(1000, 0)
	var s signalbox.Stats
	h := admin.Handler(admin.Options{Stats: func() signalbox.Stats { return s }, Now: func() time.Time { return now }, StallAfter: time.Minute, Logger: zap.NewNop()})
	check := func(path string, want int, text string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want || !strings.Contains(rec.Body.String(), text) {
			t.Errorf("%s: %d %q, want %d with %q", path, rec.Code, rec.Body.String(), want, text)
		}
	}
	check("/healthz", 200, "starting")
	check("/readyz", 503, "the sinks are not open, no partition is assigned")
	s.Published, s.SinksOpen = now.Add(-59*time.Second), true
	check("/healthz", 200, "ok")
	check("/readyz", 503, "no partition is assigned")
	s.Partitions = []catchup.Status{{ID: catchup.ID{Input: "a"}}}
	check("/readyz", 200, "1 partitions assigned")
	// In a group: ready once joined, with or without a partition.
	s.Group, s.Partitions = "g", nil
	check("/readyz", 503, "not a member of group g now")
	s.Member = &record.GroupMember{Group: "g", Generation: 3}
	check("/readyz", 200, "member of group g (generation 3), 0 partitions assigned")
	s.Published = now.Add(-61 * time.Second)
	check("/healthz", 503, "published nothing for 1m1s")
	check("/status", 200, `"watermark"`)
}

// TestBuildOnStatusAndMetrics: /status and /metrics name the same build
// as `signalbox version`.
func TestBuildOnStatusAndMetrics(t *testing.T) {
	h := admin.Handler(admin.Options{Stats: func() signalbox.Stats { return signalbox.Stats{} }, Now: time.Now, Logger: zap.NewNop()})
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	want := version.Get()
	var st progress.Status
	if err := json.Unmarshal([]byte(get("/status")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Build != want {
		t.Errorf("/status build = %+v, want %+v", st.Build, want)
	}
	series := fmt.Sprintf("signalbox_build_info{commit=%q,goversion=%q,version=%q} 1\n", want.Commit, want.GoVersion, want.Version)
	if m := get("/metrics"); !strings.Contains(m, series) {
		t.Errorf("/metrics lacks %q", series)
	}
}

// TestTableSizesOnMetrics: with Tables, /metrics and /status show each
// table's size.
func TestTableSizesOnMetrics(t *testing.T) {
	sizes := func() []tables.Size { return []tables.Size{{Name: "products", Keys: 3, Versions: 4, Bytes: 50}} }
	h := admin.Handler(admin.Options{Stats: func() signalbox.Stats { return signalbox.Stats{} }, Tables: sizes, Now: time.Now, Logger: zap.NewNop()})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, series := range []string{`signalbox_table_keys{table="products"} 3`, `signalbox_table_kept_versions{table="products"} 4`, `signalbox_table_value_bytes{table="products"} 50`} {
		if !strings.Contains(rec.Body.String(), series+"\n") {
			t.Errorf("/metrics lacks %q", series)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	var st progress.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Tables) != 1 || st.Tables[0].Name != "products" || st.Tables[0].Keys != 3 || st.Tables[0].DiskBytes != nil {
		t.Errorf("/status tables = %+v, want products' size, in memory", st.Tables)
	}
}
