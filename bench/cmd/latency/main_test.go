package main

import (
	"strings"
	"testing"
)

// TestTinyRun measures one rate with the JSONL sink and checks the
// section's row (the splice into bench.md is bench/report's, tested there).
// It asserts no timing.
func TestTinyRun(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"-rates", "200", "-sinks", "jsonl", "-live", "1s", "-out", ""}, &out); err != nil {
		t.Fatal(err)
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
