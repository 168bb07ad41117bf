package signalbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// retryLogEvery is the rate limit of the retry warnings: per sink, the
// first retry is logged at once, later ones at most once per interval, with
// the number left out in between.
const retryLogEvery = 10 * time.Second

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
	if cap(o.records) > smallBatch {
		clear(o.records) // nothing keeps the records' buffers reachable
		select {
		case w.r.spare <- o.records[:0]:
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
	if len(o.dead) > 0 {
		if err := w.toDeadLetter(ctx, "write", o.dead, cfg.deadLetter.Write); err != nil {
			return err
		}
	}
	if len(o.records) > 0 {
		for _, s := range cfg.sinks {
			if err := w.deliver(ctx, s, "write", o.records, s.Write); err != nil {
				return err
			}
		}
	}
	if o.cp == nil {
		if o.flush {
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
		err := w.deliver(ctx, cs, "checkpoint", nil, func(ctx context.Context, _ []record.Record) error { return cs.FlushCheckpoint(ctx, *o.cp) })
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
	if !o.noCommit {
		if err := r.commit(ctx, o.cp, o.final, fenced); err != nil {
			return err
		}
		r.countCheckpoint(o.cpAt)
		w.report(Event{Kind: EventCheckpoint, Watermark: o.cp.Watermark}) // the engine goroutine emits it
	}
	if o.ack != nil {
		o.fenced = fenced // read by the engine after ack (noCommit)
		close(o.ack)      // the engine waits for it (barrier)
	}
	return nil
}

// flushPlain flushes every sink that is not a CheckpointSink: what they
// hold becomes visible, and acknowledged. A CheckpointSink is flushed only
// with a checkpoint (its transaction commits with it).
func (w *writer) flushPlain(ctx context.Context) error {
	for _, s := range w.r.cfg.sinks {
		if _, ok := s.(CheckpointSink); ok {
			continue
		}
		if err := w.deliver(ctx, s, "flush", nil, func(ctx context.Context, _ []record.Record) error { return s.Flush(ctx) }); err != nil {
			return err
		}
	}
	return nil
}

// retry runs one call on s under the retry policy, logging each retry.
func (w *writer) retry(ctx context.Context, s Sink, fn func(context.Context) error) error {
	return retry.Policy{OnRetry: w.log.hook(sinkName(s))}.Do(ctx, fn)
}

// deliver runs call(batch) on s under the retry policy. When the sink
// rejects records (retry.RejectedError), deliver dead-letters them — written
// and flushed, so that no later commit can pass them — and repeats the call
// without them. Without a dead-letter sink a rejection is fatal
// (ErrNoDeadLetter). what names the call in errors.
func (w *writer) deliver(ctx context.Context, s Sink, what string, batch []record.Record, call func(context.Context, []record.Record) error) error {
	return w.call(ctx, s, "sink "+sinkName(s)+": "+what, batch, call, func(rej *retry.RejectedError) error { return w.deadLetter(ctx, s, rej) })
}

// call runs fn(batch) on s under the retry policy, hands what s rejects to
// onReject and repeats fn without it. label prefixes s's own errors.
func (w *writer) call(ctx context.Context, s Sink, label string, batch []record.Record,
	fn func(context.Context, []record.Record) error, onReject func(*retry.RejectedError) error) error {
	for {
		err := w.retry(ctx, s, func(ctx context.Context) error { return fn(ctx, batch) })
		rej := retry.AsRejected(err)
		if rej == nil {
			if err != nil {
				return fmt.Errorf("signalbox: %s: %w", label, err)
			}
			return nil
		}
		if err := onReject(rej); err != nil {
			return err
		}
		batch = without(batch, rej.Rejections)
	}
}

// deadLetter hands records a sink rejected to the dead-letter sink, each
// with the sink's reason, and flushes it.
func (w *writer) deadLetter(ctx context.Context, s Sink, rej *retry.RejectedError) error {
	r, dl := w.r, w.r.cfg.deadLetter
	reasons := make([]string, len(rej.Rejections))
	for i, rj := range rej.Rejections {
		reasons[i] = "sink " + sinkName(s) + ": " + rj.Reason
	}
	if dl == nil {
		return errNoDeadLetter(&rej.Rejections[0].Record, reasons[0])
	}
	dead := make([]record.Record, len(rej.Rejections))
	for i := range rej.Rejections {
		dead[i] = deadLetter(&rej.Rejections[i].Record, reasons[i])
	}
	if err := w.toDeadLetter(ctx, "write", dead, dl.Write); err != nil {
		return err
	}
	if err := w.flushDeadLetter(ctx); err != nil {
		return err
	}
	r.sinkDead.Add(int64(len(dead)))
	for i := range dead {
		w.report(deadEvent(&dead[i], reasons[i]))
	}
	return nil
}

func (w *writer) flushDeadLetter(ctx context.Context) error {
	dl := w.r.cfg.deadLetter
	if dl == nil {
		return nil
	}
	return w.toDeadLetter(ctx, "flush", nil, func(ctx context.Context, _ []record.Record) error { return dl.Flush(ctx) })
}

// toDeadLetter runs call(batch) on the dead-letter sink under the retry
// policy. A record the dead-letter sink rejects in turn has nowhere left to
// go, and stopping would stop every rerun on it again: it is dropped and
// logged at error with its coordinates and both reasons, and the call is
// repeated without it.
func (w *writer) toDeadLetter(ctx context.Context, what string, batch []record.Record, call func(context.Context, []record.Record) error) error {
	dl := w.r.cfg.deadLetter
	return w.call(ctx, dl, "dead-letter sink "+sinkName(dl)+": "+what, batch, call, func(rej *retry.RejectedError) error {
		for _, rj := range rej.Rejections {
			reason, _ := lastHeader(&rj.Record, record.ReasonHeader)
			w.r.cfg.logger.Error("the dead-letter sink rejected a record: dropped", zap.String("topic", rj.Record.Topic),
				zap.Int32("partition", rj.Record.Partition), zap.Int64("offset", rj.Record.Offset),
				zap.String("reason", reason), zap.String("dead_letter_reason", rj.Reason))
		}
		return nil
	})
}

// without returns batch minus the rejected records (matched by topic,
// partition and offset), in order, without touching batch.
func without(batch []record.Record, rej []retry.Rejection) []record.Record {
	if len(batch) == 0 {
		return batch
	}
	gone := make(map[record.TopicPartition]map[int64]bool, 1)
	for i := range rej {
		tp := record.TopicPartition{Topic: rej[i].Record.Topic, Partition: rej[i].Record.Partition}
		if gone[tp] == nil {
			gone[tp] = map[int64]bool{}
		}
		gone[tp][rej[i].Record.Offset] = true
	}
	out := make([]record.Record, 0, len(batch))
	for i := range batch {
		if !gone[record.TopicPartition{Topic: batch[i].Topic, Partition: batch[i].Partition}][batch[i].Offset] {
			out = append(out, batch[i])
		}
	}
	return out
}

// lastHeader is the value of r's last header named key. (sinks/envelope's
// Reason does the same for the sinks; the engine does not import sinks/.)
func lastHeader(r *record.Record, key string) (string, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return string(r.Headers[i].Value), true
		}
	}
	return "", false
}

// sinkName names a sink in logs, reasons and metrics: its Name (Namer), else
// "sink".
func sinkName(s Sink) string {
	if n, ok := s.(Namer); ok {
		return n.Name()
	}
	return "sink"
}

// retryLog writes the retry warnings, rate-limited per sink.
type retryLog struct {
	logger *zap.Logger
	every  time.Duration
	now    func() time.Time
	mu     sync.Mutex
	last   map[string]time.Time
	quiet  map[string]int // retries not logged since the last line
}

// hook returns the retry.Policy.OnRetry of one sink. It is safe for
// concurrent use (a sink may retry on its own goroutine).
func (l *retryLog) hook(sink string) func(attempt int, err error, wait time.Duration) {
	return func(attempt int, err error, wait time.Duration) {
		now := l.now()
		l.mu.Lock()
		if l.last == nil {
			l.last, l.quiet = map[string]time.Time{}, map[string]int{}
		}
		if t, ok := l.last[sink]; ok && now.Sub(t) < l.every {
			l.quiet[sink]++
			l.mu.Unlock()
			return
		}
		quiet := l.quiet[sink]
		l.last[sink], l.quiet[sink] = now, 0
		l.mu.Unlock()
		l.logger.Warn("sink retry: consumption paused meanwhile", zap.String("sink", sink), zap.Int("attempt", attempt),
			zap.Duration("wait", wait), zap.Error(err), zap.Int("retries_not_logged", quiet))
	}
}

// commit commits every partition's Low offset of cp to the source, with
// the rest of cp where the source keeps it (CheckpointCommitter), except
// the fenced ones (their checkpoint was refused by the checkpoint sink). A
// failed commit loses nothing (the next checkpoint commits again), except at
// the final one, where it is an error. A commit the source skips because
// this member does not own the partitions now is counted as skipped, never
// as committed, and logged at warn.
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
	if oc, ok := r.cfg.checkpointSink().(SourceOffsetCommitter); ok && oc.CommitsSourceOffsets() {
		r.countCommit(offs, nil)
		return nil // committed in the sink's transaction
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
