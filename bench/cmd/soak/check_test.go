package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inOrder is a clean output: two partitions of one topic, offsets 0..3,
// keys k0 (partition 0) and k1 (partition 1), event times increasing.
func inOrder() []delivery {
	var ds []delivery
	for off := int64(0); off < 4; off++ {
		for p := int32(0); p < 2; p++ {
			ds = append(ds, delivery{Topic: "t", Partition: p, Offset: off, Key: []string{"k0", "k1"}[p], EventMs: 100 + off})
		}
	}
	return ds
}

var ends = map[topicPart]int64{{"t", 0}: 4, {"t", 1}: 4}

func checkOf(ds []delivery) sinkCheck {
	c := newChecker()
	for _, d := range ds {
		c.add(d)
	}
	return c.result("s", ends)
}

func TestCheckerCleanOutput(t *testing.T) {
	r := checkOf(inOrder())
	if r.Expected != 8 || r.Distinct != 8 || r.Received != 8 {
		t.Fatalf("counts: %+v", r)
	}
	if f := r.failures(true); len(f) > 0 {
		t.Fatalf("a clean output fails: %v", f)
	}
}

func TestCheckerFindsEachProblem(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func([]delivery) []delivery
		exactly bool
		want    string
	}{
		{"missing", func(ds []delivery) []delivery { return ds[:len(ds)-1] }, false, "1 records missing"},
		{"duplicate", func(ds []delivery) []delivery { return append(ds, ds[2]) }, true, "1 records delivered more than once"},
		{"late", func(ds []delivery) []delivery { ds[3].Late = true; return ds }, false, "1 late records"},
		{"unknown", func(ds []delivery) []delivery {
			return append(ds, delivery{Topic: "t", Partition: 0, Offset: 9, Key: "k0", EventMs: 999})
		}, false, "1 deliveries of records not in Kafka"},
		{"reordered within a key", func(ds []delivery) []delivery {
			ds[0], ds[2] = ds[2], ds[0] // k0's offsets 1 then 0
			return ds
		}, false, "1 records out of order"},
		{"same event time, wrong tie-break", func(ds []delivery) []delivery {
			ds[0].EventMs, ds[2].EventMs = 100, 100
			ds[0], ds[2] = ds[2], ds[0]
			return ds
		}, false, "1 records out of order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkOf(tc.mutate(inOrder()))
			f := strings.Join(r.failures(tc.exactly), "; ")
			if !strings.Contains(f, tc.want) {
				t.Fatalf("failures %q lack %q (%+v)", f, tc.want, r)
			}
		})
	}
}

// TestCheckerRedeliveryAfterCrash: at-least-once re-delivers a suffix after
// a restart. It is counted, allowed for an at-least-once sink, and not an
// ordering problem (order is judged on first deliveries).
func TestCheckerRedeliveryAfterCrash(t *testing.T) {
	ds := inOrder()
	ds = append(ds[:6:6], append(ds[4:6:6], ds[6:]...)...)
	r := checkOf(ds)
	if r.Duplicates != 2 || r.OutOfOrder != 0 || r.Missing != 0 {
		t.Fatalf("want 2 duplicates only: %+v", r)
	}
	if f := r.failures(false); len(f) > 0 {
		t.Fatalf("at-least-once fails on re-delivery: %v", f)
	}
	if f := r.failures(true); len(f) != 1 {
		t.Fatalf("exactly-once does not fail on re-delivery: %v", f)
	}
}

func TestFlatness(t *testing.T) {
	series := func(grow float64) []sample {
		var ss []sample
		for m := 0.0; m <= 60; m += 0.5 {
			ss = append(ss, sample{T: m, Member: "a", RSS: int64(100e6 * (1 + grow*m/60)), FDs: 20, Goroutines: 80, HeapInuse: 30e6 * (1 + m)})
			ss = append(ss, sample{T: m, Member: "b", RSS: 1e9 * int64(m+1)}) // not member a: ignored
		}
		return ss
	}
	for _, f := range flatnessOf(series(0), "a", 60, 0.1) {
		if !f.Flat {
			t.Errorf("flat series: %s judged not flat: %s", f.Metric, f)
		}
		if f.Checked != (f.Metric != "heap_inuse") {
			t.Errorf("%s: checked %v", f.Metric, f.Checked)
		}
	}
	// +20% over the hour: minutes 50–60 are ~13% above minutes 10–20.
	for _, f := range flatnessOf(series(0.2), "a", 60, 0.1) {
		if (f.Metric == "rss") == f.Flat {
			t.Errorf("growing RSS: %s flat=%v: %s", f.Metric, f.Flat, f)
		}
	}
	if fs := flatnessOf(nil, "a", 60, 0.1); fs[0].Flat {
		t.Error("no samples judged flat")
	}
}

func TestReplot(t *testing.T) {
	dir := t.TempDir()
	r := results{Config: config{Duration: time.Hour, Sample: 10 * time.Second, Rate: 10},
		Samples: []sample{{T: 1, Member: "a", RSS: 50 << 20}, {T: 1.1, Member: "a", RSS: 60 << 20}, {T: 1.3, Member: "b", Run: 1, RSS: 40 << 20}},
		Events:  []event{{T: 0.3, Kind: "drop", Detail: "closed 2"}}}
	b, _ := json.Marshal(r)
	path := filepath.Join(dir, "soak.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(dir, "docs", "bench.md")
	if err := os.MkdirAll(filepath.Dir(doc), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, []byte("# Benchmarks\n\nkept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, err := run([]string{"-replot", path, "-out", dir, "-doc", doc}, io.Discard); code != 0 || err != nil {
		t.Fatalf("exit %d: %v", code, err)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kept\n", beginMark, "| 0–10 | 55 MiB (60 MiB) |", "1 broker connection drops", "**Verdict: pass.**", endMark} {
		if !strings.Contains(string(md), want) {
			t.Errorf("bench.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"soak.json", "soak.svg"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(doc), f)); err != nil {
			t.Error(err)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "soak.svg"))
	if err != nil {
		t.Fatal(err)
	}
	// One line per member per panel (4 panels), the drop marked in each.
	if n := strings.Count(string(svg), "<polyline"); n != 8 {
		t.Errorf("%d polylines, want 8", n)
	}
	if n := strings.Count(string(svg), "drop: closed 2"); n != 4 {
		t.Errorf("the drop is marked %d times, want 4", n)
	}
}
