package config

import (
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
// live heap between collections). BoundMemory caps a fetch at a quarter of
// the budget (at least 1 MiB) and a partition's share at the fetch's, and proposes
// a limit of the budget plus four fetches and 64 MiB of slack.
// opts must have its defaults applied.
func BoundMemory(k *kafka.Config, opts durable.StoreOptions) int64 {
	k.EnsureDefaults()
	k.FetchMaxBytes = int32(min(int64(k.FetchMaxBytes), max(opts.MemoryBudget/4, 1<<20)))
	k.PartitionMaxBytes = min(k.PartitionMaxBytes, k.FetchMaxBytes)
	return opts.MemoryBudget + 4*int64(k.FetchMaxBytes) + 64<<20
}
