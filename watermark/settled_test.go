package watermark_test

import (
	"testing"
	"time"

	"github.com/signalbox/signalbox/watermark"
)

// TestHoldingPartitionSettlesOnlyOlder: a holding partition whose newest
// event time is m contributes m − delay − 1 ms, for every delay including
// 0: it may still deliver records at m − delay (many records per
// millisecond), which the watermark must not have passed. The
// processing-time fallback settles now − delay − 1 ms likewise, and
// SettledAt is the clock that releases an event time.
func TestHoldingPartitionSettlesOnlyOlder(t *testing.T) {
	const m = 1_700_000_000_000
	id := watermark.ID{Input: "orders", Partition: 0}
	for _, delay := range []time.Duration{0, time.Millisecond, 10 * time.Second} {
		d := delay.Milliseconds()
		w := watermark.New(delay)
		w.Add(id, false)
		w.SetHolding(id, true, "replaying", 5)
		w.Observe(id, m)
		w.Observe(id, m) // a second record at the same millisecond
		if got, want := w.Advance(time.UnixMilli(m+time.Hour.Milliseconds())), int64(m-d-1); got != want {
			t.Fatalf("delay %v: watermark %d while a partition at %d holds it, want %d", delay, got, m, want)
		}
		if h := w.Holders(); len(h) != 1 || h[0].Contribution != m-d-1 || h[0].MaxEventTime != m {
			t.Fatalf("delay %v: holders %+v, want one contributing %d", delay, h, m-d-1)
		}
		w.SetHolding(id, false, "caught-up", 0)
		now := int64(m + 5000)
		if got, want := w.Advance(time.UnixMilli(now)), now-d-1; got != want {
			t.Fatalf("delay %v: fallback at %d gives %d, want %d", delay, now, got, want)
		}
		if at := watermark.SettledAt(now-d-1, d); watermark.Settled(at, d) != now-d-1 || watermark.Settled(at-1, d) >= now-d-1 {
			t.Fatalf("delay %v: SettledAt(%d) = %d is not the first clock to settle it", delay, now-d-1, at)
		}
	}
	if watermark.Settled(watermark.MinTime, 0) != watermark.MinTime || watermark.Settled(watermark.MinTime+1, 5) != watermark.MinTime {
		t.Fatal("Settled does not saturate at MinTime")
	}
}
