package durable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// BenchmarkStore measures park + release per record (ns/op is per record) on
// the real file system with the default pebble options, in a steady state:
// a window of benchWindow records stays parked, the watermark trails the
// newest event time by that window, and a Checkpoint (one Sync) follows
// every benchChunk records, so every record is written to pebble once and
// deleted by a DeleteRange. "mem" keeps payloads in memory (written at a
// checkpoint); "spilled" has a budget so small that every payload spills on
// Park and is read back on Release, so its memtable is the 1 MiB minimum
// (a tiny budget's floor);
// "spilled-mt64MiB" is the same with a 64 MiB memtable, most of whose
// records are deleted before a flush writes them to an sstable.
// "spilled-16MiB" uses a 16 MiB budget with its default pebble sizes and a
// window of 183,500 records, about 52 MiB in memory: 19× what the in-memory
// part holds (2.75 MiB; the window was 10× the 5.25 MiB it held with 2 MiB
// memtables, and is kept so that figures stay comparable). Run it with
// -benchtime of 1000000x or more, so that most records are released within
// the run: most records are parked only on disk, read back by range scans
// and deleted by the checkpoints' DeleteRanges. ns/record is ns/op: one op parks and releases
// one record, end to end through the store.
//
//	go test -run=^$ -bench=BenchmarkStore -benchtime=300000x -count=6 ./timers/durable/ | benchstat -
func BenchmarkStore(b *testing.B) {
	const benchChunk = 10000
	for _, bc := range []struct {
		name     string
		budget   int64
		memTable uint64
		window   int
	}{
		{"mem", 1 << 30, 0, 20000}, {"spilled", 1, 0, 20000}, {"spilled-mt64MiB", 1, 64 << 20, 20000},
		{"spilled-16MiB", 16 << 20, 0, 183500},
	} {
		benchWindow := bc.window
		b.Run(bc.name, func(b *testing.B) {
			s, err := OpenStore(b.TempDir(), StoreOptions{MemoryBudget: bc.budget, MemTableSize: bc.memTable})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			rng := rand.New(rand.NewPCG(1, 1))
			keys := make([]string, 1000)
			for i := range keys {
				keys[i] = fmt.Sprintf("entity-%06d", rng.IntN(1e6))
			}
			recs := make([]record.Record, benchChunk)
			sink := func(*record.Record) error { return nil }
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := timers.Pos{EventTime: int64(i) + rng.Int64N(100), Key: keys[i%len(keys)], Input: "orders", Partition: int32(i % 8), Offset: int64(i)}
				r := &recs[i%benchChunk]
				*r = record.Record{Topic: p.Input, Partition: p.Partition, Offset: p.Offset, Key: []byte(p.Key),
					Value: make([]byte, 100), EventTime: p.EventTime, OrderKey: p.Key}
				if err := s.Park(p, r); err != nil {
					b.Fatal(err)
				}
				if i%benchChunk == benchChunk-1 {
					if err := s.Release(int64(i-benchWindow), 0, sink); err != nil {
						b.Fatal(err)
					}
					if err := s.Checkpoint(record.Checkpoint{Watermark: int64(i - benchWindow)}, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := s.Release(1<<62, 0, sink); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
			if s.Len() != 0 {
				b.Fatalf("%d left", s.Len())
			}
		})
	}
}

// TestSpillPathAllocs: parking records that go to disk only and releasing
// them from disk allocates nothing per record: what remains is per batch
// (a commit, an iterator) or per chunk of released records (releaseAlloc).
// The memtable is large enough that pebble never flushes during the test
// (a flush allocates for the table it writes, per memtable, not per record).
func TestSpillPathAllocs(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts are meaningless under the race detector; scripts/test.sh runs this test without it")
	}
	opts := memOpts(vfs.NewMem(), 0)
	opts.MemTableSize = 64 << 20
	s := mustOpen(t, "state", opts)
	defer func() { _ = s.Close() }()
	const batch = 2000
	ps := make([]timers.Pos, batch)
	rs := make([]record.Record, batch)
	for i := range ps {
		ps[i] = timers.Pos{Key: fmt.Sprintf("k%03d", i%100), Input: "orders", Partition: int32(i % 4)}
		rs[i] = record.Record{Topic: "orders", Key: []byte(ps[i].Key), Value: make([]byte, 100), OrderKey: ps[i].Key}
	}
	next := int64(0)
	cycle := func() {
		for i := range ps {
			ps[i].EventTime, ps[i].Offset = next, next
			rs[i].EventTime, rs[i].Offset = next, next
			next++
			if err := s.Park(ps[i], &rs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Release(next-1, 0, func(*record.Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	cycle() // warm up buffers
	perRecord := testing.AllocsPerRun(20, cycle) / batch
	if s.SpilledLen() != 0 || s.Len() != 0 {
		t.Fatalf("%d parked, %d on disk", s.Len(), s.SpilledLen())
	}
	t.Logf("%.3f allocations per record", perRecord)
	if perRecord > 0.05 {
		t.Fatalf("%.3f allocations per record parked and released through disk", perRecord)
	}
}
