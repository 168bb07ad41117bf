package signalbox

// Calling a sink under the retry policy: what it rejects goes to the
// dead-letter sink; retries are logged, rate-limited per sink.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// retryLogEvery is the rate limit of the retry warnings: per sink, the
// first retry is logged at once, later ones at most once per interval, with
// the number left out in between.
const retryLogEvery = 10 * time.Second

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
		return engine.NoDeadLetter(&rej.Rejections[0].Record, reasons[0])
	}
	dead := make([]record.Record, len(rej.Rejections))
	for i := range rej.Rejections {
		dead[i] = engine.DeadLetter(&rej.Rejections[i].Record, reasons[i])
	}
	if err := w.toDeadLetter(ctx, "write", dead, dl.Write); err != nil {
		return err
	}
	if err := w.flushDeadLetter(ctx); err != nil {
		return err
	}
	r.sinkDead.Add(int64(len(dead)))
	for i := range dead {
		w.report(event(engine.DeadEvent(&dead[i], reasons[i])))
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

// sinkName names a sink in logs and reasons: its meter's name (numbered as
// in the metrics) once Run wrapped it, else its description's.
func sinkName(s Sink) string {
	if m, ok := s.(interface{ meter() *meteredSink }); ok {
		return m.meter().name
	}
	return describe(s).Name
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
