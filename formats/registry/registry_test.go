package registry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/retry"
)

// fastRetry gives up after a few quick attempts so outage tests stay short.
var fastRetry = retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, NoJitter: true, MaxElapsed: 30 * time.Millisecond}

const userAvro = `{"type":"record","name":"User","fields":[{"name":"id","type":"string"}]}`

// counted serves reg and counts the schema requests it receives.
type counted struct {
	reg  *srfake.Registry
	hits atomic.Int64
	down atomic.Bool // answer 503 while set
	// canned answers by path, for schemas srfake refuses to hold
	mu     sync.Mutex
	canned map[string]sr.Schema
}

func (c *counted) can(path string, s sr.Schema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.canned == nil {
		c.canned = map[string]sr.Schema{}
	}
	c.canned[path] = s
}

func newCounted(t *testing.T, opts ...srfake.Option) *counted {
	c := &counted{reg: srfake.New(opts...)}
	t.Cleanup(c.reg.Close)
	c.reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		c.hits.Add(1)
		if c.down.Load() {
			http.Error(w, `{"error_code":50003,"message":"backend down"}`, http.StatusServiceUnavailable)
			return true
		}
		c.mu.Lock()
		s, ok := c.canned[r.URL.Path]
		c.mu.Unlock()
		if ok {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			_ = json.NewEncoder(w).Encode(s)
		}
		return ok
	})
	return c
}

func newClient(t *testing.T, cfg registry.Config) *registry.Client {
	t.Helper()
	if cfg.Retry.Initial == 0 {
		cfg.Retry = fastRetry
	}
	cl, err := registry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func TestByIDCachesPerID(t *testing.T) {
	c := newCounted(t)
	id, _, err := c.reg.RegisterSchema("users-value", sr.Schema{Schema: userAvro})
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, registry.Config{URLs: []string{c.reg.URL()}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := cl.ByID(context.Background(), id)
			if err != nil || s.Text != userAvro || s.ID != id || s.Type != sr.TypeAvro {
				t.Errorf("ByID = %+v, %v", s, err)
			}
		}()
	}
	wg.Wait()
	if n := c.hits.Load(); n != 1 {
		t.Fatalf("8 concurrent first sightings made %d requests, want 1", n)
	}
	// Evolving the subject does not change what the id names.
	id2, _, err := c.reg.RegisterSchema("users-value", sr.Schema{Schema: `{"type":"record","name":"User","fields":[{"name":"id","type":"string"},{"name":"n","type":"int","default":0}]}`})
	if err != nil || id2 == id {
		t.Fatalf("second version: id %d, %v", id2, err)
	}
	if s, err := cl.ByID(context.Background(), id); err != nil || s.Text != userAvro {
		t.Fatalf("after evolution ByID(%d) = %+v, %v", id, s, err)
	}
	if s, err := cl.ByID(context.Background(), id2); err != nil || s.Text == userAvro {
		t.Fatalf("ByID(%d) = %+v, %v", id2, s, err)
	}
	if n := c.hits.Load(); n != 2 {
		t.Fatalf("%d requests, want 2 (one per id)", n)
	}
}

func TestNotFoundIsCachedWithTTL(t *testing.T) {
	c := newCounted(t)
	now := time.Unix(1000, 0)
	cl := newClient(t, registry.Config{URLs: []string{c.reg.URL()}, NotFoundTTL: time.Minute, Now: func() time.Time { return now }})
	for range 3 {
		_, err := cl.ByID(context.Background(), 77)
		var nf *registry.NotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrUnavailable) {
			t.Fatalf("err = %v, want a NotFoundError", err)
		}
		if !strings.Contains(err.Error(), "schema id 77") {
			t.Fatalf("err %q does not name the id", err)
		}
	}
	if n := c.hits.Load(); n != 1 {
		t.Fatalf("3 lookups of an unknown id made %d requests, want 1", n)
	}
	c.reg.SeedSchema("late-value", 1, 77, sr.Schema{Schema: userAvro})
	if _, err := cl.ByID(context.Background(), 77); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("within the TTL: %v", err)
	}
	now = now.Add(time.Minute + time.Second)
	if s, err := cl.ByID(context.Background(), 77); err != nil || s.Text != userAvro {
		t.Fatalf("after the TTL: %+v, %v", s, err)
	}
	if n := c.hits.Load(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestOutageAndRecovery(t *testing.T) {
	c := newCounted(t)
	id, _, _ := c.reg.RegisterSchema("users-value", sr.Schema{Schema: userAvro})
	var retries atomic.Int64
	p := fastRetry
	p.OnRetry = func(int, error, time.Duration) { retries.Add(1) }
	cl := newClient(t, registry.Config{URLs: []string{c.reg.URL()}, Retry: p})

	c.down.Store(true)
	_, err := cl.ByID(context.Background(), id)
	if !errors.Is(err, registry.ErrUnavailable) || errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if retries.Load() < 1 {
		t.Fatal("a 503 was not retried")
	}
	// Unavailability is not cached: the same id succeeds once the registry is back.
	c.down.Store(false)
	if s, err := cl.ByID(context.Background(), id); err != nil || s.Text != userAvro {
		t.Fatalf("after recovery: %+v, %v", s, err)
	}

	// An outage shorter than the retry budget is invisible to the caller.
	id2, _, _ := c.reg.RegisterSchema("other-value", sr.Schema{Schema: `"string"`})
	c.down.Store(true)
	p.MaxElapsed = -1 // retry until the registry answers
	p.OnRetry = func(n int, _ error, _ time.Duration) {
		if n == 3 {
			c.down.Store(false)
		}
	}
	cl2 := newClient(t, registry.Config{URLs: []string{c.reg.URL()}, Retry: p})
	if s, err := cl2.ByID(context.Background(), id2); err != nil || s.Text != `"string"` {
		t.Fatalf("through a short outage: %+v, %v", s, err)
	}
}

func TestUnreachableAndSeveralURLs(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused from now on
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer failing.Close()

	cl := newClient(t, registry.Config{URLs: []string{deadURL}})
	if _, err := cl.ByID(context.Background(), 1); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("unreachable registry: %v", err)
	}

	c := newCounted(t)
	id, _, _ := c.reg.RegisterSchema("users-value", sr.Schema{Schema: userAvro})
	p := fastRetry
	p.MaxElapsed = time.Second
	cl = newClient(t, registry.Config{URLs: []string{deadURL, failing.URL, c.reg.URL()}, Retry: p})
	if s, err := cl.ByID(context.Background(), id); err != nil || s.Text != userAvro {
		t.Fatalf("with a dead and a failing URL first: %+v, %v", s, err)
	}
}

func TestCredentialsNeverPrinted(t *testing.T) {
	const pass, token = "hunter2-pass", "tok-s3cret"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+pass))
	c := newCounted(t, srfake.WithAuth(basic))
	id, _, _ := c.reg.RegisterSchema("users-value", sr.Schema{Schema: userAvro})

	// Basic auth from the config, and from the URL's userinfo.
	cfg := registry.Config{URLs: []string{c.reg.URL()}, Username: "alice", Password: pass}
	if _, err := newClient(t, cfg).ByID(context.Background(), id); err != nil {
		t.Fatalf("basic auth: %v", err)
	}
	inURL := strings.Replace(c.reg.URL(), "http://", "http://alice:"+pass+"@", 1)
	cl := newClient(t, registry.Config{URLs: []string{inURL}})
	if _, err := cl.ByID(context.Background(), id); err != nil {
		t.Fatalf("basic auth from the URL: %v", err)
	}
	// A registry that echoes the request's credentials into its error.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		http.Error(w, fmt.Sprintf(`{"error_code":40301,"message":"denied %s %s %s"}`, u, p, r.Header.Get("Authorization")), http.StatusForbidden)
	}))
	defer echo.Close()
	for _, cfg := range []registry.Config{
		{URLs: []string{strings.Replace(echo.URL, "http://", "http://alice:"+pass+"@", 1)}},
		{URLs: []string{echo.URL}, BearerToken: token},
	} {
		cl := newClient(t, cfg)
		_, err := cl.ByID(context.Background(), id)
		if !errors.Is(err, registry.ErrAuth) || !retry.IsFatal(err) {
			t.Fatalf("a 403 is %v, want a fatal refusal of the credentials", err)
		}
		for _, s := range []string{err.Error(), cl.String(), fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg)} {
			if strings.Contains(s, pass) || strings.Contains(s, token) {
				t.Fatalf("credentials printed: %s", s)
			}
		}
	}

	// Bearer token accepted by a registry that wants it.
	bc := newCounted(t, srfake.WithAuth("Bearer "+token))
	id, _, _ = bc.reg.RegisterSchema("users-value", sr.Schema{Schema: userAvro})
	if _, err := newClient(t, registry.Config{URLs: []string{bc.reg.URL()}, BearerToken: token}).ByID(context.Background(), id); err != nil {
		t.Fatalf("bearer: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  registry.Config
		want string
	}{
		{registry.Config{}, "urls: at least one URL"},
		{registry.Config{URLs: []string{"http://h", "ftp://x"}}, `urls[1]: "ftp://x" is not an http(s) URL`},
		{registry.Config{URLs: []string{"http://h"}, Username: "u", BearerToken: "t"}, "bearer_token: set a username or a bearer token, not both"},
	} {
		if _, err := registry.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}

func TestReferencesResolved(t *testing.T) {
	c := newCounted(t)
	ctx := context.Background()
	// Avro: User references Address, which references Country (transitive);
	// Order references both User and Address (diamond).
	country := `{"type":"record","name":"Country","namespace":"geo","fields":[{"name":"code","type":"string"}]}`
	address := `{"type":"record","name":"Address","namespace":"geo","fields":[{"name":"country","type":"geo.Country"}]}`
	user := `{"type":"record","name":"User","fields":[{"name":"home","type":"geo.Address"}]}`
	order := `{"type":"record","name":"Order","fields":[{"name":"u","type":"User"},{"name":"ship","type":"geo.Address"}]}`
	mustReg := func(subject string, s sr.Schema) int {
		id, _, err := c.reg.RegisterSchema(subject, s)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	mustReg("country", sr.Schema{Schema: country})
	mustReg("address", sr.Schema{Schema: address, References: []sr.SchemaReference{{Name: "geo.Country", Subject: "country", Version: 1}}})
	mustReg("user", sr.Schema{Schema: user, References: []sr.SchemaReference{{Name: "geo.Address", Subject: "address", Version: 1}}})
	oid := mustReg("orders-value", sr.Schema{Schema: order, References: []sr.SchemaReference{
		{Name: "User", Subject: "user", Version: 1}, {Name: "geo.Address", Subject: "address", Version: 1},
	}})
	cl := newClient(t, registry.Config{URLs: []string{c.reg.URL()}})
	s, err := cl.ByID(ctx, oid)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range s.References {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "geo.Country,geo.Address,User" {
		t.Fatalf("references in order %s, want dependencies first, each once", got)
	}

	// Protobuf: well-known imports are not fetched, a registered import is.
	common := `syntax = "proto3"; package common; message Money { int64 units = 1; }`
	mustReg("common.proto", sr.Schema{Schema: common, Type: sr.TypeProtobuf})
	pb := `syntax = "proto3"; package shop; import "google/protobuf/timestamp.proto"; import "common.proto"; message Sale { common.Money price = 1; google.protobuf.Timestamp at = 2; }`
	// Canned: srfake refuses to hold a reference to a subject it lacks.
	const pid = 600
	c.can("/schemas/ids/600", sr.Schema{Schema: pb, Type: sr.TypeProtobuf, References: []sr.SchemaReference{
		{Name: "google/protobuf/timestamp.proto", Subject: "google/protobuf/timestamp.proto", Version: 1},
		{Name: "common.proto", Subject: "common.proto", Version: 1},
	}})
	s, err = cl.ByID(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.References) != 1 || s.References[0].Name != "common.proto" || s.References[0].Text != common || s.Type != sr.TypeProtobuf {
		t.Fatalf("protobuf references %+v", s.References)
	}

	// A reference to a subject version that does not exist: not found.
	c.can("/schemas/ids/500", sr.Schema{Schema: user, References: []sr.SchemaReference{{Name: "geo.Address", Subject: "nowhere", Version: 3}}})
	if _, err := cl.ByID(ctx, 500); !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("missing reference: %v", err)
	}
}

func TestByGUID(t *testing.T) {
	c := newCounted(t)
	id, _, _ := c.reg.RegisterSchema("users-value", sr.Schema{Schema: userAvro})
	rc, _ := sr.NewClient(sr.URLs(c.reg.URL()))
	ss, err := rc.SchemaByVersion(context.Background(), "users-value", 1)
	if err != nil || ss.GUID == "" {
		t.Fatalf("srfake gave no GUID: %+v, %v", ss, err)
	}
	cl := newClient(t, registry.Config{URLs: []string{c.reg.URL()}})
	s, err := cl.ByGUID(context.Background(), ss.GUID)
	if err != nil || s.Text != userAvro || s.ID != id || s.GUID != ss.GUID {
		t.Fatalf("ByGUID = %+v, %v", s, err)
	}
	if _, err := cl.ByGUID(context.Background(), "00000000-0000-0000-0000-000000000000"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("unknown GUID: %v", err)
	}
}

func TestTLS(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	id, _, _ := reg.RegisterSchema("users-value", sr.Schema{Schema: userAvro})
	srv := httptest.NewTLSServer(reg.Handler())
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	cl := newClient(t, registry.Config{URLs: []string{srv.URL}, TLS: &tls.Config{RootCAs: pool}})
	if s, err := cl.ByID(context.Background(), id); err != nil || s.Text != userAvro {
		t.Fatalf("over TLS: %+v, %v", s, err)
	}
	// Without the server's CA the handshake fails: unavailable, not "not found".
	cl = newClient(t, registry.Config{URLs: []string{srv.URL}, TLS: &tls.Config{RootCAs: x509.NewCertPool()}})
	if _, err := cl.ByID(context.Background(), id); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("untrusted server: %v", err)
	}
}

// TestPingTriesEachURLOnce: Ping asks each URL once, whatever the retry
// policy, and succeeds when a later one answers; when none does it returns
// an *UnavailableError.
func TestPingTriesEachURLOnce(t *testing.T) {
	first, second := newCounted(t), newCounted(t)
	first.down.Store(true)
	slow := retry.Policy{Initial: time.Millisecond, NoJitter: true, MaxElapsed: time.Minute}
	cl := newClient(t, registry.Config{URLs: []string{first.reg.URL(), second.reg.URL()}, Retry: slow})
	if err := cl.Ping(context.Background()); err != nil {
		t.Fatalf("Ping with the second URL up: %v", err)
	}
	if f, s := first.hits.Load(), second.hits.Load(); f != 1 || s != 1 {
		t.Fatalf("requests: first URL %d, second %d, want 1 each", f, s)
	}
	second.down.Store(true)
	err := cl.Ping(context.Background())
	var ue *registry.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("Ping with both URLs down: %v", err)
	}
	if f, s := first.hits.Load(), second.hits.Load(); f != 2 || s != 2 {
		t.Fatalf("requests: first URL %d, second %d, want 2 each", f, s)
	}
}

// TestExpiredNotFoundsAreSwept: a stream of ever new unknown ids does not
// grow the cache without bound: once their TTL has passed, 404s are
// dropped, while those within it stay cached.
func TestExpiredNotFoundsAreSwept(t *testing.T) {
	c := newCounted(t)
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cl := newClient(t, registry.Config{URLs: []string{c.reg.URL()}, NotFoundTTL: time.Minute, Now: clock})
	const perMinute = 300
	for minute := range 10 {
		for i := range perMinute {
			if _, err := cl.ByID(context.Background(), 1_000_000+minute*perMinute+i); !errors.Is(err, registry.ErrNotFound) {
				t.Fatalf("unknown id: %v", err)
			}
		}
		mu.Lock()
		now = now.Add(time.Minute)
		mu.Unlock()
	}
	// At most the last minute's 404s, those of the minute before that are
	// not swept yet, and one sweep's slack.
	if n := cl.CachedEntries(); n > 3*perMinute {
		t.Fatalf("%d entries cached after 10 minutes of %d new unknown ids each, want at most %d", n, perMinute, 3*perMinute)
	}
	// A 404 within its TTL is still served from the cache.
	hits := c.hits.Load()
	mu.Lock()
	now = now.Add(-30 * time.Second)
	mu.Unlock()
	if _, err := cl.ByID(context.Background(), 1_000_000+9*perMinute); !errors.Is(err, registry.ErrNotFound) || c.hits.Load() != hits {
		t.Fatalf("a 404 within its TTL: %v, %d new requests", err, c.hits.Load()-hits)
	}
}

// TestAuthRefusalIsFatal: a registry answering 401 (no credentials) or 403
// (wrong ones) fails the call at once, unretried under a patient policy and
// uncached, with a fatal *AuthError that names the setting and the status,
// never the secret; Ping says the same, whichever URL refused.
func TestAuthRefusalIsFatal(t *testing.T) {
	const pass = "s3cret-pass"
	c := newCounted(t, srfake.WithAuth("Basic "+base64.StdEncoding.EncodeToString([]byte("alice:"+pass))))
	id, _, _ := c.reg.RegisterSchema("users-value", sr.Schema{Schema: userAvro})
	patient := retry.Policy{Initial: time.Millisecond, NoJitter: true, MaxElapsed: time.Minute}
	for _, tc := range []struct {
		name   string
		cfg    registry.Config
		status int
	}{
		{"no credentials", registry.Config{}, http.StatusUnauthorized},
		{"wrong password", registry.Config{Username: "alice", Password: "wrong-" + pass}, http.StatusForbidden},
		{"wrong token", registry.Config{BearerToken: "tok-" + pass}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.URLs, cfg.Retry, cfg.Setting = []string{c.reg.URL()}, patient, "schema_registry"
			cl := newClient(t, cfg)
			for call := int64(1); call <= 2; call++ {
				before := c.hits.Load()
				_, err := cl.ByID(context.Background(), id)
				var ae *registry.AuthError
				if !errors.As(err, &ae) || !errors.Is(err, registry.ErrAuth) || !retry.IsFatal(err) ||
					retry.IsRetryable(err) || errors.Is(err, registry.ErrUnavailable) || errors.Is(err, registry.ErrNotFound) {
					t.Fatalf("call %d: %v, want a fatal *AuthError, neither retryable, unavailable nor not found", call, err)
				}
				if hits := c.hits.Load() - before; hits != 1 {
					t.Fatalf("call %d: %d requests, want 1 (not retried, not cached)", call, hits)
				}
				msg := err.Error()
				if ae.StatusCode != tc.status || !strings.HasPrefix(msg, "schema_registry: ") || !strings.Contains(msg, fmt.Sprint(tc.status)) ||
					!strings.Contains(msg, fmt.Sprintf("schema id %d", id)) || strings.Contains(msg, pass) {
					t.Fatalf("call %d: %q (status %d), want schema_registry, HTTP %d, the id, and no secret", call, msg, ae.StatusCode, tc.status)
				}
			}
			down := newCounted(t)
			down.down.Store(true)
			cfg.URLs = []string{c.reg.URL(), down.reg.URL()}
			err := newClient(t, cfg).Ping(context.Background())
			if !errors.Is(err, registry.ErrAuth) || !retry.IsFatal(err) || !strings.Contains(err.Error(), fmt.Sprint(tc.status)) || strings.Contains(err.Error(), pass) {
				t.Fatalf("Ping: %v, want the refusal (before the other URL's outage), without the secret", err)
			}
		})
	}
	// The default setting's name, for a library user.
	_, err := newClient(t, registry.Config{URLs: []string{c.reg.URL()}}).ByID(context.Background(), id)
	if !strings.HasPrefix(fmt.Sprint(err), "schema registry: ") {
		t.Fatalf("default setting: %v", err)
	}
}
