package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTinyRun measures one rate with the JSONL sink into a bench.md with
// other content, and checks the section's row and the splice. It asserts no
// timing.
func TestTinyRun(t *testing.T) {
	md := filepath.Join(t.TempDir(), "bench.md")
	if err := os.WriteFile(md, []byte("# Benchmarks\n\nnotes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"-rates", "200", "-sinks", "jsonl", "-live", "1s", "-out", md}, &out); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(doc), "# Benchmarks\n\nnotes\n") || !strings.Contains(string(doc), beginMark+"\n"+out.String()) {
		t.Fatalf("bench.md not spliced:\n%s", doc)
	}
	if !strings.Contains(out.String(), "| 200 | "+sinkLabels["jsonl"]+" | 200 |") {
		t.Fatalf("no row for 200 records/s with 200 live records:\n%s", out.String())
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-rates", "0"}, {"-sinks", "nope"}, {"-live", "0s"}} {
		if err := run(append(args, "-out", ""), &strings.Builder{}); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
