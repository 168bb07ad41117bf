package engine

import (
	"fmt"
	"testing"
)

// BenchmarkWindowHeldSessions is the cost of one partition's checkpoint
// claim (windowHeld) with a million keys held for open sessions: the walk
// over every held key that docs/design.md K6 leaves O(keys) per
// checkpoint.
//
//	go test -run '^$' -bench WindowHeldSessions ./internal/engine/
func BenchmarkWindowHeldSessions(b *testing.B) {
	const keys = 1_000_000
	m := make(map[string]int64, keys)
	for i := range keys {
		m[fmt.Sprintf(`"user-%07d"`, i)] = int64(1_000 + i)
	}
	ps := &partState{}
	ps.winHold.sess = []map[string]int64{m}
	c := &Engine{}
	b.ResetTimer()
	for b.Loop() {
		if low := c.windowHeld(ps, 1<<62); low != 1_000 {
			b.Fatalf("held at %d, want the oldest held offset 1000", low)
		}
	}
}
