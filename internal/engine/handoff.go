package engine

// Out batches: sealed by the steps (seal) into the spare batches the
// driver gives back (Spare), handed over by the driver (Effects.Outs).

import (
	"math"
	"time"

	"github.com/signalbox/signalbox/record"
)

// Spare batches. The driver gives back every batch the sinks have written
// (Spare), so that a busy stream reuses its batches: the engine fills them
// in bursts (a fetch's worth) while the sinks write steadily. Every tick
// of the wall clock the driver calls TrimSpares, which drops the spares
// that were not needed in it: the fewest that waited whenever the engine
// took one (all of them when it took none), keeping idleSpareBatches. So
// after a sink stall drains, neither a quiet stream nor a steady trickle,
// which takes one spare as the sinks return another, holds every batch
// that was in flight (about 1 MiB each at 4096 records) for the rest of
// the run.
const idleSpareBatches = 2

// SmallBatch is the capacity of a small out batch, made for a quiet
// stream; only batches larger than it are worth giving back (Spare).
const SmallBatch = 256

// spares are the batches given back and not yet taken.
type spares struct {
	free [][]record.Record
	// low is the fewest that waited whenever one was taken since the last
	// TrimSpares.
	low int
}

// Spare gives b, a written out batch's records, back for a later batch;
// its elements must be cleared. Beyond Config.MaxSpares waiting (0: no
// bound) it is dropped, left to the garbage collector: as many as can be
// in flight are enough to refill every batch a burst seals.
func (c *Engine) Spare(b []record.Record) {
	if c.cfg.MaxSpares > 0 && len(c.spares.free) >= c.cfg.MaxSpares {
		return
	}
	c.spares.free = append(c.spares.free, b[:0])
}

// Spares is how many spare batches wait.
func (c *Engine) Spares() int { return len(c.spares.free) }

// TrimSpares ends a spare window: it drops the spares that waited unused
// through it, down to idleSpareBatches.
func (c *Engine) TrimSpares() {
	s := &c.spares
	keep := len(s.free)
	if drop := min(s.low, len(s.free)) - idleSpareBatches; drop > 0 {
		keep -= drop
	}
	clear(s.free[keep:])
	s.free = s.free[:keep]
	s.low = math.MaxInt
}

// batchFor returns an empty record batch for the next out: a spare, if
// there is one (they exist while the stream is busy: a replay's step ends
// with a short batch whose successor would otherwise grow again, by
// doubling, to full size); else one sized after the last one's n records:
// when there were more than SmallBatch, a large one, else a small one. A
// large one holds Config.BatchSize records, or under Config.InflightBytes a
// quarter more than n, since the byte bound rather than the count ends
// those batches.
func (c *Engine) batchFor(n int) []record.Record {
	s := &c.spares
	s.low = min(s.low, len(s.free))
	if k := len(s.free); k > 0 {
		b := s.free[k-1]
		s.free[k-1] = nil
		s.free = s.free[:k-1]
		return b
	}
	switch {
	case n <= SmallBatch:
		return make([]record.Record, 0, min(SmallBatch, c.cfg.BatchSize))
	case c.cfg.InflightBytes > 0: // a busy stream: the next batch may fill, and is recycled
		return make([]record.Record, 0, min(c.cfg.BatchSize, n+n/4))
	}
	return make([]record.Record, 0, c.cfg.BatchSize)
}

// seal ends the current out batch if it has anything: it goes to the sinks
// at the next Ready (Effects.Outs), and a new one takes its place. When
// it is the first batch of records since the sinks' last flush, the flush
// linger starts at now.
func (c *Engine) seal(now time.Time) {
	o := c.cur
	if len(o.Records) == 0 && len(o.Dead) == 0 && o.CP == nil && !o.Flush {
		return
	}
	switch {
	case o.CP != nil || o.Flush:
		c.unflushed = time.Time{}
	case c.unflushed.IsZero() && (len(o.Records) > 0 || len(o.Dead) > 0):
		c.unflushed = now
	}
	c.fx.Outs = append(c.fx.Outs, o)
	c.cur = &Out{Records: c.batchFor(len(o.Records))}
}

// event reports e to the observer at the next Ready, when there is one.
func (c *Engine) event(e Event) {
	if c.cfg.Observe {
		c.fx.Events = append(c.fx.Events, e)
	}
}
