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
// allocates fast (fetch buffers, decoded records, output batches) over a
// small live heap, because alignment keeps the parked set small, so at 100
// the collector runs many times a second. Measured with the scaling
// benchmark at 4M records (`go run ./bench/cmd/scaling -sizes 4M -rounds 2
// -profile-size "" -out "" -gogc N`), CPU per million records
// (timestamp / field) at 100, 200 and 400: 0.78 / 0.80, 0.74 / 0.75 and
// 0.71 / 0.71 s, for a peak RSS of 176–191, 242–254 and 353–362 MiB (with
// the raw fetch transport, on a machine running other tests; before it:
// 0.92 / 0.97, 0.82 / 0.87, 0.78 / 0.85 s); 200 takes most of the gain for
// the least memory.
const GCPercent = 200

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
