package signalbox

// Deciding the watermark and releasing what it passes, and handing the
// released batches to the sink goroutine.

import (
	"context"
	"errors"
	"math"
	"time"
	"unsafe"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// release advances the watermark and moves every parked record at or below it
// into the current out batch, in timer order. The strategy sees the source's
// evidence clock when it keeps one: the processing-time fallback must not run
// ahead of what the broker has been asked (record invariant 4).
func (r *run) release(now time.Time) error {
	if r.stamped && r.evidence.Before(now) {
		now = r.evidence
	}
	g, any := watermark.MaxTime, false
	for _, t := range r.tasks {
		w := t.strat.Advance(now)
		t.wm = w
		if t.timed > 0 {
			g, any = min(g, w), true
		}
	}
	if !any {
		return nil // no timed partition: no evidence, nothing moves
	}
	g = min(g, r.restoreHold())
	if r.cfg.stopSet && g >= r.cfg.stopAt {
		// UntilTime: hold the watermark at the stop, and end the run.
		g, r.untilReached = max(r.cfg.stopAt, r.wm), true
	}
	r.wm = g
	for _, t := range r.tasks {
		t.rel = max(t.rel, g)
	}
	return r.store.Release(g, 0, r.released)
}

// restoreHold is the highest watermark that may be released while
// partitions re-read below their restored checkpoint's position: the lowest
// of their restored watermarks (MaxTime when none does). Until a partition
// is back at that position, what a checkpoint says of it stays the restored
// claim (emittedClaim), so a stop at any moment re-emits nothing. A
// partition caught up below that position (its records were deleted) does
// not hold.
func (r *run) restoreHold() int64 {
	if r.restoringN == 0 {
		return watermark.MaxTime
	}
	hold, n := watermark.MaxTime, 0
	for _, ps := range r.parts {
		if ps.restoring {
			n++
			if ps.holds && !ps.dec.timeless {
				hold = min(hold, ps.restoreWM)
			}
		}
	}
	r.restoringN = n
	return hold
}

// released takes one record the store released: it leaves the partition's
// outstanding offsets and goes into the current out batch, unless it belongs
// to a revoked partition (the new owner re-reads it) or a restart found it
// already emitted.
func (r *run) released(rec *record.Record) error {
	ps := r.partOf(rec)
	if ps == nil {
		return nil
	}
	err := r.emit(ps, rec)
	if r.parkRefs {
		r.unparked(ps, rec) // last: the source may overwrite rec from here on
	}
	return err
}

// emit is released's part for a record of an assigned partition.
func (r *run) emit(ps *partState, rec *record.Record) error {
	switch {
	case rec.Offset >= ps.start:
		ps.offs.Done(rec.Offset)
	case ps.floorCount > 0:
		ps.floorCount-- // restored from a DurableStore
	default:
		// Parked before the partition was revoked; another instance has
		// since committed past it, so it was that instance's to emit.
		r.stats.Skipped++
		return nil
	}
	if rec.Offset < ps.restorePos && rec.EventTime <= ps.restoreWM {
		r.stats.Skipped++ // emitted before the restart, per the sink's checkpoint
		return nil
	}
	if err := r.output(ps, rec); err != nil {
		return err
	}
	if len(r.cur.records) >= r.cfg.batchSize || r.cur.bytes >= r.cfg.batchBytes {
		return r.send(context.Background(), r.sinkDone)
	}
	return nil
}

// partCache finds a released record's partition state without hashing its
// topic: a source's records of one partition share their Topic string's
// memory, so its address and the partition number pick the slot, and a
// full comparison confirms a hit (any other record only misses). assign and
// revoke clear it.
type partCache [1 << partCacheBits]struct {
	tp record.TopicPartition
	ps *partState
}

const partCacheBits = 8

// partOf is r.parts[rec's partition], through the cache. The slot is the
// top bits of a multiplicative hash: topic strings allocated one after the
// other sit a few bytes apart, and their low address bits combined with
// small partition numbers would share slots.
func (r *run) partOf(rec *record.Record) *partState {
	const golden = 0x9E3779B97F4A7C15
	h := (uint64(uintptr(unsafe.Pointer(unsafe.StringData(rec.Topic)))) + uint64(rec.Partition)*golden) * golden
	c := &r.pcache[h>>(64-partCacheBits)]
	if c.ps != nil && c.tp.Partition == rec.Partition && c.tp.Topic == rec.Topic {
		return c.ps
	}
	ps := r.parts[record.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}]
	if ps != nil {
		c.tp, c.ps = ps.tp, ps // the partition's own strings, never a record's buffer
	}
	return ps
}

// flushAll releases everything parked (end of a bounded run) and raises the
// watermark to the last released event time, so that a later restart treats
// all of it as emitted.
func (r *run) flushAll() error {
	last := r.wm
	if err := r.store.Release(watermark.MaxTime, 0, func(rec *record.Record) error {
		last = max(last, rec.EventTime)
		return r.released(rec)
	}); err != nil {
		return err
	}
	for _, t := range r.tasks {
		t.strat.Restore(last)
		t.rel = max(t.rel, last)
	}
	r.wm = max(r.wm, last)
	return nil
}

// Spare batches. The sink goroutine gives back every batch it has written
// (run.spare holds as many as can be in flight, WithMaxInflightBatches+1),
// so that a busy stream reuses its batches: the engine fills them in bursts
// (a fetch's worth) while the sink writes steadily, and a spare channel
// smaller than the backlog would drop the batches of every drained burst,
// to allocate them again at the next one. Every tick (by the wall clock)
// the engine drops the spares that were not needed in it: the fewest that
// waited whenever it took one (all of them when it took none), keeping
// idleSpareBatches. So after a sink stall drains, neither a quiet stream
// nor a steady trickle, which takes one spare as the sink returns another,
// holds every batch that was in flight (about 1 MiB each at 4096 records)
// for the rest of the run.
const idleSpareBatches = 2

// trimSpares ends a spare window: it drops the spares that waited unused
// through it, down to idleSpareBatches, and starts the next window.
func (r *run) trimSpares(now time.Time) {
	for drop := min(r.spareLow, len(r.spare)) - idleSpareBatches; drop > 0; drop-- {
		select {
		case <-r.spare:
		default:
			drop = 0
		}
	}
	r.spareLow, r.spareWindow = math.MaxInt, now
}

// smallBatch is the capacity of a small out batch, made for a quiet stream;
// only batches larger than it go back to the engine as spares (writer.go).
const smallBatch = 256

// batchFor returns an empty record batch for the next out: a spare the sink
// goroutine returned, if there is one (it returns only large ones, which
// exist while the stream is busy: a replay's step ends with a short batch
// whose successor would otherwise grow again, by doubling, to full size);
// else one sized after the last one's n records: when there were more than
// smallBatch, a large one, else a small one. A large one holds WithBatchSize
// records, or under WithMaxInflightBytes a quarter more than n, since the
// byte bound rather than the count ends those batches.
func (r *run) batchFor(n int) []record.Record {
	r.spareLow = min(r.spareLow, len(r.spare))
	select {
	case b := <-r.spare:
		return b
	default:
	}
	switch {
	case n <= smallBatch:
		return make([]record.Record, 0, min(smallBatch, r.cfg.batchSize))
	case r.cfg.inflightBytes > 0: // a busy stream: the next batch may fill, and is recycled
		return make([]record.Record, 0, min(r.cfg.batchSize, n+n/4))
	}
	return make([]record.Record, 0, r.cfg.batchSize)
}

// send hands the current out batch to the sink goroutine if it has anything.
// It blocks while the sinks lag (backpressure).
func (r *run) send(ctx context.Context, sinkDone <-chan struct{}) error {
	o := r.cur
	if len(o.records) == 0 && len(o.dead) == 0 && o.cp == nil && !o.flush {
		return nil
	}
	// r.cur is replaced only once the batch is handed over: if the wait is
	// cancelled, its records (already counted as released) stay in r.cur and
	// leave with the final checkpoint, so no commit can pass them.
	sent := func() error {
		switch {
		case o.cp != nil || o.flush:
			r.unflushed = time.Time{}
		case r.unflushed.IsZero() && (len(o.records) > 0 || len(o.dead) > 0):
			r.unflushed = r.cfg.clock()
		}
		r.cur = &out{records: r.batchFor(len(o.records))}
		return nil
	}
	select {
	case r.outs <- o:
		return sent()
	default:
	}
	// The sinks lag: wait (backpressure).
	if err := r.await(ctx, o, nil, sinkDone); err != nil {
		return err
	}
	return sent()
}

// errSinkStopped surfaces when the sink goroutine ended while the engine
// waited for it.
var errSinkStopped = errors.New("signalbox: sink goroutine stopped")

// await is the engine's one blocking wait: until o is handed to the sink
// goroutine (o != nil) or done is closed. Meanwhile it reports the sink
// goroutine's acknowledgements to the observer and keeps the published
// stats fresh for status views; it gives up on a sink error, on ctx, or when
// sinkDone (if not nil) is closed. Only Run's shutdown drains the sink
// goroutine differently: there its error is read after it has ended.
func (r *run) await(ctx context.Context, o *out, done, sinkDone <-chan struct{}) error {
	var outs chan<- *out
	if o != nil {
		outs = r.outs
	}
	pub := time.NewTicker(r.cfg.tick)
	defer pub.Stop()
	for {
		select {
		case outs <- o:
			return nil
		case <-done:
			return nil
		case <-pub.C:
			r.publish()
		case e := <-r.acks:
			r.notify(e)
		case err := <-r.errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-sinkDone:
			return errSinkStopped
		}
	}
}
