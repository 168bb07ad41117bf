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
	"github.com/signalbox/signalbox/timers/durable"
)

// TestTuneRuntime checks the collector settings signalbox run applies, with
// the in-memory store and with a state.dir, that the environment wins, and
// that docs/operations.md states the default.
func TestTuneRuntime(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	plan := &config.Plan{}
	tuneRuntime(plan, nil, zap.NewNop())
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("GC percent %d, want %d", got, GCPercent)
	}
	want := 2*int64(signalbox.DefaultParkedLimit) + 4*int64(plan.Kafka.FetchMaxBytes) + 64<<20
	if got := debug.SetMemoryLimit(-1); got != want || plan.Kafka.FetchMaxBytes == 0 {
		t.Errorf("memory limit %d (fetch_max_bytes %d), want %d", got, plan.Kafka.FetchMaxBytes, want)
	}

	opts := durable.StoreOptions{MemoryBudget: 16 << 20}
	opts.EnsureDefaults()
	plan = &config.Plan{StateDir: t.TempDir(), StateMemory: opts.MemoryBudget}
	tuneRuntime(plan, &opts, zap.NewNop())
	if got, want := debug.SetGCPercent(100), config.GCPercent(opts); got != want || want == GCPercent {
		t.Errorf("state.dir: GC percent %d, want the budget's %d (not the in-memory %d)", got, want, GCPercent)
	}
	if got, want := debug.SetMemoryLimit(-1), opts.MemoryBudget+4*int64(plan.Kafka.FetchMaxBytes)+64<<20; got != want || plan.Kafka.FetchMaxBytes > 4<<20 {
		t.Errorf("state.dir: memory limit %d, want %d; fetch_max_bytes %d, want at most a quarter of the budget", got, want, plan.Kafka.FetchMaxBytes)
	}

	debug.SetMemoryLimit(1 << 40)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	tuneRuntime(&config.Plan{}, nil, zap.NewNop())
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
