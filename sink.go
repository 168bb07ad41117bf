package signalbox

import (
	"context"
	"time"

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

// BytesSink is implemented by a Sink that writes keys and values as their
// original bytes only (the Kafka sink): when every sink of a pipeline
// reports true, the engine only checks a schema'd record at ingest and
// never renders it as JSON (record.Record.DecodedKey and DecodedValue stay
// nil).
type BytesSink interface {
	BytesOnly() bool
}

// JSONValueSink is implemented by a Sink that embeds values in JSON and
// copies a value marked record.Record.ValueJSON without validating it (the
// JSONL sink, through sinks/envelope). When one reports true, the engine
// validates on its poller goroutine the values that decoding did not (the
// time and key do not come from JSON fields), while their bytes are fresh
// from the source, and marks the valid ones: the sink goroutine, through
// which every record passes one at a time, then only copies them.
type JSONValueSink interface {
	EmbedsValueJSON() bool
}

// CheckpointSink is a Sink that stores signalbox's checkpoint in the same
// transaction as its data, which makes delivery exactly-once.
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

// SourceOffsetCommitter is implemented by sinks that commit the source's
// consumer offsets themselves, in the same transaction as their data (Kafka's
// AddOffsetsToTxn). When one reports true, signalbox does not also commit
// through the source.
type SourceOffsetCommitter interface {
	CommitsSourceOffsets() bool
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

// Namer is implemented by sinks that name themselves in logs, dead-letter
// reasons and the sink label of the metrics (the built-in sinks: "jsonl",
// "kafka", "postgres", "bulk"). A sink without it is named "sink"; repeats
// of one name are numbered "#2", "#3" ….
type Namer interface {
	Name() string
}

// RetryReporter is implemented by sinks that retry inside a call (the HTTP
// bulk sink retries each request on 429 and 5xx). Run's sink goroutine
// calls ReportRetries once, before the first Write; the sink then calls
// hook before each wait (from any goroutine), and the engine logs it at
// warn with the sink's name, rate-limited.
type RetryReporter interface {
	ReportRetries(hook func(attempt int, err error, wait time.Duration))
}
