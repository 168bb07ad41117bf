package main

import (
	"bytes"
	"os"
	"testing"
)

// TestDocsChartIsDrawnFromItsResults: docs/bench.svg is exactly what
// chart.Report draws from docs/bench.json, so the chart can neither drift
// from its data nor be edited by hand. After changing either, redraw it:
// go run ./bench/cmd/benchall -replot docs/bench.json
func TestDocsChartIsDrawnFromItsResults(t *testing.T) {
	want, err := chartOf("../../../docs/bench.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../../docs/bench.svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/bench.svg differs from the chart of docs/bench.json; redraw it with go run ./bench/cmd/benchall -replot docs/bench.json")
	}
}
