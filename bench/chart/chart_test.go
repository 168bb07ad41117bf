package chart

import (
	"bytes"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/bench/harness"
	"github.com/signalbox/signalbox/internal/demo"
)

func TestReportIsWellFormedAndLabelled(t *testing.T) {
	r := harness.Report{Seed: 1, Cores: 2, Ceiling: harness.Throughput{PerSecond: 1000}, CeilingConsumer: harness.Raw, Command: "go run ./bench/cmd/benchall", CPU: "AMD EPYC", Commit: "abc123",
		Results: []harness.Result{
			{Result: demo.Result{Strategy: harness.Gate, OutOfOrderPct: 0, LiveLatency: harness.Latency{MeanMs: 0.5, P99Ms: 3}}, Throughput: harness.Throughput{PerSecond: 800}},
			{Result: demo.Result{Strategy: "a<b", OutOfOrderPct: 5.5, LiveLatency: harness.Latency{MeanMs: 20, P99Ms: 90}}, Throughput: harness.Throughput{PerSecond: 700}},
		}}
	svg := Report(r)
	wellFormed(t, svg)
	for _, want := range []string{"5.50%", "90.0 ms", "800/s", harness.Raw + ": no ordering, the ceiling", "a&lt;b", "go run ./bench/cmd/benchall", "2 cores, AMD EPYC", "commit abc123"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if !bytes.Equal(svg, Report(r)) {
		t.Error("the same report drew two different charts")
	}
	r.Results[1].Throughput.PerSecond = 1200 // a strategy outruns the raw consumer
	if s := string(Report(r)); strings.Contains(s, "the ceiling") || !strings.Contains(s, "NOT a ceiling") {
		t.Errorf("a raw consumer slower than a strategy is still called the ceiling:\n%s", s)
	}
}

// TestTitleLinesWrapNotes: a long note wraps at spaces into lines that fit,
// each word kept once and in order; the heading is never wrapped.
func TestTitleLinesWrapNotes(t *testing.T) {
	note := strings.Repeat("word ", 60)
	got := titleLines("heading " + note + "\n" + note + "\nshort")
	if got[0] != "heading "+note {
		t.Errorf("heading changed: %q", got[0])
	}
	var words []string
	for _, l := range got[1:] {
		if len(l) > noteChars {
			t.Errorf("note line of %d characters: %q", len(l), l)
		}
		words = append(words, strings.Fields(l)...)
	}
	if want := append(strings.Fields(note), "short"); strings.Join(words, " ") != strings.Join(want, " ") {
		t.Errorf("wrapped notes read %q, want %q", strings.Join(words, " "), strings.Join(want, " "))
	}
}
