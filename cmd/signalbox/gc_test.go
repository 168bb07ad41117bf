package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
)

// TestTuneGC checks the collector settings signalbox run applies, that the
// environment wins, and that docs/operations.md states the default.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	plan := &config.Plan{}
	tuneGC(plan, zap.NewNop())
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("GC percent %d, want %d", got, GCPercent)
	}
	want := 2*int64(signalbox.DefaultParkedLimit) + 4*int64(plan.Kafka.FetchMaxBytes) + 64<<20
	if got := debug.SetMemoryLimit(-1); got != want || plan.Kafka.FetchMaxBytes == 0 {
		t.Errorf("memory limit %d (fetch_max_bytes %d), want %d", got, plan.Kafka.FetchMaxBytes, want)
	}

	debug.SetMemoryLimit(1 << 40)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	tuneGC(&config.Plan{}, zap.NewNop())
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: GC percent %d, want it left at 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("GOMEMLIMIT set: memory limit %d, want it left alone", got)
	}

	md, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if doc := "`GOGC=" + strconv.Itoa(GCPercent) + "`"; !strings.Contains(string(md), doc) {
		t.Errorf("docs/operations.md does not state %s", doc)
	}
}
