package durable_test

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
	"github.com/signalbox/signalbox/timers/durable"
)

func ExampleStore() {
	fs := vfs.NewMem() // a real job passes a directory and leaves FS unset
	// pebble's two memtables, cache and WAL queue and the write buffers
	// take 5 MiB of the budget; half the rest, 700 bytes, is left for
	// records in memory (the other half is the garbage collector's), the
	// rest spills.
	opts := durable.StoreOptions{FS: fs, MemoryBudget: 5<<20 + 1400, MemTableSize: 1 << 20, CacheSize: 1 << 20}
	s, err := durable.OpenStore("state", opts)
	if err != nil {
		panic(err)
	}
	for i, t := range []int64{30, 10, 20} {
		p := timers.Pos{EventTime: t, Key: "sku-1", Input: "stock", Offset: int64(i)}
		if err := s.Park(p, &record.Record{Topic: "stock", Offset: p.Offset, EventTime: t, Value: make([]byte, 100)}); err != nil {
			panic(err)
		}
	}
	fmt.Println("parked", s.Len(), "spilled", s.SpilledLen())
	// Make the parked set durable with the gate state, then "crash".
	if err := s.Checkpoint(record.Checkpoint{Watermark: 5}, nil); err != nil {
		panic(err)
	}
	_ = s.Close()

	s, err = durable.OpenStore("state", opts)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	cp, _, _ := s.Restore()
	fmt.Println("restored watermark", cp.Watermark, "parked", s.Len())
	_ = s.Release(20, 0, func(r *record.Record) error {
		fmt.Println("release", r.EventTime, "offset", r.Offset)
		return nil
	})
	// Output:
	// parked 3 spilled 1
	// restored watermark 5 parked 3
	// release 10 offset 1
	// release 20 offset 2
}
