package signalbox

import (
	"context"

	"github.com/signalbox/signalbox/record"
)

// Source delivers raw records per partition, together with the evidence of
// where each partition ends. The Kafka source (sources/kafka) and the file
// source (sources/file) implement it.
//
// Lifecycle: Open once → Poll repeatedly from one goroutine → Close once.
// Commit may be called from another goroutine between Open and Close.
//
//   - Open connects. It must not read any record.
//   - Poll blocks until it has something to report or ctx is done. The first
//     Fetch that mentions a partition lists it in Assigned, with the end offset
//     snapshotted before any record of it was read. Poll returns ctx.Err()
//     when ctx is done; any other error is fatal to the pipeline.
//   - Commit records, per partition, the offset from which a restart must
//     re-read. signalbox only ever passes contiguous completed offsets.
//   - Close releases everything. Poll is not called after Close.
type Source interface {
	Open(ctx context.Context) error
	Poll(ctx context.Context) (record.Fetch, error)
	Commit(ctx context.Context, offsets map[record.TopicPartition]int64) error
	Close() error
}

// Pauser is implemented by sources that can stop fetching some partitions
// while the sinks lag. Without it, signalbox simply stops calling Poll, which
// bounds memory just as well but pauses every partition at once.
type Pauser interface {
	Pause(tps ...record.TopicPartition)
	Resume(tps ...record.TopicPartition)
}

// Seeker is implemented by sources that can start partitions at given
// offsets. signalbox calls StartAt before Open when a sink's checkpoint, not
// the consumer group, holds the offsets to resume from (exactly-once sinks).
type Seeker interface {
	StartAt(offsets map[record.TopicPartition]int64)
}
