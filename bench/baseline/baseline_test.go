package baseline

import (
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/watermark"
)

var t0 = time.Unix(1_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestOneLayerIdlesASilentPartition(t *testing.T) {
	s := NewOneLayer(10*time.Millisecond, time.Second)
	a, b, ref := watermark.ID{Input: "a"}, watermark.ID{Input: "b"}, watermark.ID{Input: "ref"}
	s.Add(a, false, at(0))
	s.Add(b, false, at(0))
	s.Add(ref, true, at(0))
	s.Observe(a, 500, at(100))
	if wm := s.Advance(at(200)); wm != watermark.MinTime {
		t.Fatalf("b has delivered nothing and is not idle yet: wm = %d, want MinTime", wm)
	}
	s.Observe(a, 900, at(1_100))
	if wm := s.Advance(at(1_100)); wm != 890 {
		t.Fatalf("b silent for 1.1s is idle: wm = %d, want 890 (a's 900 − delay)", wm)
	}
	s.Observe(b, 100, at(1_200)) // b connects late: it holds again, but wm never goes back
	if wm := s.Advance(at(1_200)); wm != 890 {
		t.Fatalf("wm = %d, want 890 (monotonic)", wm)
	}
}

func TestTwoLayersDropsAStalledInput(t *testing.T) {
	s := NewTwoLayers(0, time.Hour, time.Second)
	a0, a1, b0 := watermark.ID{Input: "a", Partition: 0}, watermark.ID{Input: "a", Partition: 1}, watermark.ID{Input: "b"}
	for _, id := range []watermark.ID{a0, a1, b0} {
		s.Add(id, false, at(0))
	}
	s.Observe(a0, 100, at(0))
	s.Observe(a1, 50, at(0))
	s.Observe(b0, 1_000, at(0))
	if wm := s.Advance(at(10)); wm != 50 {
		t.Fatalf("wm = %d, want 50", wm)
	}
	// a0 keeps delivering, a1 stays at 50: input a's watermark stalls, and
	// after the input timeout input a no longer holds, although no
	// partition is idle by the first layer (timeout 1h).
	s.Observe(a0, 200, at(1_500))
	s.Observe(b0, 2_000, at(1_500))
	if wm := s.Advance(at(1_500)); wm != 2_000 {
		t.Fatalf("wm = %d, want 2000 (input a idle by the second layer)", wm)
	}
	one := NewOneLayer(0, time.Hour)
	for _, id := range []watermark.ID{a0, a1, b0} {
		one.Add(id, false, at(0))
	}
	one.Observe(a1, 50, at(0))
	one.Observe(a0, 200, at(1_500))
	one.Observe(b0, 2_000, at(1_500))
	if wm := one.Advance(at(1_500)); wm != 50 {
		t.Fatalf("one layer: wm = %d, want 50", wm)
	}
}

func TestFixedWindowHoldsForTheWindow(t *testing.T) {
	var s strategy.Strategy = NewFixedWindow(time.Second)
	id := watermark.ID{Input: "a"}
	s.Observe(id, 5_000, at(0))
	s.Observe(id, 7_000, at(600))
	if wm := s.Advance(at(999)); wm != watermark.MinTime {
		t.Fatalf("wm = %d before the window elapsed", wm)
	}
	if wm := s.Advance(at(1_000)); wm != 5_000 {
		t.Fatalf("wm = %d, want 5000", wm)
	}
	if wm := s.Advance(at(1_600)); wm != 7_000 {
		t.Fatalf("wm = %d, want 7000", wm)
	}
}
