package record

import (
	"cmp"
	"strings"
	"time"
)

// TopicPartition names one Kafka partition (or one file, for file sources).
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Compare orders partitions by topic, then partition number: -1, 0 or +1,
// for slices.SortFunc and slices.BinarySearchFunc.
func (tp TopicPartition) Compare(o TopicPartition) int {
	return cmp.Or(strings.Compare(tp.Topic, o.Topic), cmp.Compare(tp.Partition, o.Partition))
}

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record as it travels through signalbox: raw fields from the
// source, then the decoded event time and ordering key. The fields narrower
// than a word come last, so that they pack: the engine copies, clears and
// scans millions of records, and every byte of one counts.
type Record struct {
	// Raw, as delivered by the source (Partition is among the narrow
	// fields at the end).
	Topic     string
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time // the Kafka record timestamp (zero for file sources)

	// Decoded by the engine from the input's time and key settings.
	EventTime int64 // event time, milliseconds since the Unix epoch
	// OrderKey is the ordering key (the Kafka key or a JSON field). From
	// the Kafka key it shares Key's bytes: change a record's Key by
	// assigning a new slice, never by writing into the old one.
	OrderKey string

	// Schema'd keys and values (an input with a decoder): Key and Value keep
	// the original bytes, which the Kafka and dead-letter sinks write; the
	// engine sets these for sinks that write JSON, at ingest (or at
	// release, when a Transform runs or the durable store kept only the
	// bytes). Nil and 0 when the input has no such decoder, or when every
	// sink writes original bytes. A JSON input's record whose processing
	// ran as it was decoded (package config, docs/design.md K12) holds its
	// result in DecodedValue from then until its release, where the
	// Process takes it: no sink and no dead letter ever sees it.
	DecodedKey   []byte // the key as JSON
	DecodedValue []byte // the value as JSON

	// Set with Late: how late it is, in ms (0 when not late): its
	// partition's mark by the data, or the release mark it met, minus its
	// event time (docs/design.md L1).
	LateBy int64

	Partition     int32
	KeySchemaID   int32 // the key's writer schema id, 0 when none
	ValueSchemaID int32 // the value's writer schema id, 0 when none
	Timeless      bool  // from a `time: none` input: never parked, never late
	// ValueJSON reports that Value is known to be valid JSON (and UTF-8)
	// on one line: the engine's decoder sets it when finding a JSON field
	// (time: field, key: field) validated the whole value on the way, and
	// the engine validates the other values for a sink that trusts the
	// mark (SinkInfo.EmbedsValueJSON), so that a sink embedding values in
	// JSON (sinks/envelope) does not validate it again. False means unknown, not invalid. Whoever changes
	// Value clears it (the engine does before a Transform); the durable
	// store does not keep it.
	ValueJSON bool
	Late      bool // set at ingest: late (docs/design.md L1), whatever the late policy; dead letters of late records too
}

// Size is the number of bytes the record accounts for in memory budgets.
func (r *Record) Size() int {
	n := 96 + len(r.Topic) + len(r.Key) + len(r.Value) + len(r.OrderKey) + len(r.DecodedKey) + len(r.DecodedValue)
	for _, h := range r.Headers {
		n += 32 + len(h.Key) + len(h.Value)
	}
	return n
}

// PartitionInfo describes an assigned partition at the moment it was assigned.
type PartitionInfo struct {
	TopicPartition
	// Start is the position the source will fetch from first.
	Start int64
	// End is the end offset snapshotted before any record was read: the last
	// stable offset under read_committed, else the high-water mark.
	End int64
	// Checkpoint is the checkpoint committed with Start (a consumer
	// group's commit metadata; see the root package's CheckpointCommitter),
	// nil when the commit carried none.
	Checkpoint *PartitionCheckpoint
}

// PartitionFetch is what one fetch returned for one partition.
type PartitionFetch struct {
	TopicPartition
	Records []Record
	// Position is the next offset to fetch after these records (invariant 1).
	Position int64
	// End is fresh evidence of where the partition ends (high-water mark or
	// last stable offset) as of this fetch, or -1 when the fetch carried none.
	End int64
	// Err is set when fetching this partition failed: the partition has no
	// fresh evidence and is never treated as caught up while it lasts.
	Err error
}

// Fetch is one unit of work from a source: assignment changes and data.
type Fetch struct {
	Assigned []PartitionInfo
	// Member is the group membership Assigned belongs to; nil outside a
	// consumer group.
	Member     *GroupMember
	Revoked    []TopicPartition
	Partitions []PartitionFetch
	// At is the source's evidence clock: the state of every assigned
	// partition, as delivered in this and earlier Fetches, is complete up to
	// At (invariant 4). Zero means the source keeps no such clock, and the
	// engine uses its own clock when it handles the Fetch.
	At time.Time
}

// Dead is a record that could not be processed, with the reason.
type Dead struct {
	Record Record
	Reason string
}

// PartitionCheckpoint is the saved progress of one partition.
type PartitionCheckpoint struct {
	TopicPartition
	// Low is the lowest offset not yet released and acknowledged: re-reading
	// from Low rebuilds every record that was parked or in flight.
	Low int64
	// Position is the next offset the source would have fetched.
	Position int64
	// End is the start-up end-offset snapshot, kept so a restart mid-replay
	// does not take a new, later snapshot.
	End int64
	// Replaying is true while the partition had not reached End.
	Replaying bool
	// Watermark is the release watermark of the partition's task (partition
	// number) at the checkpoint: records of this partition below Position
	// with event time at or below it were emitted. It is never below
	// Checkpoint.Watermark.
	Watermark int64
}

// Checkpoint is what a restart needs: per-partition progress and the
// watermarks. Records in [Low, Position) whose event time is at or below
// their partition's Watermark were already emitted and are skipped on
// restart.
type Checkpoint struct {
	// Watermark is the lowest task watermark: the instance's release
	// watermark at the checkpoint.
	Watermark  int64
	Partitions []PartitionCheckpoint
}

// ReasonHeader is the header under which records sent to a dead-letter sink
// carry the reason they were rejected.
const ReasonHeader = "signalbox.reason"

// LateByHeader is the header under which sinks that write the original
// bytes (the Kafka sink) say that a record is late: its Record.LateBy in
// decimal ms. Envelopes say it with "late": true and "late_by_ms".
const LateByHeader = "signalbox.late_by_ms"

// Parked summarises the records a store holds parked for one partition: how
// many, and the lowest offset among them.
type Parked struct {
	Count     int
	MinOffset int64
}
