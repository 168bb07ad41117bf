package signalbox

import (
	"context"

	"github.com/signalbox/signalbox/record"
)

// Sink receives released records in event-time order.
//
// Lifecycle: Open once → Write batches (in order) and Flush, any number of
// times → Close once. All calls come from one goroutine.
//
//   - Write hands over a batch in release order. The sink may buffer it, but
//     must never reorder records that share an OrderKey.
//   - Flush makes everything written so far durable. When it returns nil,
//     every record written before it is acknowledged: its offset may be
//     committed. A sink that returns an error marked retryable
//     (retry.Retryable) is retried with backoff by signalbox's retry
//     policy; any other error is fatal.
//   - Close flushes and releases resources.
type Sink interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, batch []record.Record) error
	Flush(ctx context.Context) error
	Close() error
}

// CheckpointSink is a Sink that stores signalbox's checkpoint in the same
// transaction as its data, which makes delivery exactly-once.
//
//   - Restore is called after Open, before the first Write. It returns the
//     last committed checkpoint, or nil when there is none.
//   - FlushCheckpoint replaces Flush: it makes everything written so far and
//     cp durable atomically.
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

// Purger is implemented by sinks that can delete everything they hold, for
// tests and migrations.
type Purger interface {
	Purge(ctx context.Context) error
}
