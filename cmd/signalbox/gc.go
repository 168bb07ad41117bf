package main

import (
	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/timers/durable"
)

// GCPercent is the garbage collector's target (GOGC) that signalbox run sets
// unless the environment sets GOGC; Go's own default is 100. A replay
// allocates fast (decompressed batches above all) over a small live heap,
// because alignment keeps the parked set small, so a higher target saves
// collections; it also lets the peak RSS of a long replay grow past a short
// one's. Measured with the scaling benchmark, two targets side by side in
// each run (`go run ./bench/cmd/scaling -sizes 1M,12M -rounds 3
// -profile-size "" -out "" -gogc A -vs-gogc B`), CPU per million records
// at 12M (timestamp / field) and peak RSS at 12M / 1M (timestamp / field):
//
//	200 against 150: 0.55 / 0.57 s, 332 / 191 and 294 / 209 MiB, against
//	  0.55 / 0.58 s, 264 / 186 and 242 / 203 MiB
//	150 against 100: 0.56 / 0.58 s, 282 / 196 and 236 / 199 MiB, against
//	  0.57 / 0.61 s, 217 / 178 and 213 / 200 MiB
//
// 150 costs about what 200 does in CPU for 40–70 MiB less peak RSS in a
// long replay; 100 saves another 20–65 MiB for 2–5% more CPU. Issue 9 asks
// for the 12M replay's peak RSS within 1.3× of the 1M one's: over the runs
// of the session that chose 150 it was 1.30–1.74 at 200, 1.11–1.58 at 150
// and 1.06–1.30 at 100, where the field mode's replay fell to 0.59–0.63×
// franz-go's against ≥ 0.6 asked (docs/bench.md). Before the record
// arrays, response buffers and queue buckets were reused, the same replay
// allocated about three times as much and 200 was the better trade.
//
// These figures predate the pacing in tuneRuntime (internal/gcpace) and the
// Kafka source's smaller answers (kafka.DefaultPartitionMaxRecords), and a
// GOGC set in the environment, as -gogc does, turns the pacing off. With
// both, a 12M replay peaked at 172–188 MiB RSS (768 records), and 12M / 1M
// was 0.87–1.23 (docs/bench.md), so 150 stays for its CPU.
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
