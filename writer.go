package signalbox

// The sink goroutine: each out batch to every sink in order, the flushes,
// and a checkpoint's flush and commit (deliver.go calls a sink); the
// commit of a checkpoint's offsets to the source.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"go.uber.org/zap"
)

// write is the sink goroutine: it writes each out batch to every sink in
// order, and on a checkpoint flushes the dead-letter sink, then the sinks
// (storing the checkpoint with the data where a sink can), then commits the
// checkpoint's Low offsets to the source. A record's offset is therefore
// committed only after every sink has acknowledged it, or has rejected it
// and the dead-letter sink has acknowledged it.
func (r *run) write(ctx context.Context) {
	w := newWriter(r, func(e Event) { r.acks <- e })
	failed := false
	for o := range r.outs {
		if failed {
			continue // drain so the engine never blocks; nothing more is written
		}
		if err := w.writeOne(ctx, o); err != nil {
			failed = true
			r.errs <- err
			continue
		}
		w.giveBack(o)
	}
}

// writer is the sink goroutine's state.
type writer struct {
	r   *run
	log *retryLog
	// report hands the engine goroutine what the sinks acknowledged
	// (EventCheckpoint) or refused (EventFenced, EventDead).
	report func(Event)
	// routed is the batch of a routed sink (WithRoutedSink), reused.
	routed []record.Record
}

// newWriter returns the sinks' writer for r, reporting through report.
func newWriter(r *run, report func(Event)) *writer {
	w := &writer{r: r, report: report, log: &retryLog{logger: r.cfg.logger, every: retryLogEvery, now: time.Now}} // wall time: a log rate limit
	for _, s := range w.all() {
		if rr, ok := s.(RetryReporter); ok {
			rr.ReportRetries(w.log.hook(sinkName(s)))
		}
	}
	return w
}

// giveBack returns o's batch to the engine as a spare once it is written,
// if it is large (batchFor).
func (w *writer) giveBack(o *out) {
	if cap(o.Records) > engine.SmallBatch {
		clear(o.Records) // nothing keeps the records' buffers reachable
		select {
		case w.r.spare <- o.Records[:0]:
		default:
		}
	}
}

func (w *writer) all() []Sink {
	if w.r.cfg.deadLetter == nil {
		return w.r.cfg.sinks
	}
	return append(w.r.cfg.sinks[:len(w.r.cfg.sinks):len(w.r.cfg.sinks)], w.r.cfg.deadLetter)
}

func (w *writer) writeOne(ctx context.Context, o *out) error {
	r, cfg := w.r, w.r.cfg
	if len(o.Dead) > 0 {
		if err := w.toDeadLetter(ctx, "write", o.Dead, cfg.deadLetter.Write); err != nil {
			return err
		}
	}
	if len(o.Records) > 0 {
		for i, s := range cfg.sinks {
			batch := o.Records
			if cfg.routedSink(i) {
				w.routed = routeBatch(o, i, w.routed)
				if batch = w.routed; len(batch) == 0 {
					continue
				}
			}
			if err := w.deliver(ctx, s, "write", batch, s.Write); err != nil {
				return err
			}
		}
		clear(w.routed) // nothing keeps the records' buffers reachable
	}
	if o.CP == nil {
		if o.Flush {
			// Idle flush (WithFlushLinger): the at-least-once sinks make
			// what they hold visible; nothing is committed.
			if err := w.flushDeadLetter(ctx); err != nil {
				return err
			}
			return w.flushPlain(ctx)
		}
		return nil
	}
	// The dead-letter sink first: no checkpoint may cover a dead record it
	// has not acknowledged. Records a sink rejects below are flushed to it
	// before that sink's call is repeated.
	if err := w.flushDeadLetter(ctx); err != nil {
		return err
	}
	// Plain sinks first, the checkpoint sink last: its checkpoint must never
	// cover a record another sink has not acknowledged (or rejected, and the
	// dead-letter sink acknowledged).
	if err := w.flushPlain(ctx); err != nil {
		return err
	}
	var fenced []record.TopicPartition
	if cs := cfg.checkpointSink(); cs != nil {
		err := w.deliver(ctx, cs, "checkpoint", nil, func(ctx context.Context, _ []record.Record) error { return cs.FlushCheckpoint(ctx, *o.CP) })
		if fe := retry.AsFenced(err); fe != nil {
			// Another member owns these partitions now: their records are
			// its to write, from the last checkpoint. This member learns
			// of the revoke from the source, later.
			fenced = fe.Partitions
			for _, tp := range fenced {
				w.report(Event{Kind: EventFenced, Partition: tp})
			}
			cfg.logger.Warn("checkpoint fenced: another member owns these partitions now; nothing of them was stored, and their offsets are not committed",
				zap.Stringers("partitions", tpStringers(fenced)), zap.Error(fe.Err))
		} else if err != nil {
			return err
		}
	}
	if !o.NoCommit {
		if err := r.commit(ctx, o.CP, o.Final, fenced); err != nil {
			return err
		}
		r.countCheckpoint(o.CPAt)
		w.report(Event{Kind: EventCheckpoint, Watermark: o.CP.Watermark}) // the engine goroutine emits it
	}
	if o.ack != nil {
		o.fenced = fenced // read by the engine after ack (noCommit)
		close(o.ack)      // the engine waits for it (barrier)
	}
	return nil
}

// flushPlain flushes every sink that is not exactly once: what they hold
// becomes visible, and acknowledged. The exactly-once sink is flushed only
// with a checkpoint (its transaction commits with it).
func (w *writer) flushPlain(ctx context.Context) error {
	for i, s := range w.r.cfg.sinks {
		if i == w.r.cfg.exactlyOnce {
			continue
		}
		if err := w.deliver(ctx, s, "flush", nil, func(ctx context.Context, _ []record.Record) error { return s.Flush(ctx) }); err != nil {
			return err
		}
	}
	return nil
}

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
