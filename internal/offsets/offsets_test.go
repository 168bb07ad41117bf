package offsets

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// model is the obviously correct version: the sorted outstanding offsets.
type model struct {
	outstanding []int64
	position    int64
}

func (m *model) done(off int64) bool {
	i, ok := slices.BinarySearch(m.outstanding, off)
	if ok {
		m.outstanding = slices.Delete(m.outstanding, i, i+1)
	}
	return ok
}

// low is the lowest offset not complete: the smallest outstanding offset, or
// the position when nothing is outstanding.
func (m *model) low() int64 {
	if len(m.outstanding) > 0 {
		return m.outstanding[0]
	}
	return m.position
}

// TestPartitionAgainstModel runs random Add/Done/Advance sequences against
// the model. After every step Low equals the model's low: it never passes an
// outstanding offset (invariant 1), is monotonic and ≤ the position
// (invariant 2), and is tight: skipped offsets never hold it back.
func TestPartitionAgainstModel(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		start := rng.Int64N(100)
		p := New(start)
		m := &model{position: start}
		var added []int64 // every offset ever added, for Done of stale offsets
		prevLow := p.Low()
		steps := 50 + rng.IntN(300)
		if seed%25 == 0 {
			steps = 5000 // long runs exercise the compaction of the window
		}
		for step := range steps {
			var op string
			switch r := rng.IntN(10); {
			case r < 5:
				off := m.position + rng.Int64N(3) // gaps: markers, filtered records
				op = "add"
				p.Add(off)
				m.outstanding = append(m.outstanding, off)
				m.position = off + 1
				added = append(added, off)
			case r < 9 && len(added) > 0:
				// Mostly outstanding offsets, sometimes one already done.
				off := added[rng.IntN(len(added))]
				if rng.IntN(4) == 0 {
					off = m.position + rng.Int64N(5) - 2 // maybe never added
				}
				op = "done"
				if got, want := p.Done(off), m.done(off); got != want {
					t.Fatalf("seed %d step %d: Done(%d) = %v, want %v", seed, step, off, got, want)
				}
			default:
				pos := m.position + rng.Int64N(6) - 2 // may be behind: ignored
				op = "advance"
				p.Advance(pos)
				m.position = max(m.position, pos)
			}
			low := p.Low()
			if want := m.low(); low != want {
				t.Fatalf("seed %d step %d (%s): Low = %d, want %d", seed, step, op, low, want)
			}
			if low < prevLow {
				t.Fatalf("seed %d step %d (%s): Low went back from %d to %d", seed, step, op, prevLow, low)
			}
			if low > p.Position() {
				t.Fatalf("seed %d step %d (%s): Low %d > position %d", seed, step, op, low, p.Position())
			}
			if p.Position() != m.position {
				t.Fatalf("seed %d step %d (%s): Position = %d, want %d", seed, step, op, p.Position(), m.position)
			}
			if got, want := p.Outstanding(), len(m.outstanding); got != want {
				t.Fatalf("seed %d step %d (%s): Outstanding = %d, want %d", seed, step, op, got, want)
			}
			prevLow = low
		}
	}
}

func TestPartitionTimeline(t *testing.T) {
	p := New(10)
	check := func(step string, low, pos int64) {
		t.Helper()
		if p.Low() != low || p.Position() != pos {
			t.Fatalf("%s: Low, Position = %d, %d; want %d, %d", step, p.Low(), p.Position(), low, pos)
		}
	}
	check("new", 10, 10)
	p.Add(12) // 10 and 11 were a transaction marker and a filtered record
	check("add 12", 12, 13)
	p.Add(13)
	p.Add(15)
	check("add 13, 15", 12, 16)
	p.Done(13)
	check("done 13 (12 still parked)", 12, 16)
	p.Done(12)
	check("done 12", 15, 16)
	p.Advance(20)
	check("advance 20", 15, 20)
	p.Done(15)
	check("done 15", 20, 20)
	if p.Done(15) {
		t.Fatal("Done(15) twice reported true")
	}
}

func BenchmarkPartition(b *testing.B) {
	b.ReportAllocs()
	p := New(0)
	const window = 1024
	for i := range int64(window) {
		p.Add(i)
	}
	b.ResetTimer()
	for i := range int64(b.N) {
		p.Add(window + i)
		p.Done(i)
	}
}

// TestPartitionMemory checks that the window costs about a bit per offset
// while dense, and an entry per outstanding offset when they lie far apart
// (a compacted topic), never the gap between them.
func TestPartitionMemory(t *testing.T) {
	p := New(0)
	const n = 1 << 20
	for off := range int64(n) {
		p.Add(off)
	}
	for off := int64(1); off < n; off += 2 {
		p.Done(off)
	}
	if words := len(p.pending) - p.head; words > n/64 || p.Outstanding() != n/2 || p.Low() != 0 {
		t.Fatalf("%d outstanding offsets in %d words (want at most %d), Low %d", p.Outstanding(), words, n/64, p.Low())
	}

	q := New(0)
	q.Add(5)
	q.Add(1 << 40)
	q.Add(1<<40 + 70)
	if len(q.pending) != 3 || q.Low() != 5 {
		t.Fatalf("far-apart offsets in %d words, Low %d", len(q.pending), q.Low())
	}
	q.Done(5)
	if q.Low() != 1<<40 {
		t.Fatalf("Low %d after the first completes, want %d", q.Low(), int64(1<<40))
	}
	q.Done(1<<40 + 70)
	q.Done(1 << 40)
	if q.Low() != 1<<40+71 || q.Outstanding() != 0 {
		t.Fatalf("Low %d, outstanding %d after all complete", q.Low(), q.Outstanding())
	}
}
