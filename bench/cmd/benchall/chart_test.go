package main

import (
	"strings"
	"testing"

	"github.com/signalbox/signalbox/bench/chart"
	"github.com/signalbox/signalbox/bench/harness"
	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/internal/demo"
)

// TestDocsChartIsDrawnFromItsResults: docs/bench.svg is exactly what
// chart.Report draws from docs/bench.json, so the chart can neither drift
// from its data nor be edited by hand. After changing either, redraw it:
// go run ./bench/cmd/benchall -replot docs/bench.json
func TestDocsChartIsDrawnFromItsResults(t *testing.T) {
	if err := report.CheckChart("../../../docs/bench.json", chart.Report); err != nil {
		t.Fatal(err)
	}
}

// TestSectionCallsTheRawConsumerACeilingOnlyWhenNotOutrun: the raw
// consumer's row is the ceiling only while no strategy replays faster.
func TestSectionCallsTheRawConsumerACeilingOnlyWhenNotOutrun(t *testing.T) {
	r := harness.Report{Ceiling: harness.Throughput{PerSecond: 1000}, CeilingConsumer: harness.Raw,
		Results: []harness.Result{{Result: demo.Result{Strategy: harness.Gate}, Throughput: harness.Throughput{PerSecond: 900}}}}
	if s := section(r); !strings.Contains(s, "| `"+harness.Raw+"` (the ceiling;") || strings.Contains(s, "not a ceiling") {
		t.Errorf("raw consumer not outrun, its row is not the ceiling:\n%s", s)
	}
	r.Results[0].Throughput.PerSecond = 1100
	if s := section(r); strings.Contains(s, "(the ceiling;") || !strings.Contains(s, "so not a ceiling") {
		t.Errorf("raw consumer outrun, its row is still the ceiling:\n%s", s)
	}
}
