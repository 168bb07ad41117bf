package signalbox

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/retry"
)

// write is the sink goroutine: it writes each out batch to every sink in
// order, and on a checkpoint flushes the dead-letter sink, then the sinks
// (storing the checkpoint with the data where a sink can), then commits the
// checkpoint's Low offsets to the source. A record's offset is therefore
// committed only after every sink has acknowledged it.
func (r *run) write(ctx context.Context) {
	cfg := r.cfg
	policy := retry.Policy{OnRetry: func(attempt int, err error, wait time.Duration) {
		cfg.logger.Warn("sink busy: retrying, consumption paused meanwhile", zap.Int("attempt", attempt), zap.Duration("wait", wait), zap.Error(err))
	}}
	failed := false
	for o := range r.outs {
		if failed {
			continue // drain so the engine never blocks; nothing more is written
		}
		if err := r.writeOne(ctx, policy, o); err != nil {
			failed = true
			r.errs <- err
		}
	}
}

func (r *run) writeOne(ctx context.Context, policy retry.Policy, o *out) error {
	cfg := r.cfg
	if len(o.dead) > 0 {
		if err := policy.Do(ctx, func(ctx context.Context) error { return cfg.deadLetter.Write(ctx, o.dead) }); err != nil {
			return fmt.Errorf("signalbox: dead-letter sink: %w", err)
		}
	}
	if len(o.records) > 0 {
		for _, s := range cfg.sinks {
			if err := policy.Do(ctx, func(ctx context.Context) error { return s.Write(ctx, o.records) }); err != nil {
				return fmt.Errorf("signalbox: sink write: %w", err)
			}
		}
	}
	if o.cp == nil {
		if o.flush {
			return r.flushAtLeastOnce(ctx, policy)
		}
		return nil
	}
	if cfg.deadLetter != nil {
		if err := policy.Do(ctx, cfg.deadLetter.Flush); err != nil {
			return fmt.Errorf("signalbox: dead-letter flush: %w", err)
		}
	}
	// Plain sinks first, the checkpoint sink last: its checkpoint must never
	// cover a record another sink has not acknowledged.
	for _, s := range cfg.sinks {
		if _, ok := s.(CheckpointSink); ok {
			continue
		}
		if err := policy.Do(ctx, s.Flush); err != nil {
			return fmt.Errorf("signalbox: sink flush: %w", err)
		}
	}
	if cs := cfg.checkpointSink(); cs != nil {
		if err := policy.Do(ctx, func(ctx context.Context) error { return cs.FlushCheckpoint(ctx, *o.cp) }); err != nil {
			return fmt.Errorf("signalbox: sink flush: %w", err)
		}
	}
	if !o.noCommit {
		if err := r.commit(ctx, o.cp, o.final); err != nil {
			return err
		}
		r.countCheckpoint(o.cpAt)
		r.acks <- Event{Kind: EventCheckpoint, Watermark: o.cp.Watermark} // the engine goroutine emits it
	}
	if o.ack != nil {
		close(o.ack) // the engine waits for it (barrier)
	}
	return nil
}

// flushAtLeastOnce flushes the sinks whose records become visible on Flush
// (every sink that is not a CheckpointSink, and the dead-letter sink), so
// that readers see released records within the flush linger. Nothing is
// committed: commits follow checkpoints only.
func (r *run) flushAtLeastOnce(ctx context.Context, policy retry.Policy) error {
	sinks := r.cfg.sinks
	if r.cfg.deadLetter != nil {
		sinks = append(sinks[:len(sinks):len(sinks)], r.cfg.deadLetter)
	}
	for _, s := range sinks {
		if _, ok := s.(CheckpointSink); ok {
			continue
		}
		if err := policy.Do(ctx, s.Flush); err != nil {
			return fmt.Errorf("signalbox: sink flush: %w", err)
		}
	}
	return nil
}

// commit commits every partition's Low offset of cp to the source. A failed
// commit loses nothing (the next checkpoint commits again), except at the
// final one, where it is an error.
func (r *run) commit(ctx context.Context, cp *record.Checkpoint, final bool) error {
	offs := make(map[record.TopicPartition]int64, len(cp.Partitions))
	for _, pc := range cp.Partitions {
		offs[pc.TopicPartition] = pc.Low
	}
	if len(offs) == 0 {
		return nil
	}
	if oc, ok := r.cfg.checkpointSink().(SourceOffsetCommitter); ok && oc.CommitsSourceOffsets() {
		r.countCommit(offs, nil)
		return nil // committed in the sink's transaction
	}
	err := r.p.src.Commit(ctx, offs)
	r.countCommit(offs, err)
	if err != nil {
		if final {
			return fmt.Errorf("signalbox: commit: %w", err)
		}
		r.cfg.logger.Warn("offset commit failed; will retry at the next checkpoint", zap.Error(err))
	}
	return nil
}
