package main

import (
	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/timers/durable"
)

// GCPercent is the garbage collector's target (GOGC) that signalbox run sets
// unless the environment sets GOGC; Go's own default is 100. A replay
// allocates fast over a small live heap, so a higher target saves
// collections, at the cost of peak RSS: 150 costs about the CPU of 200 for
// less peak RSS in a long replay (figures: docs/bench.md, "Notes on the
// scaling figures", GOGC 200 → 150).
const GCPercent = 150

// tuneRuntime bounds the Go runtime for the job, unless GOGC and GOMEMLIMIT
// are set (config.SetRuntime). With a state.dir (opts not nil) the store's
// budget decides: config.BoundMemory caps the Kafka fetches and proposes the
// memory limit, config.GCPercent the collector's percentage. With the
// in-memory store it is GCPercent and a soft limit of twice the parked bound
// plus four fetches and 64 MiB, so that the collector works harder before
// memory grows past what the job's own bounds imply. Either way, when the
// environment sets neither, config.SetRuntime paces the limit by the median
// live heap (internal/gcpace), so that the peak RSS of a long replay does
// not creep above a short one's with every collection that marked more than
// usual. The returned function stops the pacing.
func tuneRuntime(plan *config.Plan, opts *durable.StoreOptions, log *zap.Logger) (stop func()) {
	var limit int64
	gc := GCPercent
	if opts != nil {
		limit, gc = config.BoundMemory(&plan.Kafka, *opts), config.GCPercent(*opts)
	} else {
		parked := plan.StateMemory
		if parked == 0 {
			parked = signalbox.DefaultParkedLimit
		}
		plan.Kafka.EnsureDefaults()
		limit = config.MemoryLimit(2*parked, plan.Kafka.FetchMaxBytes)
	}
	paced, stop := config.SetRuntime(limit, gc)
	log.Info("go runtime bounded", zap.Bool("state_dir", opts != nil), zap.Int32("fetch_max_bytes", plan.Kafka.FetchMaxBytes),
		zap.Int64("go_memory_limit", limit), zap.Int("go_gc_percent", gc),
		zap.Bool("overridden", !paced), zap.Bool("limit_follows_live_heap", paced))
	return stop
}
