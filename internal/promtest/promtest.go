// Package promtest runs Debian's Prometheus tools in tests: promtool, and a
// real Prometheus server that scrapes a target on loopback.
//
// Both are found on PATH (package prometheus; scripts/test.sh installs it).
// Where they are missing a test skips with a message saying so, except
// under CI, where it fails (package internal/ci).
package promtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/ci"
)

// Tool returns the path of name (promtool, prometheus), or skips t.
func Tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found on PATH: install Debian's prometheus package (apt-get install -y prometheus; scripts/test.sh does)", name)
	ci.Missing(t, msg)
	return ""
}

// Promtool runs promtool with args and stdin; it fails t with promtool's
// output unless promtool exits 0.
func Promtool(t testing.TB, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(Tool(t, "promtool"), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Server is a Prometheus server started by a test.
type Server struct {
	URL string // http://127.0.0.1:port
}

// StartPrometheus starts a Prometheus server on loopback that scrapes
// target (host:port, path /metrics) every 200ms. It stops when t ends.
func StartPrometheus(t testing.TB, target string) *Server {
	t.Helper()
	bin := Tool(t, "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 200ms
  scrape_timeout: 150ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: signalbox
    static_configs:
      - targets: [%q]
`, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting prometheus: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	s := &Server{URL: "http://" + addr}
	for deadline := time.Now().Add(time.Minute); ; {
		if resp, err := http.Get(s.URL + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case err := <-done:
			t.Fatalf("prometheus exited: %v\n%s", err, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after a minute\n%s", logs.String())
		}
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Sample is one series of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant PromQL query.
func (s *Server) Query(q string) ([]Sample, error) {
	resp, err := http.Get(s.URL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, err
	}
	if doc.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, doc.Error)
	}
	out := make([]Sample, 0, len(doc.Data.Result))
	for _, r := range doc.Data.Result {
		str, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v", q, r.Value[1])
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}
