package engine

import (
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// Checkpoints: what one claims, and taking the restored ones in.

// checkpoint checkpoints everything released so far, at now.
//
// Without a DurableStore it queues the checkpoint behind the released
// records: the sink goroutine flushes, stores it in a CheckpointSink's
// transaction, and commits Low offsets.
//
// With a DurableStore it is a barrier (Effects): the driver waits until the
// sinks have flushed everything released so far, then stores the parked set
// with the checkpoint, then commits (awaitBarrier).
//
// With revoke set (a rebalance is about to revoke partitions), it is always
// a barrier, so the new owner starts from the safe offsets.
//
// With no partition assigned (a stop before the first assignment) there is
// nothing to checkpoint, and an empty checkpoint would replace the one the
// run restored (a DurableStore's, or a sink's that is stored whole), so that
// the next restart would skip nothing: it only flushes, if final.
func (c *Engine) checkpoint(now time.Time, final, revoke bool) {
	if len(c.parts) == 0 {
		if final {
			c.cur.Flush = true
			c.seal(now)
		}
		return
	}
	cp := c.buildCheckpoint()
	c.cur.CP, c.cur.Final, c.cur.CPAt = &cp, final, now
	if !c.cfg.Durable && !revoke {
		if final {
			c.seal(now)
		}
		return
	}
	c.cur.NoCommit = c.cfg.Durable
	c.fx.Barrier = &Barrier{Out: c.cur, CP: &cp, Start: now, Final: final, Revoke: revoke}
	c.seal(now)
}

// futureBound is max_future ahead of now (MaxTime without max_future): the
// highest watermark a checkpoint may restore, and the poison guard's bound.
func (c *Engine) futureBound(now time.Time) int64 {
	if c.cfg.MaxFuture <= 0 {
		return watermark.MaxTime
	}
	return now.Add(c.cfg.MaxFuture).UnixMilli()
}

// refreshRestored takes the checkpoints of assigned partitions: of cp, the
// checkpoint sink's (readRestored), the newest position per partition wins.
//
// With neither a checkpoint sink nor a DurableStore, the checkpoint the
// source committed with the partition's offset (CheckpointCommitter) plays
// that role: a clean stop re-emits nothing. One whose watermark is more
// than max_future ahead of the clock is not restored (a checkpoint never
// restores such a time); the partition then skips nothing.
func (c *Engine) refreshRestored(assigned []record.PartitionInfo, cp *record.Checkpoint) {
	if !c.cfg.CheckpointSink && !c.cfg.Durable {
		for _, a := range assigned {
			switch {
			case a.Checkpoint == nil:
			case a.Checkpoint.Watermark > c.futureBound(c.now):
				c.warn("committed checkpoint watermark ahead of the clock by more than max_future: not restored",
					"topic", a.Topic, "partition", a.Partition, "watermark", a.Checkpoint.Watermark)
			default:
				c.restoreNewer(*a.Checkpoint)
			}
		}
		return
	}
	if cp == nil {
		return
	}
	for _, pc := range cp.Partitions {
		for _, a := range assigned {
			if a.TopicPartition == pc.TopicPartition {
				c.restoreNewer(pc)
			}
		}
	}
}

// restoreNewer makes pc the partition's restored checkpoint unless the one
// it has is at least as far: each says truly what was emitted, and the
// further one skips more.
func (c *Engine) restoreNewer(pc record.PartitionCheckpoint) {
	if old, ok := c.restored[pc.TopicPartition]; ok && old.Position >= pc.Position {
		return
	}
	c.restored[pc.TopicPartition] = pc
}

// buildCheckpoint builds the checkpoint as of everything released so far.
func (c *Engine) buildCheckpoint() record.Checkpoint {
	cp := record.Checkpoint{Watermark: c.wm, Partitions: make([]record.PartitionCheckpoint, 0, len(c.parts))}
	for _, st := range c.catch.Statuses() {
		tp := record.TopicPartition{Topic: st.Input, Partition: st.Partition}
		ps := c.parts[tp]
		pos, wm := ps.emittedClaim()
		cp.Partitions = append(cp.Partitions, record.PartitionCheckpoint{
			TopicPartition: tp,
			Low:            c.windowHeld(ps, ps.low()),
			Position:       pos,
			End:            st.SnapshotEnd,
			Replaying:      st.Phase == catchup.Replaying || (st.Phase == catchup.Unknown && st.Position < st.SnapshotEnd),
			Watermark:      wm,
		})
	}
	return cp
}

// emittedClaim is what a checkpoint says of ps: its records below pos with
// event time at or below wm were emitted, and no other record of it was.
// Normally that is its position and its task's release watermark, or its
// own lateAt if higher (its records at or below lateAt are late). While ps
// re-reads below its restored checkpoint's position, it is that
// checkpoint's claim: the run has read less than the one before it, and
// releases nothing past the restored watermark meanwhile (restoreHold), so
// the claim is still exact; a checkpoint never moves the position back,
// which would make the next restart re-emit what lies between.
func (ps *partState) emittedClaim() (pos, wm int64) {
	pos, wm = ps.position(), max(ps.task.rel, ps.lateAt)
	if ps.restoring && ps.restorePos > pos {
		return ps.restorePos, min(wm, ps.restoreWM) // min: never claim what was not released
	}
	return pos, wm
}

// low is the offset to commit: nothing below it is parked or unacknowledged.
func (ps *partState) low() int64 {
	if ps.table != nil {
		return ps.position()
	}
	if ps.floorCount > 0 {
		return min(ps.floorMin, ps.offs.Low())
	}
	return ps.offs.Low()
}
