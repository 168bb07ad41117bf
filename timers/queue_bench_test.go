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
			dst := make([]int, 0, 1)
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
			dst := make([]int, 0, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				dst = parkReleaseBatch(q, ps, i, n, batch, dst)
			}
		})
	}
}
