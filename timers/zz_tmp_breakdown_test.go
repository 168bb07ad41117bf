package timers

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/signalbox/signalbox/record"
)

func TestTmpBreakdown(t *testing.T) {
	const benchWindow, benchChunk, N = 20000, 10000, 300000
	for _, bc := range []struct {
		name   string
		budget int64
		mt     uint64
	}{{"mem", 1 << 30, 0}, {"spilled", 1, 0}, {"spilled64", 1, 64 << 20}} {
		s, err := OpenStore(t.TempDir(), StoreOptions{MemoryBudget: bc.budget, MemTableSize: bc.mt})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		keys := make([]string, 1000)
		for i := range keys {
			keys[i] = fmt.Sprintf("entity-%06d", rng.IntN(1e6))
		}
		recs := make([]record.Record, benchChunk)
		sink := func(*record.Record) error { return nil }
		var tp, tr, tc time.Duration
		start := time.Now()
		for i := 0; i < N; i++ {
			p := Pos{EventTime: int64(i) + rng.Int64N(100), Key: keys[i%len(keys)], Input: "orders", Partition: int32(i % 8), Offset: int64(i)}
			r := &recs[i%benchChunk]
			*r = record.Record{Topic: p.Input, Partition: p.Partition, Offset: p.Offset, Key: []byte(p.Key),
				Value: make([]byte, 100), EventTime: p.EventTime, OrderKey: p.Key}
			t0 := time.Now()
			if err := s.Park(p, r); err != nil {
				t.Fatal(err)
			}
			tp += time.Since(t0)
			if i%benchChunk == benchChunk-1 {
				t0 = time.Now()
				if err := s.Release(int64(i-benchWindow), 0, sink); err != nil {
					t.Fatal(err)
				}
				tr += time.Since(t0)
				t0 = time.Now()
				if err := s.Checkpoint(record.Checkpoint{Watermark: int64(i - benchWindow)}, nil); err != nil {
					t.Fatal(err)
				}
				tc += time.Since(t0)
			}
		}
		tot := time.Since(start)
		m := s.db.Metrics()
		t.Logf("%s: total %v/rec park %v release %v checkpoint %v ; flushes %d compactions %d", bc.name, tot/N, tp/N, tr/N, tc/N, m.Flush.Count, m.Compact.Count)
		s.Close()
	}
}
