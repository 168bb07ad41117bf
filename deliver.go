package signalbox

// Calling a sink under the retry policy: what it rejects goes to the
// dead-letter sink; retries are logged, rate-limited per sink.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"go.uber.org/zap"
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

// The bucket bounds of the sink histograms.
var (
	// LatencyBuckets bound sink call and checkpoint durations, in seconds.
	LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// ReleaseBuckets bound the release latency beyond the delay, in seconds.
	ReleaseBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	// BatchBuckets bound the records per sink Write.
	BatchBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536}
)

// meteredSink is the decorator the engine installs around every sink: it
// times each call and runs the ordering audit. What the engine decides
// about a sink it reads from the sink's description, taken before the sink
// was wrapped (describe), so the meter passes on only the calls that carry
// behaviour: those of the exactly-once sink (meteredCheckpointSink) and
// RetryReporter. Its methods are called from the sink goroutine only;
// snapshot may be called from any goroutine. The per-record work is a few
// comparisons and, once live, one bucket search; the lock is taken once
// per call.
type meteredSink struct {
	Sink
	name  string        // for logs and reasons: the sink's kind, numbered like its metrics
	delay float64       // seconds
	live  *atomic.Int64 // Unix ms (WithClock) when the replay was done; 0 before
	audit bool          // the ordering audit applies (not the dead-letter sink)
	last  []int64       // the highest event time written, by task (partition number)
	mu    sync.Mutex    // guards st
	st    SinkStats     //
	now   func() time.Time
}

// meteredCheckpointSink wraps the exactly-once sink, and keeps its
// CheckpointSink and Claimer calls visible to the engine.
type meteredCheckpointSink struct {
	*meteredSink
	cs CheckpointSink
}

func (m meteredCheckpointSink) Restore(ctx context.Context) (*record.Checkpoint, error) {
	return m.cs.Restore(ctx)
}

func (m meteredCheckpointSink) FlushCheckpoint(ctx context.Context, cp record.Checkpoint) error {
	return m.timed(&m.st.FlushSeconds, func() error { return m.cs.FlushCheckpoint(ctx, cp) })
}

func (m meteredCheckpointSink) Claim(ctx context.Context, member *record.GroupMember, partitions []record.TopicPartition) error {
	c, ok := m.cs.(Claimer)
	if !ok {
		return nil
	}
	return c.Claim(ctx, member, partitions)
}

// instrument wraps the job's sinks and dead-letter sink (nil stays nil) in
// meters named after their descriptions (describeSinks), numbering repeats
// of a name; the exactly-once sink's keeps its CheckpointSink calls.
func instrument(c *config, live *atomic.Int64) ([]Sink, Sink, []*meteredSink) {
	var meters []*meteredSink
	seen := map[string]int{}
	wrap := func(s Sink, name, metric string, audit, exactlyOnce bool) Sink {
		m := &meteredSink{Sink: s, name: name, delay: c.delay.Seconds(), live: live, audit: audit, now: c.clock}
		m.st = SinkStats{Name: metric, WriteSeconds: newHistogram(LatencyBuckets), FlushSeconds: newHistogram(LatencyBuckets),
			BatchRecords: newHistogram(BatchBuckets), ReleaseSeconds: newHistogram(ReleaseBuckets)}
		meters = append(meters, m)
		if exactlyOnce {
			return meteredCheckpointSink{meteredSink: m, cs: s.(CheckpointSink)} // validate made sure
		}
		return m
	}
	out := make([]Sink, len(c.sinks))
	for i, s := range c.sinks {
		name := c.sinkInfo[i].Name
		if seen[name]++; seen[name] > 1 {
			name += "#" + strconv.Itoa(seen[name])
		}
		out[i] = wrap(s, name, name, true, i == c.exactlyOnce)
	}
	dead := c.deadLetter
	if dead != nil {
		dead = wrap(dead, c.deadInfo.Name, "dead_letter", false, false)
	}
	return out, dead, meters
}

// meter is m itself, for sinkName.
func (m *meteredSink) meter() *meteredSink { return m }

// ReportRetries hands hook to the wrapped sink when it retries inside a
// call (RetryReporter), counting each of those retries; for any other sink
// it does nothing.
func (m *meteredSink) ReportRetries(hook func(attempt int, err error, wait time.Duration)) {
	rr, ok := m.Sink.(RetryReporter)
	if !ok {
		return
	}
	rr.ReportRetries(func(attempt int, err error, wait time.Duration) {
		m.mu.Lock()
		m.st.Retries++
		m.mu.Unlock()
		hook(attempt, err, wait)
	})
}

func (m *meteredSink) Write(ctx context.Context, batch []record.Record) error {
	start := m.now()
	err := m.Sink.Write(ctx, batch)
	end := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.WriteSeconds.Observe(end.Sub(start).Seconds())
	if m.count(err) {
		return err // a retry writes the batch again: audit it then
	}
	m.st.Records += int64(len(batch))
	m.st.BatchRecords.Observe(float64(len(batch)))
	if m.audit {
		m.auditBatch(batch, float64(end.UnixNano())/1e9-m.delay, m.live.Load())
	}
	return nil
}

// auditBatch checks the order of a written batch per task and observes the
// release latency beyond the delay of each in-order record whose event time
// is after the end of the replay (liveSince, Unix ms; 0: not yet): at −
// event time, with at the write's end minus the delay, in seconds.
func (m *meteredSink) auditBatch(batch []record.Record, at float64, liveSince int64) {
	for i := range batch {
		r := &batch[i]
		if r.Timeless || r.Partition < 0 {
			continue
		}
		for int(r.Partition) >= len(m.last) {
			m.last = append(m.last, minEventTime)
		}
		if last := &m.last[r.Partition]; r.EventTime < *last {
			m.st.OutOfOrder++
			continue
		} else {
			*last = r.EventTime
		}
		if liveSince > 0 && r.EventTime >= liveSince && !r.Late {
			m.st.ReleaseSeconds.Observe(at - float64(r.EventTime)/1e3)
		}
	}
}

// minEventTime is below every event time.
const minEventTime = -1 << 63

func (m *meteredSink) Flush(ctx context.Context) error {
	return m.timed(&m.st.FlushSeconds, func() error { return m.Sink.Flush(ctx) })
}

// timed runs call and records its latency in h and its error, if any.
func (m *meteredSink) timed(h *Histogram, call func() error) error {
	start := m.now()
	err := call()
	d := m.now().Sub(start)
	m.mu.Lock()
	defer m.mu.Unlock()
	h.Observe(d.Seconds())
	m.count(err)
	return err
}

// count counts err: the records it rejects, or a failed call (retryable or
// not); it reports whether err is not nil. m.mu is held.
func (m *meteredSink) count(err error) bool {
	if err == nil {
		return false
	}
	if rej := retry.AsRejected(err); rej != nil {
		m.st.Rejected += int64(len(rej.Rejections)) // bad records, not a failing sink
		return true
	}
	m.st.Errors++
	if retry.IsRetryable(err) {
		m.st.Retries++
	}
	return true
}

func (m *meteredSink) snapshot() SinkStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.st
	s.WriteSeconds, s.FlushSeconds = s.WriteSeconds.clone(), s.FlushSeconds.clone()
	s.BatchRecords, s.ReleaseSeconds = s.BatchRecords.clone(), s.ReleaseSeconds.clone()
	return s
}
