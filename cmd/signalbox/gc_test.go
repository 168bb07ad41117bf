package main

import (
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

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
	core, logs := observer.New(zap.InfoLevel)
	stop := tuneRuntime(plan, nil, zap.New(core))
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("GC percent %d, want %d", got, GCPercent)
	}
	want := 2*int64(signalbox.DefaultParkedLimit) + 4*int64(plan.Kafka.FetchMaxBytes) + 64<<20
	if got := debug.SetMemoryLimit(-1); got != want || plan.Kafka.FetchMaxBytes == 0 {
		t.Errorf("memory limit %d (fetch_max_bytes %d), want %d", got, plan.Kafka.FetchMaxBytes, want)
	}
	stop() // the pacing (internal/gcpace) puts the static limit back
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("after the pacing stopped: memory limit %d, want %d", got, want)
	}

	// Without a state.dir, state.memory bounds the memory limit only: the
	// fetch sizes keep the source's defaults (docs/config.md, state.memory).
	var defaults config.Plan
	defaults.Kafka.EnsureDefaults()
	plan = &config.Plan{StateMemory: 16 << 20}
	tuneRuntime(plan, nil, zap.New(core))()
	if plan.Kafka.FetchMaxBytes != defaults.Kafka.FetchMaxBytes || plan.Kafka.PartitionMaxBytes != defaults.Kafka.PartitionMaxBytes {
		t.Errorf("no state.dir, state.memory 16MiB: fetch %d / partition %d bytes, want the defaults %d / %d",
			plan.Kafka.FetchMaxBytes, plan.Kafka.PartitionMaxBytes, defaults.Kafka.FetchMaxBytes, defaults.Kafka.PartitionMaxBytes)
	}
	if got, want := debug.SetGCPercent(100), GCPercent; got != want {
		t.Errorf("no state.dir, state.memory 16MiB: GC percent %d, want %d whatever the budget", got, want)
	}
	if got, want := debug.SetMemoryLimit(-1), 2*plan.StateMemory+4*int64(plan.Kafka.FetchMaxBytes)+64<<20; got != want {
		t.Errorf("no state.dir, state.memory 16MiB: memory limit %d, want %d", got, want)
	}

	opts := durable.StoreOptions{MemoryBudget: 16 << 20}
	opts.EnsureDefaults()
	plan = &config.Plan{StateDir: t.TempDir(), StateMemory: opts.MemoryBudget}
	defer tuneRuntime(plan, &opts, zap.New(core))()
	if got, want := debug.SetGCPercent(100), config.GCPercent(opts); got != want || want == GCPercent {
		t.Errorf("state.dir: GC percent %d, want the budget's %d (not the in-memory %d)", got, want, GCPercent)
	}
	if got, want := debug.SetMemoryLimit(-1), opts.MemoryBudget+4*int64(plan.Kafka.FetchMaxBytes)+64<<20; got != want || plan.Kafka.FetchMaxBytes > 1<<20 {
		t.Errorf("state.dir: memory limit %d, want %d; fetch_max_bytes %d, want at most a sixteenth of the budget", got, want, plan.Kafka.FetchMaxBytes)
	}

	debug.SetMemoryLimit(1 << 40)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	defer tuneRuntime(&config.Plan{}, nil, zap.New(core))()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: GC percent %d, want it left at 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("GOMEMLIMIT set: memory limit %d, want it left alone", got)
	}

	// The pacing runs with either store, only when the environment leaves
	// the collector to signalbox.
	var paced []bool
	for _, e := range logs.FilterMessage("go runtime bounded").All() {
		paced = append(paced, e.ContextMap()["limit_follows_live_heap"] == true)
	}
	if want := []bool{true, true, true, false}; !slices.Equal(paced, want) {
		t.Errorf("limit_follows_live_heap logged %v (in-memory, in-memory 16MiB, state.dir, environment), want %v", paced, want)
	}

	md, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if doc := "`GOGC=" + strconv.Itoa(GCPercent) + "`"; !strings.Contains(string(md), doc) {
		t.Errorf("docs/operations.md does not state %s", doc)
	}
	cfg, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	if doc := "without `state.dir` the percentage is " + strconv.Itoa(GCPercent) + " and the fetch sizes keep the Kafka source's defaults (" +
		strconv.Itoa(int(defaults.Kafka.FetchMaxBytes>>20)) + " MiB a fetch, " + strconv.Itoa(int(defaults.Kafka.PartitionMaxBytes>>20)) + " MiB a partition)"; !strings.Contains(string(cfg), doc) {
		t.Errorf("docs/config.md does not state %q", doc)
	}
}
