package main

import (
	"os"

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
// -profile-size "" -out "" -gogc N`, and -vs for the second), CPU per
// million records at 12M (timestamp / field) and peak RSS at 12M / 1M:
//
//	200 against 100: 0.57 / 0.62 s, 292 / 221 MiB (1.32×), against
//	  0.61 / 0.64 s, 213 / 172 MiB
//	150 against 100: 0.59 / 0.64 s, 245 / 204 MiB (1.20×), against
//	  0.63 / 0.64 s, 232 / 184 MiB
//
// 150 keeps most of 200's saving for about 30–50 MiB less peak RSS in a long
// replay. (Neither keeps the 12M replay's peak RSS reliably within 1.3× of
// the 1M one's: 1.30–1.62 at 200, 1.11–1.58 at 150 over three runs each;
// see docs/bench.md.) Before the record arrays, response buffers and queue
// buckets were reused, the same replay allocated about three times as much
// and 200 was the better trade.
const GCPercent = 150

// tuneRuntime bounds the Go runtime for the job, unless GOGC and GOMEMLIMIT
// are set (config.SetRuntime). With a state.dir (opts not nil) the store's
// budget decides: config.BoundMemory caps the Kafka fetches and proposes the
// memory limit, config.GCPercent the collector's percentage. With the
// in-memory store it is GCPercent and a soft limit of twice the parked bound
// plus four fetches and 64 MiB, so that the collector works harder before
// memory grows past what the job's own bounds imply.
func tuneRuntime(plan *config.Plan, opts *durable.StoreOptions, log *zap.Logger) {
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
		limit = 2*parked + 4*int64(plan.Kafka.FetchMaxBytes) + 64<<20
	}
	config.SetRuntime(limit, gc)
	log.Info("go runtime bounded", zap.Bool("state_dir", opts != nil), zap.Int32("fetch_max_bytes", plan.Kafka.FetchMaxBytes),
		zap.Int64("go_memory_limit", limit), zap.Int("go_gc_percent", gc),
		zap.Bool("overridden", os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""))
}
