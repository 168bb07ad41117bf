package watermark_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/signalbox/signalbox/watermark"
)

// BenchmarkWatermark measures what the engine does per record (Observe) and
// per fetch (Advance), with every partition replaying. One op is one record
// observed plus one Advance: the engine's worst case of one-record fetches.
//
//	go test ./watermark -run XXX -bench Watermark -benchmem -count 6 | benchstat -
func BenchmarkWatermark(b *testing.B) {
	for _, n := range []int{1, 42, 1000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			w := watermark.New(time.Second)
			ids := make([]watermark.ID, n)
			for i := range ids {
				ids[i] = watermark.ID{Input: "orders", Partition: int32(i)}
				w.Add(ids[i], false)
				w.SetHolding(ids[i], true, "replaying", 100)
			}
			now := time.UnixMilli(1_700_000_000_000)
			b.ReportAllocs()
			b.ResetTimer()
			var wm int64
			for i := range b.N {
				w.Observe(ids[i%n], int64(i))
				wm = w.Advance(now)
			}
			if n == 1 && b.N > 1 && wm != int64(b.N-1)-1000 {
				b.Fatalf("watermark %d after %d records", wm, b.N)
			}
		})
	}
}
