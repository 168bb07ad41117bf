package signalbox_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// skipping is a timeline whose Commit skips the partitions in skip, as a
// group member does for partitions it does not own now, and records what
// it committed.
type skipping struct {
	timeline
	skip      []record.TopicPartition
	mu        sync.Mutex
	committed map[record.TopicPartition]int64
}

func (s *skipping) Commit(_ context.Context, offs map[record.TopicPartition]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var skipped []record.TopicPartition
	for tp, o := range offs {
		if slices.Contains(s.skip, tp) {
			skipped = append(skipped, tp)
			continue
		}
		s.committed[tp] = o
	}
	if len(skipped) > 0 {
		return &record.CommitSkippedError{Partitions: skipped, Reason: "not owned"}
	}
	return nil
}

// fencing is a CheckpointSink that refuses the checkpoint of the partitions
// in fence, as a sink does once another member claimed them.
type fencing struct {
	collect
	fence []record.TopicPartition
}

func (f *fencing) Restore(context.Context) (*record.Checkpoint, error) { return nil, nil }
func (f *fencing) FlushCheckpoint(_ context.Context, cp record.Checkpoint) error {
	var fenced []record.TopicPartition
	for _, p := range cp.Partitions {
		if slices.Contains(f.fence, p.TopicPartition) {
			fenced = append(fenced, p.TopicPartition)
		}
	}
	if len(fenced) > 0 {
		return retry.Fenced(errors.New("claimed by another member"), fenced...)
	}
	return nil
}

func runSkipTest(t *testing.T, src *skipping, sink signalbox.Sink) (signalbox.Stats, *observer.ObservedLogs, []signalbox.Event) {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	var mu sync.Mutex
	var events []signalbox.Event
	p, err := signalbox.New(src, tsInputs("a", "b"), signalbox.WithDelay(0), signalbox.WithClock(frozen),
		signalbox.WithMaxFuture(0), signalbox.WithSink(sink), signalbox.WithLogger(zap.New(core)),
		signalbox.WithUntil(signalbox.UntilEndOffsets), signalbox.WithObserver(func(e signalbox.Event) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return p.Stats(), logs, events
}

func twoPartitions() []record.Fetch {
	a, b := tp("a", 0), tp("b", 0)
	return []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 0, End: 1}, {TopicPartition: b, Start: 0, End: 1}}},
		fetched(a, 1, 1, tsRecord("a", 0, 0, "x", 1000)),
		fetched(b, 1, 1, tsRecord("b", 0, 0, "y", 2000)),
	}
}

// A commit the source skips (the member does not own the partition now)
// is counted as skipped and logged at warn, never counted as committed.
func TestSkippedCommitIsCountedAsSkipped(t *testing.T) {
	src := &skipping{timeline: timeline{fetches: twoPartitions()}, skip: []record.TopicPartition{tp("b", 0)},
		committed: map[record.TopicPartition]int64{}}
	st, logs, _ := runSkipTest(t, src, &collect{})
	d := st.Delivery
	if d.CommitsSkipped == 0 {
		t.Errorf("CommitsSkipped = 0, want the skipped commits counted")
	}
	if d.CommitFailures != 0 {
		t.Errorf("CommitFailures = %d: a skip is not a failure", d.CommitFailures)
	}
	for _, c := range d.Committed {
		if held, ok := src.committed[c.TopicPartition]; !ok || held != c.Offset {
			t.Errorf("counted %v committed at %d; the source holds %d (present %v)", c.TopicPartition, c.Offset, held, ok)
		}
	}
	if logs.FilterMessageSnippet("offset commit skipped").Len() == 0 {
		t.Errorf("no warning for the skipped commit: %v", logs.All())
	}
}

// A checkpoint the sink fences is not committed for the fenced partition,
// is counted as skipped, reported as EventFenced, and the job goes on.
func TestFencedCheckpointSkipsItsCommit(t *testing.T) {
	src := &skipping{timeline: timeline{fetches: twoPartitions()}, committed: map[record.TopicPartition]int64{}}
	st, logs, events := runSkipTest(t, src, &fencing{fence: []record.TopicPartition{tp("b", 0)}})
	if _, ok := src.committed[tp("b", 0)]; ok {
		t.Errorf("the fenced partition's offset was committed: %v", src.committed)
	}
	if _, ok := src.committed[tp("a", 0)]; !ok {
		t.Errorf("the other partition's offset was not committed: %v", src.committed)
	}
	if st.Delivery.CommitsSkipped == 0 {
		t.Errorf("CommitsSkipped = 0, want the fenced commit counted")
	}
	fenced := false
	for _, e := range events {
		fenced = fenced || (e.Kind == signalbox.EventFenced && e.Partition == tp("b", 0))
	}
	if !fenced {
		t.Errorf("no EventFenced for b/0")
	}
	if logs.FilterMessageSnippet("checkpoint fenced").Len() == 0 {
		t.Errorf("no warning for the fenced checkpoint: %v", logs.All())
	}
}
