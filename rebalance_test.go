package signalbox_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
)

// revoking is a timeline that records every commit, and how many commits
// had happened when the revoking Fetch was handed out and at the Poll right
// after it: the next Poll is what lets a consumer-group rebalance proceed.
type revoking struct {
	timeline

	mu        sync.Mutex
	commits   []map[record.TopicPartition]int64
	atRevoke  int // len(commits) when the revoking Fetch was handed out
	afterPoll int // len(commits) at the Poll that followed it
}

func (s *revoking) Commit(_ context.Context, offs map[record.TopicPartition]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits = append(s.commits, offs)
	return nil
}

func (s *revoking) Poll(ctx context.Context) (record.Fetch, error) {
	s.mu.Lock()
	if s.next > 0 && len(s.fetches[s.next-1].Revoked) > 0 {
		s.afterPoll = len(s.commits)
	}
	if s.next < len(s.fetches) && len(s.fetches[s.next].Revoked) > 0 {
		s.atRevoke = len(s.commits)
	}
	if s.next < len(s.fetches) { // answers at once: next moves under mu
		defer s.mu.Unlock()
		return s.timeline.Poll(ctx)
	}
	s.mu.Unlock()
	return s.timeline.Poll(ctx)
}

// TestRevokeCommitsBeforeLettingGo: a/0 parks records behind b/0, then is
// revoked. Before the source is polled again, the engine must have flushed
// and committed a/0's safe offset — its first parked record, not its
// position — and a/0's parked records must never be emitted by this
// instance (the new owner re-reads them).
func TestRevokeCommitsBeforeLettingGo(t *testing.T) {
	a, b := tp("a", 0), tp("b", 0)
	src := &revoking{timeline: timeline{fetches: []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 0, End: 3}, {TopicPartition: b, Start: 0, End: 3}}},
		// b/0 (still replaying) at 2000 → watermark 1500.
		fetched(b, 1, 3, tsRecord("b", 0, 0, "x", 2000)),
		// a/0 delivers everything and is caught up; all three park.
		fetched(a, 3, 3, tsRecord("a", 0, 0, "x", 1600), tsRecord("a", 0, 1, "y", 3000), tsRecord("a", 0, 2, "z", 4000)),
		// b/0 at 2600 → watermark 2100: a/0@0 released, @1 and @2 stay parked.
		fetched(b, 2, 3, tsRecord("b", 0, 1, "w", 2600)),
		{Revoked: []record.TopicPartition{a}},
	}}}
	out := &collect{}
	p, err := signalbox.New(src, tsInputs("a", "b"),
		signalbox.WithDelay(500*time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0), signalbox.WithSink(out),
		signalbox.WithCheckpointInterval(time.Hour)) // only the revoke checkpoints
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitFor(t, "a poll after the last fetch", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.next == len(src.fetches) && src.afterPoll > 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	src.mu.Lock()
	defer src.mu.Unlock()
	if src.afterPoll <= src.atRevoke {
		t.Fatalf("no commit between the revoke and the next Poll (commits %v)", src.commits)
	}
	c := src.commits[src.atRevoke]
	if got, ok := c[a]; !ok || got != 1 {
		t.Errorf("at the revoke, a/0 committed %v (present %v), want 1: its first parked record", got, ok)
	}
	for _, l := range out.lines() {
		if strings.HasPrefix(l, "a/0@1") || strings.HasPrefix(l, "a/0@2") {
			t.Errorf("revoked partition's parked record was emitted: %s", l)
		}
	}
	if want := []string{"a/0@0 t=1600"}; !slices.Contains(out.lines(), want[0]) {
		t.Errorf("output %v lacks %v", out.lines(), want)
	}
}

// TestBoundedRunOutlastsARevokeOfEverything: a rebalance that revokes every
// partition a member holds is not the end of its bounded replay ("done"
// over zero partitions): it waits for the next assignment and ends only
// once that has reached the end offsets, so nothing read after the
// rebalance is left out.
func TestBoundedRunOutlastsARevokeOfEverything(t *testing.T) {
	a := tp("a", 0)
	src := &timeline{fetches: []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 0, End: 3}}},
		fetched(a, 1, 3, tsRecord("a", 0, 0, "x", 1000)),
		{Revoked: []record.TopicPartition{a}},
		{Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 1, End: 3}}},
		fetched(a, 3, 3, tsRecord("a", 0, 1, "y", 2000), tsRecord("a", 0, 2, "z", 3000)),
	}}
	out := &collect{}
	p, err := signalbox.New(src, tsInputs("a"), signalbox.WithDelay(0), signalbox.WithClock(frozen),
		signalbox.WithMaxFuture(0), signalbox.WithSink(out), signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a/0@1 t=2000", "a/0@2 t=3000"} {
		if !slices.Contains(out.lines(), want) {
			t.Errorf("the bounded run ended without %s (output %v)", want, out.lines())
		}
	}
}
