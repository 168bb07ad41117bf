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
		return nil
	}
	if cfg.deadLetter != nil {
		if err := policy.Do(ctx, cfg.deadLetter.Flush); err != nil {
			return fmt.Errorf("signalbox: dead-letter flush: %w", err)
		}
	}
	for _, s := range cfg.sinks {
		flush := s.Flush
		if cs, ok := s.(CheckpointSink); ok {
			flush = func(ctx context.Context) error { return cs.FlushCheckpoint(ctx, *o.cp) }
		}
		if err := policy.Do(ctx, flush); err != nil {
			return fmt.Errorf("signalbox: sink flush: %w", err)
		}
	}
	commit := make(map[record.TopicPartition]int64, len(o.cp.Partitions))
	for _, pc := range o.cp.Partitions {
		commit[pc.TopicPartition] = pc.Low
	}
	if len(commit) > 0 {
		if err := r.p.src.Commit(ctx, commit); err != nil {
			if o.final {
				return fmt.Errorf("signalbox: commit: %w", err)
			}
			// A failed commit loses nothing: the next checkpoint commits again.
			cfg.logger.Warn("offset commit failed; will retry at the next checkpoint", zap.Error(err))
		}
	}
	r.p.mu.Lock()
	r.p.stats.Checkpoints++
	r.p.mu.Unlock()
	r.acks <- Event{Kind: EventCheckpoint, Watermark: o.cp.Watermark} // the engine goroutine emits it
	return nil
}

// restore loads the checkpoint of the first CheckpointSink, if any: records
// the source re-delivers below a partition's saved position, with event time
// at or below the saved watermark, were already emitted and are skipped.
func (r *run) restore(ctx context.Context) error {
	for _, s := range r.cfg.sinks {
		cs, ok := s.(CheckpointSink)
		if !ok {
			continue
		}
		cp, err := cs.Restore(ctx)
		if err != nil {
			return fmt.Errorf("signalbox: restoring checkpoint: %w", err)
		}
		if cp == nil {
			return nil
		}
		r.cpWM = cp.Watermark
		r.strat.Restore(cp.Watermark)
		r.wm = max(r.wm, cp.Watermark)
		starts := make(map[record.TopicPartition]int64, len(cp.Partitions))
		for _, pc := range cp.Partitions {
			r.restored[pc.TopicPartition] = pc
			starts[pc.TopicPartition] = pc.Low
		}
		if sk, ok := r.p.src.(Seeker); ok {
			sk.StartAt(starts)
		}
		r.cfg.logger.Info("restored checkpoint", zap.Int64("watermark", cp.Watermark), zap.Int("partitions", len(cp.Partitions)))
		return nil
	}
	return nil
}
