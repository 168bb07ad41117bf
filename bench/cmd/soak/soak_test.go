package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/internal/pgtest"
)

// TestShortSoak runs the command for 20 s with every fault once or more
// (two connection drops, a table lock, a 429 outage, member b joining,
// SIGKILLed, restarted and leaving) and checks the guarantees the soak
// verifies: complete, exactly once in PostgreSQL, in order, nothing late,
// and that members write heap profiles (-heapprofile). Unexpected member
// exits are the soak's findings: logged, not asserted.
func TestShortSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s soak with child processes")
	}
	t.Setenv("SIGNALBOX_PG_DSN", pgtest.DSN(t))
	out := t.TempDir()
	var stdout strings.Builder
	code, err := run([]string{"-duration", "20s", "-rate", "300", "-history", "200", "-sample", "1s",
		"-drop-every", "8s", "-pg-lock-every", "15s", "-pg-lock-for", "3s", "-bulk-every", "15s", "-bulk-for", "3s",
		"-member-period", "16s", "-drain", "40s", "-heapprofile", "5s", "-out", out}, &stdout)
	t.Log(stdout.String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "soak.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Checks) != 2 || r.Produced < 16*200 {
		t.Fatalf("checks %+v for %d records", r.Checks, r.Produced)
	}
	var fails []string
	for i, c := range r.Checks {
		fails = append(fails, c.failures(i == 0)...)
	}
	if len(fails) > 0 {
		t.Errorf("exit %d: %v", code, fails)
	}
	kinds := map[string]int{}
	for _, e := range r.Events {
		kinds[e.Kind]++
	}
	for _, k := range []string{"drop", "pg-lock", "bulk-outage", "signal"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event: %v", k, kinds)
		}
	}
	if len(r.Samples) == 0 {
		t.Error("no samples")
	}
	if _, err := os.Stat(filepath.Join(out, "soak.svg")); err != nil {
		t.Error(err)
	}
	// -heapprofile: member a's first run wrote one at start, one every 5 s
	// of a run of 20 s or more, and one when it stopped.
	if heaps, _ := filepath.Glob(filepath.Join(out, "heap-a-00-*.pb.gz")); len(heaps) < 4 {
		t.Errorf("member a's heap profiles: %q, want 4 or more", heaps)
	}
}

// TestDocsChartIsDrawnFromItsResults: docs/soak.svg is exactly the chart
// of docs/soak.json, so it can neither drift from its data nor be edited by
// hand. Redraw it with go run ./bench/cmd/soak -replot docs/soak.json -doc docs/bench.md
func TestDocsChartIsDrawnFromItsResults(t *testing.T) {
	if err := report.CheckChart("../../../docs/soak.json", chartOf); err != nil {
		t.Fatal(err)
	}
}
