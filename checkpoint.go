package signalbox

// Restoring the checkpoints a restart resumes from (a checkpoint sink's, a
// durable store's) and storing them with the durable store; the engine
// decides what a checkpoint claims (internal/engine checkpoint.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
)

// lateBlob is the key under which a DurableStore keeps the late counters.
const lateBlob = "late-counters"

type lateEntry struct {
	Topic     string      `json:"topic"`
	Partition int32       `json:"partition"`
	Counter   LateCounter `json:"counter"`
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
	bound := r.eng.FutureBound(now)
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

func (r *run) blobs() map[string][]byte {
	var ls []lateEntry
	for tp, c := range r.eng.LateCounters() {
		ls = append(ls, lateEntry{Topic: tp.Topic, Partition: tp.Partition, Counter: LateCounter(c)})
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
	var in engine.Restored
	if r.durable != nil {
		cp, blobs, err := r.durable.Restore()
		if err != nil {
			return fmt.Errorf("signalbox: restoring parked state: %w", err)
		}
		storeCP = cp
		in.Floors = r.durable.ParkedByPartition()
		if b := blobs[lateBlob]; len(b) > 0 {
			var ls []lateEntry
			if err := json.Unmarshal(b, &ls); err != nil {
				return fmt.Errorf("signalbox: restoring late counters: %w", err)
			}
			in.Late = make(map[record.TopicPartition]engine.LateCounter, len(ls))
			for _, l := range ls {
				in.Late[record.TopicPartition{Topic: l.Topic, Partition: l.Partition}] = engine.LateCounter(l.Counter)
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
		r.eng.Restore(in)
		return nil
	}
	if err := r.checkRestoredWatermark(filter, storeCP != nil); err != nil {
		return err
	}
	in.Checkpoint = filter
	r.eng.Restore(in)
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
