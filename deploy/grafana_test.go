package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/internal/promtest"
	"github.com/signalbox/signalbox/metrics"
)

const dashboardFile = "grafana/signalbox.json"

// panel is the part of a Grafana panel the test reads; a row holds panels.
type panel struct {
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// query is one panel query.
type query struct{ panel, expr string }

// dashboardQueries reads every panel's queries; a panel without one fails t.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string  `json:"uid"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q has a query without an expression", p.Title)
				}
				out = append(out, query{p.Title, tg.Expr})
			}
		}
	}
	walk(d.Panels)
	if len(out) == 0 {
		t.Fatalf("%s has no panel queries", dashboardFile)
	}
	return out
}

// labelValues is a variable's label_values(selector, label) query.
var labelValues = regexp.MustCompile(`^label_values\((.+), *([a-z_]+)\)$`)

// dashboardVariables reads the query variables as selector and label; a
// query variable of another form fails t.
func dashboardVariables(t *testing.T) map[string][2]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: query %v is not label_values(selector, label)", v.Name, v.Query)
			continue
		}
		out[v.Name] = [2]string{m[1], m[2]}
	}
	return out
}

// exportedMetrics is every series name the collector describes, with the
// suffixes of a histogram's series.
func exportedMetrics() map[string]bool {
	ch := make(chan *prometheus.Desc, 100)
	metrics.NewCollector(func() signalbox.Stats { return signalbox.Stats{} }, nil).Describe(ch)
	close(ch)
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for d := range ch {
		if m := name.FindStringSubmatch(d.String()); m != nil {
			for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
				out[m[1]+suffix] = true
			}
		}
	}
	return out
}

var metricName = regexp.MustCompile(`\bsignalbox_[a-z0-9_]+`)

// unknownMetrics lists the signalbox_ names in expr that the code does not
// export.
func unknownMetrics(expr string, known map[string]bool) []string {
	var out []string
	for _, n := range metricName.FindAllString(expr, -1) {
		if !known[n] {
			out = append(out, n)
		}
	}
	return out
}

// The dashboard shows what an operator asks first; each of these series is
// on a panel.
var dashboardMust = []string{
	"signalbox_replay_remaining_records", "signalbox_replay_eta_seconds", // catch-up progress and ETA
	"signalbox_watermark_seconds", "signalbox_watermark_lag_seconds", "signalbox_partition_holds_watermark",
	"signalbox_parked_records", "signalbox_parked_bytes", "signalbox_partition_paused",
	"signalbox_release_latency_beyond_delay_seconds_bucket", "signalbox_sink_flush_duration_seconds_bucket",
	"signalbox_checkpoint_duration_seconds_bucket",
	"signalbox_late_records_total", "signalbox_records_dead_lettered_total", "signalbox_records_future_total",
	"signalbox_sink_retries_total",
}

// grafanaVars stands in for Grafana's variables: the test Prometheus's job
// label, every instance, and fixed windows.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__range", "1h", "$job", "signalbox", "$instance", ".+")

// TestDashboardNamesExportedMetrics: every series a panel names is one the
// collector exports, and the dashboard covers the series operators need.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	known := exportedMetrics()
	if len(unknownMetrics("rate(signalbox_records_in_totl[1m])", known)) != 1 || len(known) < 40 {
		t.Fatalf("the metric name check is blind (%d names known)", len(known))
	}
	used := map[string]bool{}
	for _, q := range dashboardQueries(t) {
		if bad := unknownMetrics(q.expr, known); len(bad) > 0 {
			t.Errorf("panel %q: %v not exported by the code (metrics/collector.go)", q.panel, bad)
		}
		for _, n := range metricName.FindAllString(q.expr, -1) {
			used[n] = true
		}
	}
	for _, n := range dashboardMust {
		if !used[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
}

// TestDashboardQueriesAgainstPrometheus runs a job (history, live records
// and a late one) with its admin server, lets a real Prometheus scrape it,
// and evaluates every panel's query through the HTTP API: each must parse
// and return data.
func TestDashboardQueriesAgainstPrometheus(t *testing.T) {
	queries := dashboardQueries(t)
	if len(dashboardVariables(t)) != 2 {
		t.Fatal("want the job and instance variables")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := embedded.Start(embedded.WithTopic("events", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const history, live, base = 40, 10, 1_700_000_000_000
	produce := func(ts func(i int) int64, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, embedded.Record("events", int32(i%2), fmt.Sprintf("k%d", i%3), fmt.Sprintf(`{"ts":%d}`, ts(i))))
		}
		if err := c.Produce(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	produce(func(i int) int64 { return base + int64(i)*1000 }, history)

	dir := t.TempDir()
	job, err := config.Parse([]byte(fmt.Sprintf(`
brokers: [%s]
inputs:
  - {topic: events, time: field, time_field: ts}
delay: 100ms
late: dead-letter
sinks:
  - {type: jsonl, path: %s}
dead_letter: {type: jsonl, path: %s}
checkpoint_interval: 100ms
`, c.Addrs()[0], filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl"))))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := job.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.Start(admin.Options{Addr: "127.0.0.1:0", Setting: "test", Stats: p.Stats})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case err := <-done:
				t.Fatalf("the job stopped (%v) while waiting for %s", err, what)
			case <-ctx.Done():
				t.Fatalf("hang guard: waiting for %s", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitFor("the history", func() bool { return p.Stats().Out == history })
	produce(func(int) int64 { return time.Now().UnixMilli() }, live)
	waitFor("the live records", func() bool { return p.Stats().Out == history+live })
	produce(func(int) int64 { return base }, 1) // behind the watermark: late, dead-lettered
	waitFor("the late record", func() bool { return p.Stats().Dead == 1 })

	prom := promtest.StartPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))
	for _, q := range queries {
		expr := grafanaVars.Replace(q.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("panel %q: a variable the test does not know in %s", q.panel, expr)
			continue
		}
		var res []promtest.Sample
		deadline := time.Now().Add(30 * time.Second)
		for {
			if res, err = prom.Query(expr); err != nil || len(res) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		switch {
		case err != nil:
			t.Errorf("panel %q: %v", q.panel, err)
		case len(res) == 0:
			t.Errorf("panel %q: no data from %s", q.panel, expr)
		}
	}
	for name, v := range dashboardVariables(t) {
		sel := grafanaVars.Replace(v[0])
		res, err := prom.Query(sel)
		if err != nil || !slices.ContainsFunc(res, func(s promtest.Sample) bool { return s.Labels[v[1]] != "" }) {
			t.Errorf("variable %s: no %s label on %s (%v)", name, v[1], sel, err)
		}
	}
	// The queries answered about this job, not something else.
	res, err := prom.Query(grafanaVars.Replace(`sum(signalbox_records_out_total{job=~"$job", instance=~"$instance"})`))
	if err != nil || len(res) != 1 || res[0].Value != history+live {
		t.Errorf("records out through Prometheus: %v %v", res, err)
	}
	if slices.ContainsFunc(queries, func(q query) bool { return strings.Contains(q.expr, "signalbox:") }) {
		t.Errorf("a panel uses a recording rule: the dashboard must work without docs/prometheus-rules.yml")
	}
}
