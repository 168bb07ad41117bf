package engine

// Deciding the watermark and releasing what it passes into the current out
// batch (handoff.go hands the batches to the sink goroutine).

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// release advances the watermark and starts releasing every parked record
// at or below it into the out batches, in timer order (ReleaseMore goes
// on). The strategy sees the source's evidence clock when it keeps one: the
// processing-time fallback must not run ahead of what the broker has been
// asked (record invariant 4).
func (c *Engine) release(now time.Time) {
	c.aheadJoin() // a new pass: nothing is evaluated ahead beside it (ahead.go)
	if c.stamped && c.evidence.Before(now) {
		now = c.evidence
	}
	g, any := watermark.MaxTime, false
	for _, t := range c.tasks {
		w := t.strat.Advance(now)
		t.wm = w
		if t.timed > 0 {
			g, any = min(g, w), true
		}
	}
	if !any {
		return // no timed partition: no evidence, nothing moves
	}
	g = min(g, c.restoreHold())
	if c.cfg.StopSet && g >= c.cfg.StopAt {
		// UntilTime: hold the watermark at the stop, and end the run.
		g, c.untilReached = max(c.cfg.StopAt, c.wm), true
	}
	c.wm = g
	if len(c.cfg.Windows) > 0 && c.hasCP {
		c.wm = max(c.wm, c.cpWM) // the windows rebuild below it: a checkpoint still claims it
	}
	if len(c.wins) > 0 {
		// Every scope's records at or below g come out in this release, in
		// order: its windows may advance that far for another's record.
		c.scopes(func(sc *winScope) error { sc.bound = max(sc.bound, g); return nil })
	}
	if len(c.cfg.Tables) > 0 {
		c.trimTables(g)
	}
	for _, t := range c.tasks {
		t.rel = max(t.rel, g)
	}
	c.rel = releasing{g: g, active: true}
}

// releasing is a release under way: the store releases up to g one
// Config.BatchSize chunk at a time (ReleaseMore), so that the driver hands the
// batches sealed meanwhile to the sinks (backpressure) before the next
// chunk leaves the store.
type releasing struct {
	g      int64
	active bool
	flush  bool  // flushAll: the watermark rises to last once all is out
	last   int64 // the newest event time released, under flush
	n      int   // records the current chunk released
}

// ReleaseMore releases the next chunk of the release under way; more
// reports that it may not be over.
func (c *Engine) ReleaseMore() (more bool, err error) {
	if !c.rel.active {
		return false, nil
	}
	c.rel.n = 0
	if c.onRelease == nil {
		c.onRelease = c.releasedOne // once: a method value allocates
	}
	err = c.store.Release(c.rel.g, c.cfg.BatchSize, c.onRelease)
	c.aheadEnd()
	if err != nil {
		c.rel.active = false
		return false, err
	}
	if c.rel.n == c.cfg.BatchSize {
		return true, nil
	}
	c.rel.active = false
	c.aheadDone()
	if c.rel.flush {
		c.flushed(c.rel.last)
	}
	for _, t := range c.cfg.Tables {
		if err := t.Into.Err(); err != nil {
			return false, fmt.Errorf("table %s: %w", t.Into.Name(), err) // a trim failed
		}
	}
	return false, c.windowsAdvance(c.rel.g)
}

// releasedOne is released, counted for ReleaseMore.
func (c *Engine) releasedOne(rec *record.Record) error {
	c.rel.n++
	if c.ahead != nil {
		c.aheadAt(c.rel.n - 1)
	}
	c.rel.last = max(c.rel.last, releaseAt(rec))
	return c.released(rec)
}

// restoreHold is the highest watermark that may be released while
// partitions re-read below their restored checkpoint's position: the lowest
// of their restored watermarks (MaxTime when none does). Until a partition
// is back at that position, what a checkpoint says of it stays the restored
// claim (emittedClaim), so a stop at any moment re-emits nothing. A
// partition caught up below that position (its records were deleted) does
// not hold.
func (c *Engine) restoreHold() int64 {
	if c.restoringN == 0 {
		return watermark.MaxTime
	}
	hold, n := watermark.MaxTime, 0
	for _, ps := range c.parts {
		if ps.restoring {
			n++
			if ps.holds && !ps.timeless {
				hold = min(hold, ps.restoreWM)
			}
		}
	}
	c.restoringN = n
	return hold
}

// released takes one record the store released: it leaves the partition's
// outstanding offsets and goes into the current out batch, unless it belongs
// to a revoked partition (the new owner re-reads it) or a restart found it
// already emitted.
func (c *Engine) released(rec *record.Record) error {
	ps := c.partOf(rec)
	if ps == nil {
		return nil
	}
	err := c.emit(ps, rec)
	if c.cfg.ParkRefs {
		c.unparked(ps, rec) // last: the source may overwrite rec from here on
	}
	return err
}

// emit is released's part for a record of an assigned partition.
func (c *Engine) emit(ps *partState, rec *record.Record) error {
	switch {
	case rec.Offset >= ps.start:
		ps.offs.Done(rec.Offset)
	case ps.floorCount > 0:
		ps.floorCount-- // restored from a DurableStore
	default:
		// Parked before the partition was revoked; another instance has
		// since committed past it, so it was that instance's to emit.
		c.stats.Skipped++
		return nil
	}
	if rec.Offset < ps.restorePos && releaseAt(rec) <= ps.restoreWM {
		if c.rebuilds(ps) {
			return c.windowsReread(ps, rec)
		}
		c.stats.Skipped++ // emitted before the restart, per the sink's checkpoint
		return nil
	}
	if err := c.output(ps, rec); err != nil {
		return err
	}
	if len(c.cur.Records) >= c.cfg.BatchSize || c.cur.Bytes >= c.cfg.BatchBytes {
		c.seal(c.now)
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

// partOf is c.parts[rec's partition], through the cache. The slot is the
// top bits of a multiplicative hash: topic strings allocated one after the
// other sit a few bytes apart, and their low address bits combined with
// small partition numbers would share slots.
func (c *Engine) partOf(rec *record.Record) *partState {
	const golden = 0x9E3779B97F4A7C15
	h := (uint64(uintptr(unsafe.Pointer(unsafe.StringData(rec.Topic)))) + uint64(rec.Partition)*golden) * golden
	slot := &c.pcache[h>>(64-partCacheBits)]
	if slot.ps != nil && slot.tp.Partition == rec.Partition && slot.tp.Topic == rec.Topic {
		return slot.ps
	}
	ps := c.parts[record.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}]
	if ps != nil {
		slot.tp, slot.ps = ps.tp, ps // the partition's own strings, never a record's buffer
	}
	return ps
}

// flushAll starts releasing everything parked (end of a bounded run;
// ReleaseMore goes on), then raises the watermark to the last released
// event time, so that a later restart treats all of it as emitted.
func (c *Engine) flushAll() {
	c.rel = releasing{g: watermark.MaxTime, active: true, flush: true, last: c.wm}
}

// flushed ends flushAll once everything is released; last is the newest
// event time released.
func (c *Engine) flushed(last int64) {
	for _, t := range c.tasks {
		t.strat.Restore(last)
		t.rel = max(t.rel, last)
	}
	c.wm = max(c.wm, last)
}
