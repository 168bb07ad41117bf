package timers

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// replayQueue drives a queue the way the engine does during a replay:
// parts partitions each deliver answers of chunk records that span a wide
// stretch of event time (in order, with a little disorder), one partition
// at a time, and after each answer everything up to the least newest event
// time of the partitions is released. Records are reused once released.
type replayQueue struct {
	q      *Queue[*rec]
	newest []int64
	free   []*rec
	dst    []*rec
	rng    *rand.Rand
	next   int // the partition whose answer comes next
	chunk  int
	step   int64 // event time between consecutive records of a partition
}

func newReplayQueue(parts, chunk int, step int64) *replayQueue {
	r := &replayQueue{q: NewQueue(recPos), newest: make([]int64, parts), rng: rand.New(rand.NewPCG(3, 4)), chunk: chunk, step: step}
	for i := range 4 * parts * chunk {
		r.free = append(r.free, &rec{pos: Pos{Key: fmt.Sprintf("key-%d", i%97), Input: "orders", Partition: int32(i % parts)}})
	}
	for p := range r.newest { // staggered: what the watermark leaves parked differs by partition
		r.newest[p] = int64(p) * step * int64(chunk) / int64(parts)
	}
	return r
}

// fetch parks one answer per partition, as one fetch response brings, and
// releases what the watermark (the least newest event time) then passes.
// The parked set stays within about parts × chunk records.
func (r *replayQueue) fetch() {
	for p := range r.newest {
		for range r.chunk {
			x := r.free[len(r.free)-1]
			r.free = r.free[:len(r.free)-1]
			r.newest[p] += r.step
			x.pos.EventTime = r.newest[p] + r.rng.Int64N(r.step/6) // some disorder
			x.pos.Partition, x.pos.Offset = int32(p), x.pos.Offset+1
			r.q.Push(x, 128)
		}
	}
	wm := r.newest[0]
	for _, n := range r.newest {
		wm = min(wm, n)
	}
	r.dst = r.q.PopUntil(wm-1000, 0, r.dst[:0])
	r.free = append(r.free, r.dst...)
}

// TestQueueReplayAllocs checks invariant 4 for a replay's pattern: every
// fetch parks a fetch's worth and the release step after it takes most of
// it, so the parked set swings between a peak and a trough at every step.
// The bucket arrays the next fetch fills must survive the trim that runs
// in the trough (about 50 bytes allocated per parked record when the bound followed the
// trough; about 9 now, the last arrays still growing to full size).
func TestQueueReplayAllocs(t *testing.T) {
	r := newReplayQueue(24, 1024, 1200) // ~0.8 records per second of event time per partition, as in the scaling benchmark
	for range 200 {                     // the arrays in use settle, mostly
		r.fetch()
	}
	const fetches = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range fetches {
		r.fetch()
	}
	runtime.ReadMemStats(&after)
	if perRecord := float64(after.TotalAlloc-before.TotalAlloc) / float64(fetches*r.chunk*len(r.newest)); perRecord > 16 {
		t.Errorf("%.1f bytes allocated per parked record, want at most 16", perRecord)
	}
}

// BenchmarkQueueReplay is the replay's pattern (TestQueueReplayAllocs) per
// parked record:
//
//	go test -run '^$' -bench QueueReplay -benchmem ./timers/
func BenchmarkQueueReplay(b *testing.B) {
	r := newReplayQueue(24, 1024, 1200)
	for range 200 {
		r.fetch()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += r.chunk * len(r.newest) {
		r.fetch()
	}
}
