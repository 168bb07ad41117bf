package signalbox

// The Source contract and its optional interfaces, and the inputs' topics
// (InputTopics) that New checks the source reads (TopicLister).

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/topicpattern"
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
//     when ctx is done; any other error is fatal to the pipeline. The
//     records' bytes (Key, Value, headers) are the pipeline's from then on:
//     the source never reuses or rewrites them.
//   - Commit records, per partition, the offset from which a restart must
//     re-read. signalbox only ever passes contiguous completed offsets. A
//     source that did not commit some partitions because this instance does
//     not own them now returns a *record.CommitSkippedError naming them:
//     signalbox counts that as skipped (Delivery.CommitsSkipped), not as a
//     failure, and counts the other partitions as committed.
//   - Close releases everything. Poll is not called after Close.
type Source interface {
	Open(ctx context.Context) error
	Poll(ctx context.Context) (record.Fetch, error)
	Commit(ctx context.Context, offsets map[record.TopicPartition]int64) error
	Close() error
}

// CheckpointCommitter is implemented by sources that keep a checkpoint with
// the offsets they commit, and hand it back when they assign the partition
// again (record.PartitionInfo.Checkpoint, with Start at its Low): the Kafka
// source keeps it in a consumer group's commit metadata. signalbox then
// calls CommitCheckpoint instead of Commit, and with neither a
// CheckpointSink nor a DurableStore, a restart skips the re-read records
// that checkpoint shows as emitted, so a clean stop re-emits nothing to an
// at-least-once sink.
//
// CommitCheckpoint commits each partition's Low, with its Position and
// Watermark, atomically per partition; like Commit, it may be called from
// another goroutine between Open and Close.
type CheckpointCommitter interface {
	CommitCheckpoint(ctx context.Context, cp record.Checkpoint) error
}

// Pauser is implemented by sources that can stop fetching some partitions
// while the sinks lag. Without it, signalbox simply stops calling Poll, which
// bounds memory just as well but pauses every partition at once (as it
// does while a schema registry outage holds 16,384 records, hold.go).
type Pauser interface {
	Pause(tps ...record.TopicPartition)
	Resume(tps ...record.TopicPartition)
}

// EvidenceDemander is implemented by sources that can hurry fresh evidence.
// Once every partition is caught up, a parked record is released when the
// evidence clock (record.Fetch.At) passes its event time + delay. The engine
// calls WantEvidence(at) with that due time whenever it changes, and a zero
// time when nothing waits for evidence; the source then answers so that an
// answer received at or just after at certifies it, instead of waiting out
// its long poll (the Kafka source shortens its fetch wait, never below 5ms:
// at most one extra fetch per broker every 5ms while a record is due).
// A partition the engine has paused is certified only by the source's
// periodic end-offset refresh (the Kafka source's EvidenceInterval, 1s), so
// while one is paused a due record may wait up to that long.
// WantEvidence is called from the engine goroutine, concurrently with Poll;
// it must not block. It never advances anything by itself: only answers
// are evidence.
type EvidenceDemander interface {
	WantEvidence(at time.Time)
}

// Recycler is implemented by sources that reuse the arrays their fetches'
// records come in (record.PartitionFetch.Records), so that a replay does not
// allocate, and the garbage collector does not reclaim, one array per
// partition answer.
//
// The engine calls Recycle(recs) with an array it delivered once nothing in
// the pipeline refers to it any more: every record of it was skipped,
// copied out (released, late, dead-lettered, timeless) or copied by the
// store. The source may then overwrite the array; the records' bytes (Key,
// Value, headers) are another matter and are never reused (Source). An
// array the engine does not give back (one whose partition was revoked, or
// one still referred to when the engine stops) is left to the garbage
// collector.
//
// Lifecycle: Recycle is called from the engine goroutine, concurrently with
// Poll, between Open and the return of Close; it must not block.
type Recycler interface {
	Recycle(recs []record.Record)
}

// Seeker is implemented by sources that can start partitions at given
// offsets. signalbox calls StartAt before Open when a restored checkpoint
// (a DurableStore's or a CheckpointSink's), not the consumer group, holds
// the offsets to resume from.
//
// The offsets apply to the first Fetch that assigns partitions after Open
// only: a partition revoked and assigned again, or first assigned in a later
// Fetch, starts where the source starts it without StartAt (the group's
// committed offset). The offsets are as of the start: by a later assignment
// the records a DurableStore restored below them may have been dropped
// (their partition was not owned when the watermark passed them), and
// another member may have committed past them (design R10).
type Seeker interface {
	StartAt(offsets map[record.TopicPartition]int64)
}

// TopicLister is implemented by sources that read named topics and the
// topics matching patterns (the Kafka source: Config.Topics and
// Config.TopicPatterns). Topics returns both, and New checks every Input
// against them: an Input whose topic the source never delivers fails New,
// naming it, instead of decoding nothing while the topic meant (a typo:
// "order" for "orders") silently takes the default, the Kafka timestamp.
//
//   - An Input's Topic must be one of topics, or match one of patterns (as
//     a whole name; internal topics, "__…", match no pattern). A topic
//     that does not exist yet but matches a pattern is accepted: the
//     source's discovery delivers it once created, and its Input decodes
//     it then.
//   - An Input's TopicPattern must match one of topics, or the source must
//     have patterns: which topics two patterns share is known only when
//     they are found.
//
// InputTopics derives the source's topics from the inputs, so that they
// are declared once. Topics is called by New, before Open.
type TopicLister interface {
	Topics() (topics, patterns []string)
}

// GroupReader is implemented by sources that can read as a member of a
// consumer group (the Kafka source, with Config.Group). Group returns the
// group's name, "" when the source reads without one (its commits then
// store nothing), and the member's current session in it: nil before its
// first join, between two sessions (a rebalance) and after Close. A member
// that joined owns partitions or not: with more members than tasks some own
// none, and are as ready as the others (Stats.Member). Group is called
// from the engine's goroutine, before Open too (the name is known from the
// start); it must not block.
type GroupReader interface {
	Group() (name string, member *record.GroupMember)
}

// HandledNotifier is implemented by sources that fetch ahead of the
// engine: between a source and flow control sit a few Fetches (the
// poller's, the engine's queue), and a pause reaches a partition only after
// they are delivered. The engine calls Handled with no partition before
// its first Poll, then, after each pass of flow control (align), with the
// partitions whose records it handled since the last call; the Kafka source
// then fetches a partition left behind its end offset again only once its
// previous records are reported handled, so that a pause takes effect
// before the partition's next answer however large answers are.
type HandledNotifier interface {
	Handled(tps ...record.TopicPartition)
}

// InputTopics returns the topics (Input.Topic) and the topic patterns
// (Input.TopicPattern) of inputs, in order, each once: what a source must
// read for them, so that the topics are declared once, in the inputs:
//
//	topics, patterns := signalbox.InputTopics(inputs...)
//	src, err := kafka.New(kafka.Config{Brokers: brokers, Topics: topics, TopicPatterns: patterns})
func InputTopics(inputs ...Input) (topics, patterns []string) {
	for _, in := range inputs {
		switch {
		case in.TopicPattern != "" && !slices.Contains(patterns, in.TopicPattern):
			patterns = append(patterns, in.TopicPattern)
		case in.TopicPattern == "" && in.Topic != "" && !slices.Contains(topics, in.Topic):
			topics = append(topics, in.Topic)
		}
	}
	return topics, patterns
}

// checkRead refuses an input naming a topic the source never delivers
// (TopicLister), each as a field error of its inputs[i] entry.
func checkRead(src Source, inputs []Input) error {
	tl, ok := src.(TopicLister)
	if !ok {
		return nil
	}
	topics, patterns := tl.Topics()
	var res []*regexp.Regexp
	for _, p := range patterns {
		if re, err := topicpattern.Compile(p); err == nil { // the source validated it
			res = append(res, re)
		}
	}
	reads := func(topic string) bool {
		return slices.Contains(topics, topic) ||
			!strings.HasPrefix(topic, "__") && slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(topic) })
	}
	var errs []error
	for i, in := range inputs {
		switch {
		case in.TopicPattern != "":
			re, err := topicpattern.Compile(in.TopicPattern)
			if err != nil || len(res) > 0 || slices.ContainsFunc(topics, re.MatchString) {
				continue // err: Validate reports it
			}
			errs = append(errs, fielderr.New(fmt.Sprintf("inputs[%d].topic_pattern", i),
				"%s matches none of the topics the source reads (%s), and the source reads no pattern: no record would ever be decoded by it",
				fielderr.Quote(in.TopicPattern), sourceTopics(topics, patterns)))
		case in.Topic != "" && !reads(in.Topic):
			errs = append(errs, fielderr.New(fmt.Sprintf("inputs[%d].topic", i),
				"%s is not a topic the source reads (%s): no record would ever be decoded by it; add it to the source's topics (InputTopics derives them from the inputs) or correct the name",
				fielderr.Quote(in.Topic), sourceTopics(topics, patterns)))
		}
	}
	return errors.Join(errs...)
}

// sourceTopics names what a source reads, for a message: at most 10
// topics and 10 patterns.
func sourceTopics(topics, patterns []string) string {
	var parts []string
	for _, l := range []struct {
		what string
		xs   []string
	}{{"topics", topics}, {"patterns", patterns}} {
		if len(l.xs) == 0 {
			continue
		}
		var q []string
		for _, x := range l.xs[:min(len(l.xs), 10)] {
			q = append(q, fielderr.Quote(x))
		}
		part := l.what + " " + strings.Join(q, ", ")
		if n := len(l.xs) - 10; n > 0 {
			part += fmt.Sprintf(" and %d more", n)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
