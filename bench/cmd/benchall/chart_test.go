package main

import (
	"testing"

	"github.com/signalbox/signalbox/bench/chart"
	"github.com/signalbox/signalbox/bench/report"
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
