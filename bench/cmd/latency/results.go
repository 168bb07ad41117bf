package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/signalbox/signalbox/bench/chart"
	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/internal/demo"
)

// results is what -json writes and the chart is drawn from.
type results struct {
	Provenance report.Provenance `json:"provenance"`
	Rows       []row             `json:"rows"`
}

// row is one run: a checkpoint interval, a rate and a sink, and the live
// records' latencies beyond the delay.
type row struct {
	Checkpoint time.Duration `json:"checkpoint_interval"`
	Rate       int           `json:"records_per_s"`
	Sink       string        `json:"sink"` // a demo.Visible kind
	Live       int64         `json:"live_records"`
	Late       int64         `json:"late"`
	Release    demo.Latency  `json:"release"`
	Visible    demo.Latency  `json:"visible"`
}

func resultsOf(command string, ms []measurement, started time.Time) results {
	res := results{Provenance: report.Here(command, started)}
	for _, m := range ms {
		res.Rows = append(res.Rows, row{Checkpoint: m.Checkpoint, Rate: m.Rate, Sink: m.Sink, Live: m.Live, Late: m.Result.Late,
			Release: m.Result.LiveLatency, Visible: m.Result.VisibleLatency})
	}
	return res
}

// chartOf draws, for each sink, the release and visible latency's p50 and
// p99 at every checkpoint interval and rate.
func chartOf(res results) []byte {
	var panels []chart.Panel
	for _, k := range chart.Distinct(res.Rows, func(r row) string { return r.Sink }) {
		p := chart.Panel{Title: sinkLabels[k] + " (ms, log scale; by checkpoint interval · rate)", Log: true, LogMin: 1}
		s := []chart.Series{
			{Name: "release p50", Color: "#1f77b4", Format: "%.1f ms"},
			{Name: "release p99", Color: "#aec7e8", Format: "%.1f ms"},
			{Name: "visible p50", Color: "#d62728", Format: "%.1f ms"},
			{Name: "visible p99", Color: "#ff9896", Format: "%.1f ms"},
		}
		for _, r := range res.Rows {
			if r.Sink != k {
				continue
			}
			p.Labels = append(p.Labels, fmt.Sprintf("%v · %d/s", r.Checkpoint, r.Rate))
			for i, v := range []float64{r.Release.P50Ms, r.Release.P99Ms, r.Visible.P50Ms, r.Visible.P99Ms} {
				s[i].Values = append(s[i].Values, v)
			}
		}
		p.Series = s
		panels = append(panels, p)
	}
	title := "Live latency beyond the delay: released to the sink, and visible to its reader\n" +
		"offset gate, live records not released late; release = sink Write − (event time + delay), visible = reader sees it − (event time + delay)\n" +
		strings.Join(res.Provenance.Caption(), "\n")
	return chart.SVG(title, panels...)
}
