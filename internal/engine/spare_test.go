package engine

import (
	"testing"

	"github.com/signalbox/signalbox/record"
)

// spareRun is an engine with n spare batches of batch records waiting.
func spareRun(n, batch int) *Engine {
	c := New(&Config{BatchSize: batch})
	for range n {
		c.Spare(make([]record.Record, 0, batch))
	}
	return c
}

// A spare window drops only the spares that waited unused through it: a
// burst that takes every spare keeps them all, a steady trickle that takes
// one as the sink returns another keeps idleSpareBatches, and so does an
// engine that took none.
func TestTrimSparesDropsOnlyUnused(t *testing.T) {
	const n, batch = 17, 4096

	burst := spareRun(n, batch)
	var taken [][]record.Record
	for range n {
		taken = append(taken, burst.batchFor(batch))
	}
	for _, b := range taken { // the sink writes them and gives them back
		burst.Spare(b[:0])
	}
	burst.TrimSpares()
	if got := burst.Spares(); got != n {
		t.Errorf("after a burst that needed all %d spares, %d are kept", n, got)
	}

	trickle := spareRun(n, batch)
	for range 100 {
		b := trickle.batchFor(10)
		trickle.Spare(b[:0])
	}
	trickle.TrimSpares()
	if got := trickle.Spares(); got != idleSpareBatches {
		t.Errorf("after a trickle that needed one spare at a time, %d of %d are kept, want %d", got, n, idleSpareBatches)
	}

	idle := spareRun(n, batch)
	idle.TrimSpares()
	if got := idle.Spares(); got != idleSpareBatches {
		t.Errorf("after a window with no batch taken, %d of %d are kept, want %d", got, n, idleSpareBatches)
	}
	// The next window starts afresh: a burst in it keeps what it used.
	for range idleSpareBatches {
		idle.Spare(idle.batchFor(batch)[:0])
	}
	idle.TrimSpares()
	if got := idle.Spares(); got != idleSpareBatches {
		t.Errorf("a later window dropped spares it used: %d kept, want %d", got, idleSpareBatches)
	}
}

// Spares beyond Config.MaxSpares are dropped.
func TestSparesBounded(t *testing.T) {
	c := New(&Config{BatchSize: 16, MaxSpares: 3})
	for range 5 {
		c.Spare(make([]record.Record, 0, 16))
	}
	if got := c.Spares(); got != 3 {
		t.Fatalf("%d spares kept, want 3", got)
	}
}
