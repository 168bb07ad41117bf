package config

import (
	"os"
	"runtime/debug"

	"github.com/signalbox/signalbox/internal/gcpace"

	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/timers/durable"
)

// BoundMemory fits a Kafka source to a parked-state budget and returns the
// soft memory limit the Go runtime should get (runtime/debug.SetMemoryLimit).
//
// The budget covers everything the store holds, pebble's memtables and cache
// included, and parked records beyond it live only in pebble; two things
// come on top of it, measured with `go run ./bench/cmd/memtest`: fetch
// buffers (the source's defaults allow 64 MiB per fetch, several in flight)
// and the garbage collector's headroom (the heap grows to about twice the
// live heap between collections). BoundMemory caps a fetch at a sixteenth
// of the budget (at least 1 MiB) and a partition's share at the fetch's, so
// that the answers on their way to the engine (answersAhead) keep at most
// 3/8 of the budget reachable, and proposes a limit of the budget plus four
// fetches and 64 MiB of slack. opts must have its defaults applied.
func BoundMemory(k *kafka.Config, opts durable.StoreOptions) int64 {
	k.EnsureDefaults()
	k.FetchMaxBytes = int32(min(int64(k.FetchMaxBytes), max(opts.MemoryBudget*3/8/answersAhead, 1<<20)))
	k.PartitionMaxBytes = min(k.PartitionMaxBytes, k.FetchMaxBytes)
	return MemoryLimit(opts.MemoryBudget, k.FetchMaxBytes)
}

// answersAhead is how many fetch answers can be on their way to the engine
// at once, each keeping its whole response reachable (its records alias it
// until handled): the one the Kafka fetcher is sending, the source's queued
// one, the engine's poller's two (pollSource and poll), its queued one and
// the one it handles.
const answersAhead = 6

// MemoryLimit is the soft memory limit for a job that holds held bytes of
// its own and fetches up to fetchMaxBytes at a time: held plus four fetches
// (several are in flight) and 64 MiB of slack for the runtime.
func MemoryLimit(held int64, fetchMaxBytes int32) int64 {
	return held + 4*int64(fetchMaxBytes) + 64<<20
}

// InflightBytes proposes the engine's bound on released records not yet
// written by the sinks (signalbox.WithMaxInflightBytes) for a parked-state
// budget: a quarter of it, at least 1 MiB. Without it the engine's default
// batches (16 in flight of 4,096 records) hold tens of MiB of large records
// that no budget counts; measured with `go run ./bench/cmd/memtest`
// (docs/bench.md, "Memory, whole job"). opts must have its defaults applied.
func InflightBytes(opts durable.StoreOptions) int64 {
	return max(opts.MemoryBudget/4, 1<<20)
}

// otherLiveHeap is the Go heap a store keeps live besides its in-memory
// part: pebble's WAL blocks and flush and compaction buffers, the store's
// write buffers and release chunks. Measured with `go run
// ./bench/cmd/memtest -store-only delay -heapprofile` (docs/bench.md).
const otherLiveHeap = 6 << 20

// GCPercent proposes the garbage collector's target percentage
// (runtime/debug.SetGCPercent) for a parked-state budget. Between
// collections the Go heap grows by that percentage of its live heap, and the
// budget leaves that growth as much as the in-memory part
// (opts.InMemoryBudget, Store invariant 3); the live heap is the in-memory
// part plus about 6 MiB of pebble's and the store's buffers. So a small
// budget gets less than Go's default of 100 (31 for 16 MiB, 93 for
// 256 MiB), never below 25. opts must have its defaults applied.
func GCPercent(opts durable.StoreOptions) int {
	h := opts.InMemoryBudget()
	return int(min(max(100*h/(h+otherLiveHeap), 25), 100))
}

// SetRuntime gives the Go runtime the soft memory limit and garbage
// collector percentage a job proposes (BoundMemory and GCPercent with a
// state budget), unless the environment sets GOMEMLIMIT or GOGC, which win.
// When the environment sets neither, it also paces the limit
// (internal/gcpace): from the ninth collection on, the limit follows the
// median live heap of the recent collections, never above limit, so that a
// collection that marked more than usual does not lift the heap's peak for
// good. paced reports that; stop ends the pacing and puts limit back (a
// no-op when not paced).
func SetRuntime(limit int64, gcPercent int) (paced bool, stop func()) {
	memEnv, gcEnv := os.Getenv("GOMEMLIMIT") != "", os.Getenv("GOGC") != ""
	if !memEnv {
		debug.SetMemoryLimit(limit)
	}
	if !gcEnv {
		debug.SetGCPercent(gcPercent)
	}
	if memEnv || gcEnv {
		return false, func() {}
	}
	return true, gcpace.Start(gcpace.New(gcpace.Config{GCPercent: gcPercent, Ceiling: limit}))
}
