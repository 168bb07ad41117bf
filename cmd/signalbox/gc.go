package main

import (
	"os"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
)

// GCPercent is the garbage collector's target (GOGC) that signalbox run sets
// unless the environment sets GOGC; Go's own default is 100. A replay
// allocates fast (fetch buffers, decoded records, output batches) over a
// small live heap, because alignment keeps the parked set small, so at 100
// the collector runs many times a second. Measured with the scaling
// benchmark (docs/bench.md, "Scaling"), CPU per record at 100 / 200 / 400 /
// 800: about 1.08 / 0.98 / 0.97 / 0.96 of a second per million records, for
// a peak RSS of about 200 / 300 / 420 / 700 MiB; 200 takes most of the gain
// for the least memory.
const GCPercent = 200

// tuneGC sets GCPercent and, with the in-memory store and a parked limit, a
// soft memory limit (runtime/debug.SetMemoryLimit) of twice the limit plus
// four fetches and 64 MiB, so that the collector works harder before memory
// grows past what the job's own bounds imply. With a state.dir the store's
// budget sets both instead (boundMemory, which runs after it). GOGC and
// GOMEMLIMIT, when set, win.
func tuneGC(plan *config.Plan, log *zap.Logger) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	if plan.StateDir != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	parked := plan.StateMemory
	if parked == 0 {
		parked = signalbox.DefaultParkedLimit
	}
	plan.Kafka.EnsureDefaults()
	limit := 2*parked + 4*int64(plan.Kafka.FetchMaxBytes) + 64<<20
	debug.SetMemoryLimit(limit)
	log.Debug("go memory limit set for the parked bound", zap.Int64("go_memory_limit", limit))
}
