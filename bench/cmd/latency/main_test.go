package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/bench/report"
)

// TestTinyRun measures one rate with the JSONL sink and checks the
// section's row (the splice into bench.md is bench/report's, tested there).
// It asserts no timing.
func TestTinyRun(t *testing.T) {
	var out strings.Builder
	js := filepath.Join(t.TempDir(), "latency.json")
	if err := run([]string{"-rates", "200", "-sinks", "jsonl", "-live", "1s", "-out", "", "-json", js}, &out); err != nil {
		t.Fatal(err)
	}
	res, err := report.ReadResults[results](js)
	if err != nil || len(res.Rows) != 1 || res.Rows[0].Live != 200 || res.Rows[0].Sink != "jsonl" {
		t.Fatalf("results file: %+v, %v; want one row of 200 live records to the jsonl sink", res.Rows, err)
	}
	if svg, err := os.ReadFile(report.SVGPath(js)); err != nil || !bytes.Equal(svg, chartOf(res)) {
		t.Errorf("the chart beside the results is not drawn from them (%v)", err)
	}
	if !strings.Contains(out.String(), "| 1s | 200 | "+sinkLabels["jsonl"]+" | 200 |") {
		t.Fatalf("no row for 200 records/s with 200 live records:\n%s", out.String())
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-rates", "0"}, {"-sinks", "nope"}, {"-live", "0s"}, {"-checkpoints", "0s"}} {
		if err := run(append(args, "-out", ""), &strings.Builder{}); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestDocsChartIsDrawnFromItsResults: docs/latency.svg is exactly the
// chart of docs/latency.json, so it can neither drift from its data nor be
// edited by hand. Redraw it with go run ./bench/cmd/latency -replot docs/latency.json
func TestDocsChartIsDrawnFromItsResults(t *testing.T) {
	if err := report.CheckChart("../../../docs/latency.json", chartOf); err != nil {
		t.Fatal(err)
	}
}
