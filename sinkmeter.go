package signalbox

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

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
