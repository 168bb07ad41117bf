package signalbox

// Committing a checkpoint's offsets to the source.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/record"
)

// commit commits every partition's Low offset of cp to the source, with
// the rest of cp where the source keeps it (CheckpointCommitter), except
// the fenced ones (their checkpoint was refused by the checkpoint sink). A
// failed commit loses nothing (the next checkpoint commits again), except at
// the final one, where it is an error. A commit the source skips because
// this member does not own the partitions now is counted as skipped, never
// as committed, and logged at warn. A source that reads without a consumer
// group (GroupReader) stores no commit: none is made, none counted (unless
// the checkpoint sink commits the offsets in its transaction, to its own
// group).
func (r *run) commit(ctx context.Context, cp *record.Checkpoint, final bool, fenced []record.TopicPartition) error {
	offs := make(map[record.TopicPartition]int64, len(cp.Partitions))
	for _, pc := range cp.Partitions {
		offs[pc.TopicPartition] = pc.Low
	}
	for _, tp := range fenced {
		delete(offs, tp)
	}
	if len(fenced) > 0 {
		r.countCommitSkipped()
	}
	if len(offs) == 0 {
		return nil
	}
	if r.cfg.exactlyOnce >= 0 && r.cfg.sinkInfo[r.cfg.exactlyOnce].CommitsSourceOffsets {
		r.countCommit(offs, nil)
		return nil // committed in the sink's transaction
	}
	if r.noGroup {
		return nil
	}
	var err error
	if cc, ok := r.p.src.(CheckpointCommitter); ok {
		err = cc.CommitCheckpoint(ctx, ownedCheckpoint(cp, offs))
	} else {
		err = r.p.src.Commit(ctx, offs)
	}
	var skip *record.CommitSkippedError
	if errors.As(err, &skip) {
		r.cfg.logger.Warn("offset commit skipped: this member does not own the partitions now; their owner re-reads from the last commit",
			zap.Stringers("partitions", tpStringers(skip.Partitions)), zap.String("reason", skip.Reason))
		r.countCommitSkipped()
		for _, tp := range skip.Partitions {
			delete(offs, tp)
		}
		if len(offs) == 0 {
			return nil
		}
		err = nil
	}
	r.countCommit(offs, err)
	if err != nil {
		if final {
			return fmt.Errorf("signalbox: commit: %w", err)
		}
		r.cfg.logger.Warn("offset commit failed; will retry at the next checkpoint", zap.Error(err))
	}
	return nil
}

// ownedCheckpoint is cp restricted to the partitions of offs.
func ownedCheckpoint(cp *record.Checkpoint, offs map[record.TopicPartition]int64) record.Checkpoint {
	if len(offs) == len(cp.Partitions) {
		return *cp
	}
	out := *cp
	out.Partitions = make([]record.PartitionCheckpoint, 0, len(offs))
	for _, pc := range cp.Partitions {
		if _, ok := offs[pc.TopicPartition]; ok {
			out.Partitions = append(out.Partitions, pc)
		}
	}
	return out
}

// tpString prints a partition as topic/partition in logs.
type tpString record.TopicPartition

func (t tpString) String() string { return t.Topic + "/" + strconv.Itoa(int(t.Partition)) }

func tpStringers(tps []record.TopicPartition) []tpString {
	out := make([]tpString, len(tps))
	for i, tp := range tps {
		out[i] = tpString(tp)
	}
	return out
}
