package catchup

import (
	"math"
	"testing"
	"time"
)

func at(s float64) time.Time { return time.UnixMilli(int64(s * 1000)) }

// TestPhases walks one partition through every phase (the transcripts in
// package watermark cover the phases together with the watermark).
func TestPhases(t *testing.T) {
	tr := New(Options{StaleAfter: 10 * time.Second})
	id := ID{Input: "orders", Partition: 3}
	if ph := tr.Assign(id, 100, 200, at(0)); ph != Replaying {
		t.Fatalf("Assign: %v", ph)
	}
	steps := []struct {
		name   string
		do     func() (Transition, bool)
		phase  Phase
		behind int64
	}{
		{"half way", func() (Transition, bool) { return tr.Observe(id, 150, 260, at(1)) }, Replaying, 50},
		// The replay target is the snapshot (200), not the fresh end (260).
		{"reaches the snapshot", func() (Transition, bool) { return tr.Observe(id, 200, 260, at(2)) }, Behind, 60},
		{"a position going back is ignored", func() (Transition, bool) { return tr.Observe(id, 190, -1, at(3)) }, Behind, 60},
		{"catches up", func() (Transition, bool) { return tr.Observe(id, 260, 260, at(4)) }, CaughtUp, 0},
		{"fetch fails", func() (Transition, bool) { return tr.Fail(id, at(5)) }, Unknown, 0},
		{"evidence returns", func() (Transition, bool) { return tr.Observe(id, 260, -1, at(6)) }, CaughtUp, 0},
	}
	for _, s := range steps {
		from, _ := tr.Phase(id)
		tn, changed := s.do()
		st, _ := tr.Status(id)
		if st.Phase != s.phase || st.Behind != s.behind {
			t.Fatalf("%s: phase %v behind %d, want %v behind %d", s.name, st.Phase, st.Behind, s.phase, s.behind)
		}
		if changed != (from != s.phase) || changed && (tn.From != from || tn.To != s.phase || tn.ID != id) {
			t.Fatalf("%s: transition %+v, %v from %v", s.name, tn, changed, from)
		}
	}
	if !tr.ReplayDone() {
		t.Fatal("ReplayDone false after the replay")
	}
	if got := tr.Tick(at(16)); len(got) != 0 {
		t.Fatalf("Tick at exactly StaleAfter: %v", got)
	}
	if got := tr.Tick(at(16.001)); len(got) != 1 || got[0].To != Unknown {
		t.Fatalf("Tick after StaleAfter: %v", got)
	}
	if got := tr.Tick(at(100)); len(got) != 0 {
		t.Fatalf("Tick reports an Unknown partition again: %v", got)
	}
	tr.Revoke(id)
	if _, ok := tr.Phase(id); ok || tr.Len() != 0 || !tr.ReplayDone() {
		t.Fatal("Revoke left the partition")
	}
	if _, ok := tr.Observe(id, 1, 1, at(101)); ok {
		t.Fatal("Observe of a revoked partition reported a transition")
	}
}

func TestProgress(t *testing.T) {
	tr := New(Options{RateHalfLife: 5 * time.Second})
	a0, a1, b0 := ID{"a", 0}, ID{"a", 1}, ID{"b", 0}
	tr.Assign(a0, 0, 1000, at(0))
	tr.Assign(a1, 500, 500, at(0)) // empty: done, nothing to replay
	tr.Assign(b0, 10, 20, at(0))
	pr := tr.Progress()
	if len(pr) != 2 || pr[0].Input != "a" || pr[0].ETA != -1 || pr[0].CaughtUp != 1 || pr[0].Remaining != 1000 {
		t.Fatalf("before any progress: %+v", pr)
	}
	tr.Observe(a0, 100, -1, at(1)) // 100 offsets/s
	pr = tr.Progress()
	if a := pr[0]; a.Rate != 100 || a.Remaining != 900 || a.Total != 1000 || math.Abs(a.Fraction-0.1) > 1e-9 || a.ETA != 9*time.Second {
		t.Fatalf("after 1 s at 100/s: %+v", a)
	}
	tr.Observe(a0, 300, -1, at(2)) // 200/s: smoothed towards it
	w := 1 - math.Exp2(-1.0/5)
	if a := tr.Progress()[0]; math.Abs(a.Rate-(100+w*100)) > 1e-9 {
		t.Fatalf("smoothed rate %v, want %v", a.Rate, 100+w*100)
	}
	tr.Observe(b0, 20, 20, at(2))
	if b := tr.Progress()[1]; b.Input != "b" || b.Fraction != 1 || b.ETA != 0 || b.CaughtUp != 1 {
		t.Fatalf("b done: %+v", b)
	}
}
