package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/promtest"
)

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// adminURL waits for the "admin server listening" log line.
func adminURL(t *testing.T, ctx context.Context, logs *syncBuffer) string {
	t.Helper()
	for {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var m struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "admin server listening" {
				return m.URL
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no admin server URL logged:\n%s", logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// sample finds the value of the series name{labels} in a text exposition.
func sample(t *testing.T, exposition []byte, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := new(expfmt.TextParser).TextToMetricFamilies(bytes.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	base := name
	for _, suffix := range []string{"_count", "_sum"} {
		if _, ok := mfs[strings.TrimSuffix(name, suffix)]; strings.HasSuffix(name, suffix) && ok {
			base = strings.TrimSuffix(name, suffix)
		}
	}
	mf, ok := mfs[base]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Histogram != nil && strings.HasSuffix(name, "_count"):
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestAdminServerOnALiveJob runs a live job with the admin server named in
// the job file, replays history, sends live records, then checks the
// endpoints, promtool's verdict on /metrics, a real Prometheus server's
// scrape of it, and `signalbox status`.
func TestAdminServerOnALiveJob(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*hangGuard)
	defer cancel()
	c, err := embedded.Start(embedded.WithTopic("events", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	produce := func(ts func(i int) int64, n int) {
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, embedded.Record("events", int32(i%2), fmt.Sprintf("k%d", i%3), fmt.Sprintf(`{"ts":%d}`, ts(i))))
		}
		if err := c.Produce(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	const history, live = 40, 10
	produce(func(i int) int64 { return 1_700_000_000_000 + int64(i)*1000 }, history)
	out := t.TempDir() + "/out.jsonl"
	job := writeFile(t, "job.yaml", fmt.Sprintf(`
brokers: [%s]
inputs:
  - {topic: events, time: field, time_field: ts}
delay: 100ms
sinks:
  - {type: jsonl, path: %s}
checkpoint_interval: 100ms
admin:
  addr: 127.0.0.1:0
`, c.Addrs()[0], out))
	runCtx, stop := context.WithCancel(ctx)
	var logs syncBuffer
	done := make(chan int, 1)
	go func() { done <- execute(runCtx, []string{"--log-format", "json", "run", "-c", job}, io.Discard, &logs) }()
	url := adminURL(t, ctx, &logs)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case code := <-done:
				t.Fatalf("run exited with %d while waiting for %s:\n%s", code, what, logs.String())
			case <-ctx.Done():
				t.Fatalf("hang guard: waiting for %s", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitFor("the history", func() bool { return len(readOutput(t, out)) == history })
	// The release latency counts records whose event time is at or after
	// the end of the replay: produce the live ones once it has ended, not
	// as soon as the last history record is out (the same pass may still
	// be about to declare it).
	waitFor("the end of the replay", func() bool {
		_, body := httpGet(t, url+"/metrics")
		v, ok := sample(t, body, "signalbox_replay_done", nil)
		return ok && v == 1
	})
	produce(func(int) int64 { return time.Now().UnixMilli() }, live)
	waitFor("the live records", func() bool { return len(readOutput(t, out)) == history+live })

	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet(t, url+path); code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	var body []byte
	waitFor("the counters published", func() bool {
		_, body = httpGet(t, url+"/metrics")
		v, _ := sample(t, body, "signalbox_sink_records_total", map[string]string{"sink": "jsonl"})
		return v == history+live
	})
	promtest.Promtool(t, body, "check", "metrics")
	for _, want := range []struct {
		name   string
		labels map[string]string
		check  func(float64) bool
	}{
		{"signalbox_records_out_total", nil, func(v float64) bool { return v == history+live }},
		{"signalbox_out_of_order_records_total", map[string]string{"sink": "jsonl"}, func(v float64) bool { return v == 0 }},
		{"signalbox_release_latency_beyond_delay_seconds_count", map[string]string{"sink": "jsonl"}, func(v float64) bool { return v >= 1 && v <= live }},
		{"signalbox_replay_done", nil, func(v float64) bool { return v == 1 }},
		{"signalbox_partition_behind_records", map[string]string{"topic": "events", "partition": "1"}, func(v float64) bool { return v == 0 }},
		{"signalbox_partition_phase", map[string]string{"topic": "events", "partition": "0", "phase": "caught-up"}, func(v float64) bool { return v == 1 }},
		{"signalbox_watermark_seconds", nil, func(v float64) bool { return v > 1_700_000_000 }},
		{"signalbox_rebalances_total", nil, func(v float64) bool { return v == 1 }},
		{"signalbox_sinks_open", nil, func(v float64) bool { return v == 1 }},
		// Without a group nothing is committed: no commit is counted.
		{"signalbox_commits_total", nil, func(v float64) bool { return v == 0 }},
		{"signalbox_checkpoints_total", nil, func(v float64) bool { return v >= 1 }},
	} {
		if v, ok := sample(t, body, want.name, want.labels); !ok || !want.check(v) {
			t.Errorf("%s%v = %v (present %v)", want.name, want.labels, v, ok)
		}
	}

	// A real Prometheus server scrapes the job and answers queries.
	prom := promtest.StartPrometheus(t, strings.TrimPrefix(url, "http://"))
	query := func(q string, ok func([]promtest.Sample) bool) {
		t.Helper()
		var got []promtest.Sample
		waitFor("Prometheus to answer "+q, func() bool {
			var err error
			if got, err = prom.Query(q); err != nil {
				t.Fatal(err)
			}
			return ok(got)
		})
	}
	query("signalbox_records_out_total", func(s []promtest.Sample) bool {
		return len(s) == 1 && s[0].Value == history+live && s[0].Labels["job"] == "signalbox"
	})
	query("signalbox_watermark_seconds", func(s []promtest.Sample) bool { return len(s) == 1 && s[0].Value > 1_700_000_000 })
	query(`signalbox_partition_behind_records{topic="events"}`, func(s []promtest.Sample) bool { return len(s) == 2 })
	query(`signalbox_watermark_lag_seconds`, func(s []promtest.Sample) bool { return len(s) == 1 && s[0].Value >= 0 })

	code, text, errs := cli(t, ctx, "status", "--addr", url)
	if code != 0 || !strings.Contains(text, "held by    nobody") || !strings.Contains(text, "jsonl") {
		t.Errorf("status: exit %d\n%s\n%s", code, text, errs)
	}
	// Without a group: no commits, no rebalances, no COMMITTED column.
	if !strings.Contains(text, "; no consumer group, so no offsets are committed") || strings.Contains(text, "COMMITTED") ||
		strings.Contains(text, "commits") || strings.Contains(text, "rebalances") {
		t.Errorf("status of a job without a group shows commits:\n%s", text)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("run: exit %d\n%s", code, logs.String())
	}
}

// TestAdminPortInUse: a port in use fails the start, naming the setting it
// came from; the flag overrides the job file.
func TestAdminPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	job := writeFile(t, "job.yaml", fmt.Sprintf(`
brokers: [127.0.0.1:1]
inputs: [{topic: events}]
sinks: [{type: jsonl, path: %s/out.jsonl}]
admin: {addr: %q}
`, t.TempDir(), addr))
	for _, tc := range []struct {
		args    []string
		setting string
	}{
		{nil, "admin.addr"},
		{[]string{"--admin-addr", addr}, "--admin-addr"},
	} {
		args := append([]string{"--log-level", "error", "run", "-c", job}, tc.args...)
		code, _, errs := cli(t, context.Background(), args...)
		if want := tc.setting + ": " + addr + " is already in use"; code != 1 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, errs, want)
		}
	}
	// The flag names another port: the job file's is not used.
	code, _, errs := cli(t, context.Background(), "--log-level", "error", "run", "-c", job, "--admin-addr", "off")
	if strings.Contains(errs, "already in use") {
		t.Errorf("--admin-addr off: exit %d, stderr %q", code, errs)
	}
}

// TestDemoServesMetrics: `signalbox demo` serves its ordering run on the
// admin server, and promtool accepts its /metrics. The delay is long so
// that a loaded machine does not make live records late (demo_test.go).
func TestDemoServesMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*hangGuard)
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"--log-format", "json", "demo", "--topics", "2", "--partitions", "2", "--records", "200",
			"--slow", "200ms", "--live", "3s", "--rate", "200", "--delay", "2s", "--admin-addr", "127.0.0.1:0"}, io.Discard, &logs)
	}()
	url := adminURL(t, ctx, &logs)
	var body []byte
	for {
		_, body = httpGet(t, url+"/metrics")
		if v, _ := sample(t, body, "signalbox_replay_done", nil); v == 1 {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("demo exited with %d before its replay was done", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	promtest.Promtool(t, body, "check", "metrics")
	if v, ok := sample(t, body, "signalbox_records_in_total", nil); !ok || v < 800 {
		t.Errorf("signalbox_records_in_total = %v (present %v), want at least the 800 history records", v, ok)
	}
	if code := <-done; code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, logs.String())
	}
}
