package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/signalbox/signalbox/record"
)

// BenchmarkWindowHeldSessions is the cost of one partition's checkpoint
// claim (windowHeld) with a million keys held for open sessions: the
// least bucket of holds, not a walk over every held key (K6).
//
//	go test -run '^$' -bench WindowHeldSessions ./internal/engine/
func BenchmarkWindowHeldSessions(b *testing.B) {
	const keys = 1_000_000
	c := &Engine{wins: make([]*windowRun, 1)}
	ps := &partState{}
	for i := range keys {
		c.holdKey(ps, 0, fmt.Appendf(nil, `"user-%07d"`, i), &record.Record{Offset: int64(10_000 + i)})
	}
	b.ResetTimer()
	for b.Loop() {
		if low := c.windowHeld(ps, 1<<62); low != 8192 {
			b.Fatalf("held at %d, want 8192: the bucket of the oldest held offset, 10000", low)
		}
	}
}

// TestSessionHoldIsConservative: random session holds and their keys'
// ends on a partition assigned at 1000: a checkpoint's claim is never
// above the oldest held offset (the keys' records are re-read), at most
// holdBucket-1 below it, never below the assignment, and the low it is
// given when no key is held.
func TestSessionHoldIsConservative(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 6))
		c := &Engine{wins: make([]*windowRun, 2)}
		ps := &partState{start: 1000}
		sc := &winScope{}
		c.parts = map[record.TopicPartition]*partState{{Topic: "t"}: ps}
		held := []map[string]int64{{}, {}}
		for op := range 5000 {
			i := rng.IntN(2)
			key := fmt.Sprint("k", rng.IntN(50))
			if rng.IntN(3) == 0 {
				c.keyGone(sc, i, key)
				delete(held[i], key)
			} else {
				o := 1000 + int64(op)*20 + rng.Int64N(3000) // the stream moves on
				c.holdKey(ps, i, []byte(key), &record.Record{Offset: o})
				if h, ok := held[i][key]; !ok || o < h {
					held[i][key] = o
				}
			}
			want := int64(1 << 62)
			for _, m := range held {
				for _, o := range m {
					want = min(want, o)
				}
			}
			got := c.windowHeld(ps, 1<<62)
			if got > want || want != 1<<62 && (got <= want-holdBucket || got < ps.start) {
				t.Fatalf("seed %d op %d: claimed %d, the oldest held offset %d", seed, op, got, want)
			}
		}
	}
}
