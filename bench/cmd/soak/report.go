package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/signalbox/signalbox/bench/chart"
	"github.com/signalbox/signalbox/bench/report"
)

// drain waits until PostgreSQL and the bulk server hold want distinct
// records each, or for at most d, and says whether they do.
func drain(ctx context.Context, d time.Duration, pg *pgx.Conn, table string, bulk *bulkServer, want int64, ev *eventLog) bool {
	began := time.Now()
	deadline := began.Add(d)
	var rows, docs int64
	for {
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&rows); err != nil {
			ev.add("error", fmt.Sprintf("drain: counting rows: %v", err))
		}
		_, docs = bulk.received()
		if rows >= want && docs >= want {
			ev.add("drained", fmt.Sprintf("both sinks hold all %d records, %v after the producer stopped", want, time.Since(began).Round(time.Second)))
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			ev.add("drain-timeout", fmt.Sprintf("after %v: PostgreSQL %d rows, bulk %d distinct documents, of %d records", d, rows, docs, want))
			return false
		}
		sleep(ctx, 2*time.Second)
	}
}

// checkPostgres reads the data table in insertion order (seq) into a
// checker.
func checkPostgres(ctx context.Context, pg *pgx.Conn, table string) (*checker, error) {
	c := newChecker()
	rows, err := pg.Query(ctx, `SELECT topic, partition, "offset", key, event_time_ms, late FROM `+pgx.Identifier{table}.Sanitize()+` ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var d delivery
		var key *string
		var ms *int64
		if err := rows.Scan(&d.Topic, &d.Partition, &d.Offset, &key, &ms, &d.Late); err != nil {
			return nil, fmt.Errorf("reading %s: %w", table, err)
		}
		if key != nil {
			d.Key = *key
		}
		if ms != nil {
			d.EventMs = *ms
		}
		c.add(d)
	}
	return c, rows.Err()
}

// dropTables removes the sink's tables.
func dropTables(pg *pgx.Conn, table string) {
	for _, t := range []string{table, table + "_checkpoint", table + "_watermark"} {
		pg.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{t}.Sanitize()) //nolint:errcheck // best effort
	}
}

// flatness compares one metric of one member over two windows of the run:
// the second sixth (reference) and the last sixth.
type flatness struct {
	Metric   string  `json:"metric"`
	Checked  bool    `json:"checked"` // part of the verdict (the Go heap is only reported)
	Ref      float64 `json:"ref_mean"`
	Last     float64 `json:"last_mean"`
	RefPeak  float64 `json:"ref_peak"`
	LastPeak float64 `json:"last_peak"`
	Change   float64 `json:"change"` // Last/Ref − 1
	Flat     bool    `json:"flat"`
	From     [2]float64
	To       [2]float64
}

// verdict is "flat", "NOT FLAT", or "reported only" for an unjudged metric.
func (f flatness) verdict() string {
	switch {
	case !f.Checked:
		return "reported only"
	case !f.Flat:
		return "NOT FLAT"
	}
	return "flat"
}

func (f flatness) String() string {
	return fmt.Sprintf("mean %.4g over minutes %.1f–%.1f, %.4g over minutes %.1f–%.1f (%+.1f%%); peaks %.4g, %.4g",
		f.Ref, f.From[0], f.From[1], f.Last, f.To[0], f.To[1], 100*f.Change, f.RefPeak, f.LastPeak)
}

var metrics = []struct {
	name    string
	checked bool
	get     func(sample) float64
}{
	{"rss", true, func(s sample) float64 { return float64(s.RSS) }},
	{"goroutines", true, func(s sample) float64 { return s.Goroutines }},
	{"open_files", true, func(s sample) float64 { return float64(s.FDs) }},
	{"heap_inuse", false, func(s sample) float64 { return s.HeapInuse }},
}

// flatnessOf checks member's metrics: the mean over the last sixth of a
// run of dur minutes within tol of the mean over its second sixth (for one
// hour: minutes 50–60 against 10–20). A metric with no sample in a window
// is not flat.
func flatnessOf(ss []sample, member string, dur, tol float64) []flatness {
	var out []flatness
	for _, m := range metrics {
		f := flatness{Metric: m.name, Checked: m.checked, From: [2]float64{dur / 6, dur / 3}, To: [2]float64{dur - dur/6, dur}}
		var n1, n2 int
		for _, s := range ss {
			if s.Member != member {
				continue
			}
			v := m.get(s)
			switch {
			case s.T >= f.From[0] && s.T <= f.From[1]:
				f.Ref += v
				f.RefPeak = max(f.RefPeak, v)
				n1++
			case s.T >= f.To[0] && s.T <= f.To[1]:
				f.Last += v
				f.LastPeak = max(f.LastPeak, v)
				n2++
			}
		}
		if n1 > 0 && n2 > 0 && f.Ref > 0 {
			f.Ref /= float64(n1)
			f.Last /= float64(n2)
			f.Change = f.Last/f.Ref - 1
			f.Flat = f.Change <= tol && f.Change >= -tol
		}
		if !m.checked {
			f.Flat = true
		}
		out = append(out, f)
	}
	return out
}

var markColors = map[string]string{
	"drop": "#9467bd", "pg-lock": "#1f77b4", "bulk-outage": "#ff7f0e",
	"signal": "#7f7f7f", "unexpected-exit": "#d62728", "stall": "#d62728", "hang": "#d62728",
}

// chartOf draws each member's RSS, Go heap, goroutines and open files over
// the run, with the faults marked.
func chartOf(r results) []byte {
	var marks []chart.Mark
	for _, e := range r.Events {
		if col, ok := markColors[e.Kind]; ok {
			marks = append(marks, chart.Mark{X: e.T, Label: e.Kind + ": " + e.Detail, Color: col})
		}
	}
	xMax := r.Config.Duration.Minutes()
	for _, s := range r.Samples {
		xMax = max(xMax, s.T)
	}
	gap := 3 * r.Config.Sample.Minutes()
	panel := func(title, format string, scale float64, get func(sample) float64) chart.LinePanel {
		p := chart.LinePanel{Title: title, Format: format}
		for _, m := range []struct{ name, color string }{{"a", "#1f77b4"}, {"b", "#ff7f0e"}} {
			l := chart.Line{Name: "member " + m.name, Color: m.color}
			var seg []chart.Point
			last := sample{Run: -1}
			for _, s := range r.Samples {
				if s.Member != m.name {
					continue
				}
				if len(seg) > 0 && (s.Run != last.Run || s.T-last.T > gap) {
					l.Segments = append(l.Segments, seg)
					seg = nil
				}
				seg = append(seg, chart.Point{X: s.T, Y: get(s) / scale})
				last = s
			}
			if len(seg) > 0 {
				l.Segments = append(l.Segments, seg)
			}
			p.Lines = append(p.Lines, l)
		}
		return p
	}
	pv := report.Provenance{Command: r.Command, Cores: r.Cores, CPU: r.CPU, Go: r.GoVersion, Date: r.Started.UTC().Format("2006-01-02 15:04 MST"), Commit: r.Commit}
	title := fmt.Sprintf("signalbox soak: %v at %d records/s\n"+
		"dashed: purple broker connections cut, blue PostgreSQL table locked, orange _bulk outage, grey signal to a member, red stall or exit\n", r.Config.Duration, r.Config.Rate) +
		strings.Join(pv.Caption(), "\n")
	return chart.TimeSeries(title, xMax, marks,
		panel("RSS", "%.0f MiB", 1<<20, func(s sample) float64 { return float64(s.RSS) }),
		panel("Go heap in use", "%.0f MiB", 1<<20, func(s sample) float64 { return s.HeapInuse }),
		panel("Goroutines", "%.0f", 1, func(s sample) float64 { return s.Goroutines }),
		panel("Open files", "%.0f", 1, func(s sample) float64 { return float64(s.FDs) }),
	)
}

// summary is the text printed at the end.
func summary(r results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nsoak: %v at %d records/s; %d event records in Kafka; %d unexpected exits; %d dead letters; _bulk: %d requests, %d refused by outages\n",
		r.Config.Duration, r.Config.Rate, r.Produced, r.UnexpectedExits, r.DeadLetters, r.BulkRequests, r.BulkRefused)
	counts := map[string]int{}
	for _, e := range r.Events {
		counts[e.Kind]++
	}
	fmt.Fprintf(&b, "faults: %d connection drops, %d PostgreSQL locks, %d bulk outages, %d member starts, %d signals\n",
		counts["drop"], counts["pg-lock"], counts["bulk-outage"], counts["start"], counts["signal"])
	b.WriteString("sink       expected   received   distinct   missing  duplicates  late  out-of-order\n")
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-9s %9d  %9d  %9d  %8d  %10d  %4d  %12d\n", c.Sink, c.Expected, c.Received, c.Distinct, c.Missing, c.Duplicates, c.Late, c.OutOfOrder)
		for _, x := range c.Examples {
			fmt.Fprintf(&b, "  %s\n", x)
		}
	}
	for _, f := range r.Flat {
		fmt.Fprintf(&b, "member a %-10s %-13s %s\n", f.Metric, f.verdict(), f)
	}
	if len(r.Failures) == 0 {
		b.WriteString("PASS\n")
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "FAIL: %s\n", f)
	}
	return b.String()
}
