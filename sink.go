package signalbox

// The Sink contract, its optional interfaces, and what each sink states
// (describe): the one place that decides how a sink is treated.

import (
	"context"
	"fmt"
	"time"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/record"
)

// Sink receives released records in event-time order.
//
// Lifecycle: Open once → Write batches (in order) and Flush, any number of
// times → Close once. All calls come from one goroutine.
//
//   - Write hands over a batch in release order. The sink may buffer its
//     records, but must never reorder records that share an OrderKey. The
//     batch's slice is the sink's only during the call: the engine fills it
//     again afterwards, so a sink that keeps records copies them (the
//     records' Key, Value and Headers are never reused and may be kept).
//   - Flush makes everything written so far durable. When it returns nil,
//     every record written before it is acknowledged: its offset may be
//     committed.
//   - Close releases resources. The engine calls it once, last: after the
//     final checkpoint on a graceful stop (everything is already flushed),
//     or after a fatal error, when nothing more is acknowledged. Close must
//     therefore never make durable what Flush (or FlushCheckpoint) has not
//     acknowledged where that would break the sink's guarantee: a
//     CheckpointSink aborts an open transaction and drops buffered records
//     (they are re-read from Kafka on restart), so a failed run leaves no
//     record visible beyond its last stored checkpoint. A plain
//     at-least-once sink may still flush its buffer in Close.
//
// Errors fall into three kinds (package retry):
//
//   - transient, marked retry.Retryable or retry.Throttled: the engine
//     retries the same call with backoff (retry.Policy), logging each retry
//     at warn, rate-limited; consumption pauses meanwhile. The call must
//     lose nothing.
//   - per-record, a *retry.RejectedError from Write, Flush or
//     FlushCheckpoint: the destination refused these records for their
//     data. The call did not complete; the sink has dropped them. The engine
//     writes them to the dead-letter sink with the sink's reason (their
//     original topic, partition, offset and event time kept), flushes it,
//     and repeats the call without them. Without a dead-letter sink Run
//     fails with ErrNoDeadLetter.
//   - anything else is fatal: Run stops, and the sink should make it sticky
//     (every later call returns it).
type Sink interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, batch []record.Record) error
	Flush(ctx context.Context) error
	Close() error
}

// SinkInfo is what a sink states about itself: its name, whether it is
// exactly once, whether it writes original bytes only or embeds values as
// JSON (record.SinkInfo documents each field).
type SinkInfo = record.SinkInfo

// SinkDescriber is implemented by a sink that describes itself (every
// built-in sink). New asks each sink's Info once, and every decision about
// the sink follows from that answer (describe, options.go): which sink
// stores the checkpoint, which are flushed at the flush linger, whether
// records are rendered as JSON, how the sink is named. A sink without Info
// is named "sink", writes rendered values, and is exactly once when it is
// a CheckpointSink.
type SinkDescriber interface {
	Info() SinkInfo
}

// CheckpointSink is a Sink that stores signalbox's checkpoint in the same
// transaction as its data, which makes delivery exactly-once. The engine
// treats a sink as one when its description says so (SinkInfo.ExactlyOnce;
// a CheckpointSink without Info is exactly once): a CheckpointSink that
// says it is not exactly once is flushed like any other sink, and none of
// the calls below is made.
//
//   - Restore is called after Open, before the first Write. It returns the
//     last committed checkpoint, or nil when there is none. Its Watermark
//     must be no higher than any of its partitions' own watermarks (the
//     lowest, when the sink keeps one per partition): a partition whose
//     checkpoint was fenced may carry an older claim (design R9).
//   - FlushCheckpoint replaces Flush: it makes everything written so far and
//     cp durable atomically. It is the only call that may make records
//     visible to a reader that trusts the checkpoint (a read_committed Kafka
//     consumer, a PostgreSQL reader of committed rows) beyond what an earlier
//     checkpoint covered, except where the sink's storage is idempotent per
//     record (PostgreSQL's unique (topic, partition, offset)).
//   - Close never commits: an open transaction is aborted, buffered rows
//     are dropped.
type CheckpointSink interface {
	Sink
	Restore(ctx context.Context) (*record.Checkpoint, error)
	FlushCheckpoint(ctx context.Context, cp record.Checkpoint) error
}

// Claimer is implemented by CheckpointSinks that fence checkpoints by
// partition ownership. The engine calls Claim when partitions are assigned,
// before it reads the checkpoint again (Restore), with the group membership
// they were assigned under (nil outside a consumer group). From then on the
// sink refuses a checkpoint of these partitions from an instance that
// claimed them earlier, or that writes under an older membership:
// FlushCheckpoint returns a *retry.FencedError naming the partitions it
// stored nothing of, and the engine skips their offset commit and goes on.
type Claimer interface {
	Claim(ctx context.Context, member *record.GroupMember, partitions []record.TopicPartition) error
}

// RetryReporter is implemented by sinks that retry inside a call (the HTTP
// bulk sink retries each request on 429 and 5xx). Run's sink goroutine
// calls ReportRetries once, before the first Write; the sink then calls
// hook before each wait (from any goroutine), and the engine logs it at
// warn with the sink's name, rate-limited.
type RetryReporter interface {
	ReportRetries(hook func(attempt int, err error, wait time.Duration))
}

// describeSinks asks each sink what it is (describe) and picks the sink
// that stores the checkpoint: the first that says it is exactly once
// (validate refuses a second, and one that is not a CheckpointSink).
func (c *config) describeSinks() {
	c.sinkInfo = make([]SinkInfo, len(c.sinks))
	c.exactlyOnce = -1
	for i, s := range c.sinks {
		c.sinkInfo[i] = describe(s)
		if c.sinkInfo[i].ExactlyOnce && c.exactlyOnce < 0 {
			c.exactlyOnce = i
		}
	}
	c.deadInfo = describe(c.deadLetter)
}

// describe is what s states about itself (SinkDescriber): the one place
// where the engine learns how to treat a sink. A sink without Info is named
// "sink" and is exactly once when it is a CheckpointSink.
func describe(s Sink) SinkInfo {
	info := SinkInfo{}
	if d, ok := s.(SinkDescriber); ok {
		info = d.Info()
	} else {
		_, info.ExactlyOnce = s.(CheckpointSink)
	}
	if info.Name == "" {
		info.Name = "sink"
	}
	return info
}

// removedDescriptions are methods by which a sink described itself before
// SinkInfo; a sink that has one of them and no Info is refused rather than
// silently described otherwise (CHANGELOG). (Name, the fourth, is too
// common a method name to refuse.)
var removedDescriptions = []struct {
	method string
	has    func(Sink) bool
}{
	{"BytesOnly", func(s Sink) bool { _, ok := s.(interface{ BytesOnly() bool }); return ok }},
	{"EmbedsValueJSON", func(s Sink) bool { _, ok := s.(interface{ EmbedsValueJSON() bool }); return ok }},
	{"CommitsSourceOffsets", func(s Sink) bool { _, ok := s.(interface{ CommitsSourceOffsets() bool }); return ok }},
}

// checkpointSink is the sink that stores the checkpoint, nil when none
// (describeSinks picks it; validate makes sure it is a CheckpointSink).
func (c *config) checkpointSink() CheckpointSink {
	if c.exactlyOnce < 0 {
		return nil
	}
	cs, _ := c.sinks[c.exactlyOnce].(CheckpointSink)
	return cs
}

// validateSinks checks what each sink states about itself (describe): at
// most one is exactly once, and it is a CheckpointSink; no sink describes
// itself by a method SinkInfo replaced.
func (c *config) validateSinks() []error {
	var errs []error
	check := func(field string, s Sink, info SinkInfo) {
		if _, ok := s.(SinkDescriber); !ok && s != nil {
			for _, m := range removedDescriptions {
				if m.has(s) {
					errs = append(errs, fielderr.New(field, "%T has a %s method, which no longer describes a sink: return it in Info() SinkInfo instead (CHANGELOG)", s, m.method))
				}
			}
		}
		if _, ok := s.(CheckpointSink); info.ExactlyOnce && !ok {
			errs = append(errs, fielderr.New(field, "%T says it is exactly once (SinkInfo.ExactlyOnce) but does not store the checkpoint: it has no Restore and FlushCheckpoint (CheckpointSink)", s))
		}
	}
	for i, s := range c.sinks {
		field := fmt.Sprintf("sinks[%d]", i)
		check(field, s, c.sinkInfo[i])
		if c.sinkInfo[i].ExactlyOnce && i != c.exactlyOnce {
			errs = append(errs, fielderr.New(field, "only one exactly-once sink (one that stores the checkpoint) per job, and sinks[%d] is one: "+
				"a restart resumes from one sink's checkpoint, so a second would lose what its last transaction did not commit", c.exactlyOnce))
		}
	}
	if c.deadLetter != nil {
		check("dead_letter", c.deadLetter, c.deadInfo)
	}
	return errs
}
