package signalbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// lateBlob is the key under which a DurableStore keeps the late counters.
const lateBlob = "late-counters"

type lateEntry struct {
	Topic     string      `json:"topic"`
	Partition int32       `json:"partition"`
	Counter   LateCounter `json:"counter"`
}

// checkpoint checkpoints everything released so far, at now.
//
// Without a DurableStore it queues the checkpoint behind the released
// records: the sink goroutine flushes, stores it in a CheckpointSink's
// transaction, and commits Low offsets.
//
// With a DurableStore it is a barrier (effects): the driver waits until the
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
func (c *core) checkpoint(now time.Time, final, revoke bool) {
	if len(c.parts) == 0 {
		if final {
			c.cur.flush = true
			c.seal(now)
		}
		return
	}
	cp := c.buildCheckpoint()
	c.cur.cp, c.cur.final, c.cur.cpAt = &cp, final, now
	if c.durable == nil && !revoke {
		if final {
			c.seal(now)
		}
		return
	}
	c.cur.noCommit = c.durable != nil
	c.fx.barrier = &barrier{o: c.cur, cp: &cp, start: now, final: final, revoke: revoke}
	c.seal(now)
}

// storable is cp as a DurableStore keeps it: without the partitions whose
// checkpoint the checkpoint sink refused (design R9). The sink dropped their
// records, so a stored position would make a restart start past them
// (Seeker); without one, a restart starts them at the committed offset, and
// the sink's checkpoint says what to skip. A sink keeps refusing a partition
// until it claims it again at a new assignment.
func storable(cp record.Checkpoint, fenced []record.TopicPartition) record.Checkpoint {
	if len(fenced) == 0 {
		return cp
	}
	out := cp
	out.Partitions = make([]record.PartitionCheckpoint, 0, len(cp.Partitions))
	for _, pc := range cp.Partitions {
		if !slices.Contains(fenced, pc.TopicPartition) {
			out.Partitions = append(out.Partitions, pc)
		}
	}
	return out
}

// ErrFutureCheckpoint surfaces from Run when the checkpoint to resume from
// holds a watermark more than max_future ahead of the clock: resuming would
// make every new record late (a record from the future moved time before
// the guard stopped it). signalbox refuses rather than guess.
var ErrFutureCheckpoint = errors.New("signalbox: checkpoint watermark is ahead of the clock")

// checkRestoredWatermark refuses a checkpoint poisoned by a future event
// time (WithMaxFuture): a checkpoint never restores such a time.
func (r *run) checkRestoredWatermark(cp *record.Checkpoint, fromStore bool) error {
	if r.cfg.maxFuture <= 0 {
		return nil
	}
	now := r.cfg.clock()
	bound := r.futureBound(now)
	wm := cp.Watermark
	for _, pc := range cp.Partitions {
		wm = max(wm, pc.Watermark)
	}
	if wm <= bound {
		return nil
	}
	fix := "delete the sink's stored checkpoint"
	if fromStore {
		fix = "restart with `signalbox run --reset-state` to rebuild the parked state from Kafka"
	}
	return fmt.Errorf("%w: %s is more than max_future (%v) ahead of %s; %s, or raise max_future",
		ErrFutureCheckpoint, time.UnixMilli(wm).UTC().Format(time.RFC3339Nano), r.cfg.maxFuture,
		now.UTC().Format(time.RFC3339), fix)
}

// futureBound is max_future ahead of now (MaxTime without max_future): the
// highest watermark a checkpoint may restore, and the poison guard's bound.
func (c *core) futureBound(now time.Time) int64 {
	if c.cfg.maxFuture <= 0 {
		return watermark.MaxTime
	}
	return now.Add(c.cfg.maxFuture).UnixMilli()
}

func (c *core) blobs() map[string][]byte {
	var ls []lateEntry
	for tp, c := range c.lateCounts {
		if c.Count > 0 {
			ls = append(ls, lateEntry{Topic: tp.Topic, Partition: tp.Partition, Counter: *c})
		}
	}
	slices.SortFunc(ls, func(a, b lateEntry) int {
		return record.TopicPartition{Topic: a.Topic, Partition: a.Partition}.Compare(record.TopicPartition{Topic: b.Topic, Partition: b.Partition})
	})
	b, _ := json.Marshal(ls) // plain data: cannot fail
	return map[string][]byte{lateBlob: b}
}

// restore reads the checkpoints a restart resumes from.
//
//   - A DurableStore's checkpoint restores the parked set; every partition
//     resumes from its saved position (Seeker), so re-reads stay short.
//   - A CheckpointSink's checkpoint says what the sink already holds:
//     records below its saved position with event time at or below its
//     watermark were emitted, and are skipped whether they are re-read or
//     restored. Without a DurableStore, partitions resume from its Low
//     offsets.
//
// With only a DurableStore, its checkpoint plays both roles.
func (r *run) restore(ctx context.Context) error {
	var storeCP, sinkCP *record.Checkpoint
	if r.durable != nil {
		cp, blobs, err := r.durable.Restore()
		if err != nil {
			return fmt.Errorf("signalbox: restoring parked state: %w", err)
		}
		storeCP = cp
		r.floors = r.durable.ParkedByPartition()
		if b := blobs[lateBlob]; len(b) > 0 {
			var ls []lateEntry
			if err := json.Unmarshal(b, &ls); err != nil {
				return fmt.Errorf("signalbox: restoring late counters: %w", err)
			}
			for _, l := range ls {
				c := l.Counter
				r.lateCounts[record.TopicPartition{Topic: l.Topic, Partition: l.Partition}] = &c
			}
		}
	}
	if cs := r.cfg.checkpointSink(); cs != nil {
		cp, err := cs.Restore(ctx)
		if err != nil {
			return fmt.Errorf("signalbox: restoring checkpoint: %w", err)
		}
		sinkCP = cp
	}
	filter := sinkCP
	if filter == nil {
		filter = storeCP
	}
	if filter == nil {
		return nil
	}
	if err := r.checkRestoredWatermark(filter, storeCP != nil); err != nil {
		return err
	}
	r.cpWM, r.hasCP = filter.Watermark, true // per task: see assign
	r.wm = max(r.wm, filter.Watermark)
	for _, pc := range filter.Partitions {
		r.restored[pc.TopicPartition] = pc
	}
	starts := map[record.TopicPartition]int64{}
	if storeCP != nil {
		for _, pc := range storeCP.Partitions {
			starts[pc.TopicPartition] = pc.Position
		}
	} else {
		for _, pc := range sinkCP.Partitions {
			starts[pc.TopicPartition] = pc.Low
		}
	}
	if sk, ok := r.p.src.(Seeker); ok {
		sk.StartAt(starts)
	} else if storeCP != nil {
		return errors.New("signalbox: the source cannot resume from the parked state's positions (it does not implement Seeker)")
	}
	r.cfg.logger.Info("restored checkpoint", zap.Int64("watermark", filter.Watermark),
		zap.Int("partitions", len(filter.Partitions)), zap.Bool("parked_state", storeCP != nil), zap.Bool("sink_checkpoint", sinkCP != nil))
	return nil
}

// readRestored re-reads the checkpoint sink's checkpoint when partitions
// are assigned (nil when there is none, or no checkpoint sink): in a group,
// another instance may have emitted and checkpointed them since this one
// restored at start (a group is joined after that), and its checkpoint,
// not the one read then, says which re-read records to skip (design C4,
// R3). A Claimer claims them first.
func (r *run) readRestored(ctx context.Context, assigned []record.PartitionInfo, member *record.GroupMember) (*record.Checkpoint, error) {
	cs := r.cfg.checkpointSink()
	if cs == nil || len(assigned) == 0 {
		return nil, nil
	}
	if c, ok := cs.(Claimer); ok {
		tps := make([]record.TopicPartition, len(assigned))
		for i, a := range assigned {
			tps[i] = a.TopicPartition
		}
		if err := c.Claim(ctx, member, tps); err != nil {
			return nil, fmt.Errorf("signalbox: claiming assigned partitions in the checkpoint sink: %w", err)
		}
	}
	cp, err := cs.Restore(ctx)
	if err != nil {
		return nil, fmt.Errorf("signalbox: restoring checkpoint at rebalance: %w", err)
	}
	return cp, nil
}

// refreshRestored takes the checkpoints of assigned partitions: of cp, the
// checkpoint sink's (readRestored), the newest position per partition wins.
//
// With neither a checkpoint sink nor a DurableStore, the checkpoint the
// source committed with the partition's offset (CheckpointCommitter) plays
// that role: a clean stop re-emits nothing. One whose watermark is more
// than max_future ahead of the clock is not restored (a checkpoint never
// restores such a time); the partition then skips nothing.
func (c *core) refreshRestored(assigned []record.PartitionInfo, cp *record.Checkpoint) {
	if c.cfg.checkpointSink() == nil && c.durable == nil {
		for _, a := range assigned {
			switch {
			case a.Checkpoint == nil:
			case a.Checkpoint.Watermark > c.futureBound(c.now):
				c.cfg.logger.Warn("committed checkpoint watermark ahead of the clock by more than max_future: not restored",
					zap.String("topic", a.Topic), zap.Int32("partition", a.Partition), zap.Int64("watermark", a.Checkpoint.Watermark))
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
func (c *core) restoreNewer(pc record.PartitionCheckpoint) {
	if old, ok := c.restored[pc.TopicPartition]; ok && old.Position >= pc.Position {
		return
	}
	c.restored[pc.TopicPartition] = pc
}

// buildCheckpoint builds the checkpoint as of everything released so far.
func (c *core) buildCheckpoint() record.Checkpoint {
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
