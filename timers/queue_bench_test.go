package timers

import (
	"fmt"
	"testing"
)

// BenchmarkQueue measures one park (Push) plus one release (PopUntil) per
// record, with n records parked in steady state. One op is one record.
//
//	go test ./timers -run XXX -bench Queue -benchmem -count 6 | benchstat -
func BenchmarkQueue(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("park+release/n=%d", n), func(b *testing.B) {
			q, ps := steadyQueue(n)
			dst := make([]*rec, 0, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				dst = parkRelease(q, ps, i, n, dst)
			}
			if q.Len() != n {
				b.Fatalf("queue has %d records, want %d", q.Len(), n)
			}
		})
	}
	// Batches: the watermark advances per batch, not per record.
	for _, batch := range []int{64, 4096} {
		b.Run(fmt.Sprintf("park+release-batch/batch=%d", batch), func(b *testing.B) {
			const n = 100_000
			q, ps := steadyQueue(n)
			dst := make([]*rec, 0, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				dst = parkReleaseBatch(q, ps, i, n, batch, dst)
			}
		})
	}
}

// BenchmarkQueueTies is BenchmarkQueue's park+release with 16 records per
// millisecond, so that most comparisons fall through to the tie-break on key,
// input, partition and offset. One op is one record.
func BenchmarkQueueTies(b *testing.B) {
	const n, perMs = 100_000, 16
	ring := make([]rec, n+2*perMs)
	q := NewQueue(recPos)
	at := func(i int) *rec {
		r := &ring[i%len(ring)]
		r.pos = Pos{EventTime: int64(i / perMs), Key: fmt.Sprintf("key-%d", i%97), Input: "orders", Partition: int32(i % 42), Offset: int64(i)}
		r.val = i
		return r
	}
	keys := make([]string, 97)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	for i := range n {
		q.Push(at(i), 128)
	}
	dst := make([]*rec, 0, perMs)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r := &ring[(i+n)%len(ring)]
		r.pos = Pos{EventTime: int64((i + n) / perMs), Key: keys[(i+n)%97], Input: "orders", Partition: int32((i + n) % 42), Offset: int64(i + n)}
		r.val = i
		q.Push(r, 128)
		dst = q.PopUntil(int64(i/perMs)-1, 0, dst[:0])
	}
}

// TestQueueGivesBackLargeBuckets empties a queue whose buckets grew past
// shrinkCap and checks that their memory is dropped and the queue still
// works.
func TestQueueGivesBackLargeBuckets(t *testing.T) {
	const n = shrinkCap + 1
	q, _ := steadyQueue(n)
	if got := len(q.PopUntil(1<<62, 0, nil)); got != n {
		t.Fatalf("popped %d, want %d", got, n)
	}
	for k, b := range q.buckets {
		if cap(b) > shrinkCap {
			t.Fatalf("emptied queue keeps bucket %d at capacity %d", k, cap(b))
		}
	}
	if q.Len() != 0 || q.Bytes() != 0 {
		t.Fatalf("emptied queue has len %d, bytes %d", q.Len(), q.Bytes())
	}
	q.Push(&rec{Pos{EventTime: 2, Key: "b"}, 2}, 1)
	q.Push(&rec{Pos{EventTime: 1, Key: "a"}, 1}, 1)
	if got := vals(q.PopUntil(2, 0, nil)); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("after shrinking, popped %v, want [1 2]", got)
	}
}
