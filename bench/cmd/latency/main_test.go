package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	res, err := readResults(js)
	if err != nil || len(res.Rows) != 1 || res.Rows[0].Live != 200 || res.Rows[0].Sink != "jsonl" {
		t.Fatalf("results file: %+v, %v; want one row of 200 live records to the jsonl sink", res.Rows, err)
	}
	if svg, err := os.ReadFile(svgPath(js)); err != nil || !bytes.Equal(svg, chartOf(res)) {
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
	res, err := readResults("../../../docs/latency.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../../docs/latency.svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, chartOf(res)) {
		t.Fatal("docs/latency.svg differs from the chart of docs/latency.json; redraw it with go run ./bench/cmd/latency -replot docs/latency.json")
	}
	if len(res.Rows) == 0 || res.Provenance.Command == "" {
		t.Fatalf("docs/latency.json has %d rows and command %q", len(res.Rows), res.Provenance.Command)
	}
}
