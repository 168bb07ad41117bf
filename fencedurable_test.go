package signalbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers/durable"
)

// txSink is a transactional CheckpointSink: records it is handed become
// stored only with a checkpoint covering their partition. While fenceFrom
// is set, it refuses the checkpoint of fenced once the checkpoint's position
// for it reaches fenceFrom, and discards that partition's pending records,
// as a sink does once another member claimed the partition. Restore
// returns the lowest of the stored watermarks, as the real sinks do: the
// last checkpoint's watermark may be past what a fenced partition's older
// entry claims.
type txSink struct {
	mu        sync.Mutex
	fenced    record.TopicPartition
	fenceFrom int64 // 0: never fences
	pending   []record.Record
	stored    []record.Record
	refused   []record.Record
	cp        *record.Checkpoint
}

func (s *txSink) Open(context.Context) error  { return nil }
func (s *txSink) Flush(context.Context) error { return nil }
func (s *txSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = nil // never commits: what no checkpoint covered is gone
	return nil
}

func (s *txSink) Write(_ context.Context, b []record.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, b...)
	return nil
}

func (s *txSink) Restore(context.Context) (*record.Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cp == nil {
		return nil, nil
	}
	cp := *s.cp
	cp.Partitions = append([]record.PartitionCheckpoint(nil), s.cp.Partitions...)
	for _, pc := range cp.Partitions {
		cp.Watermark = min(cp.Watermark, pc.Watermark) // as the PostgreSQL and Kafka sinks restore it
	}
	return &cp, nil
}

func (s *txSink) FlushCheckpoint(_ context.Context, cp record.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fence := false
	for _, pc := range cp.Partitions {
		fence = fence || (s.fenceFrom > 0 && pc.TopicPartition == s.fenced && pc.Position >= s.fenceFrom)
	}
	for _, r := range s.pending {
		if fence && r.Topic == s.fenced.Topic && r.Partition == s.fenced.Partition {
			s.refused = append(s.refused, r)
		} else {
			s.stored = append(s.stored, r)
		}
	}
	s.pending = nil
	next := record.Checkpoint{Watermark: cp.Watermark}
	if s.cp != nil {
		next.Partitions = append(next.Partitions, s.cp.Partitions...)
	}
	for _, pc := range cp.Partitions {
		if fence && pc.TopicPartition == s.fenced {
			continue
		}
		i := 0
		for i < len(next.Partitions) && next.Partitions[i].TopicPartition != pc.TopicPartition {
			i++
		}
		if i == len(next.Partitions) {
			next.Partitions = append(next.Partitions, pc)
		} else {
			next.Partitions[i] = pc
		}
	}
	s.cp = &next
	if fence {
		return retry.Fenced(errors.New("claimed by another member"), s.fenced)
	}
	return nil
}

// twoTopics is a/0 and b/0 (one task), n records each, interleaved in event
// time.
func twoTopics(n int) []script.Partition {
	var parts []script.Partition
	for i, topic := range []string{"a", "b"} {
		sp := script.Partition{TopicPartition: tp(topic, 0)}
		for o := 0; o < n; o++ {
			sp.Records = append(sp.Records, tsRecord(topic, 0, int64(o), "k", int64(1_000_000+10*o+i)))
		}
		parts = append(parts, sp)
	}
	return parts
}

// A partition whose checkpoint the sink refused is re-read after a restart
// with a DurableStore: the store's checkpoint never holds its position past
// what the sink stored, so no record the sink refused is skipped (design
// R9). The restart starts partitions where the group left them (the source's
// committed offsets) unless the store's checkpoint says otherwise (Seeker).
func TestFencedPartitionIsReReadAfterDurableRestart(t *testing.T) {
	const n = 60
	dir := t.TempDir()
	sink := &txSink{fenced: tp("b", 0), fenceFrom: 20}
	run := func(parts []script.Partition) *script.Source {
		store, err := durable.OpenStore(dir, durable.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := store.Close(); err != nil {
				t.Error(err)
			}
		}()
		src := script.New(3, 4, parts...)
		p, err := signalbox.New(src, tsInputs("a", "b"),
			signalbox.WithDelay(0), signalbox.WithClock(ticking()), signalbox.WithMaxFuture(0),
			signalbox.WithParkedStore(store), signalbox.WithSink(sink),
			signalbox.WithCheckpointInterval(1), signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatalf("Run: %v", err)
		}
		return src
	}

	first := run(twoTopics(n))
	sink.mu.Lock()
	refused := len(sink.refused)
	sink.fenceFrom = 0 // the partition comes back to this member
	sink.mu.Unlock()
	if refused == 0 {
		t.Fatal("the sink refused nothing: the scenario did not fence b/0")
	}

	// The group's committed offsets are where a restart starts a partition
	// the store's checkpoint does not position.
	parts := twoTopics(n)
	committed := first.Committed()
	for i := range parts {
		parts[i].Start = committed[parts[i].TopicPartition]
	}
	run(parts)

	counts := map[string]int{}
	for _, r := range sink.stored {
		counts[fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset)]++
	}
	for _, topic := range []string{"a", "b"} {
		for o := 0; o < n; o++ {
			id := fmt.Sprintf("%s/0@%d", topic, o)
			if c := counts[id]; c != 1 {
				t.Errorf("%s stored %d times, want once", id, c)
			}
		}
	}
	t.Logf("the sink refused %d records of b/0 in the first run; stored %d records in all", refused, len(sink.stored))
}

// claimingTxSink is a txSink that is a Claimer: a second claim of the
// fenced partition (it comes back to this member) lifts the fence.
type claimingTxSink struct {
	*txSink
	claims int
}

func (s *claimingTxSink) Claim(_ context.Context, _ *record.GroupMember, tps []record.TopicPartition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(tps, s.fenced) {
		if s.claims++; s.claims > 1 {
			s.fenceFrom = 0
		}
	}
	return nil
}

// A fenced partition revoked and assigned again in the same run is re-read
// and every record the sink refused is stored: the revoke does not remember
// the refused claim, so it cannot outrank the sink's older checkpoint when
// refreshRestored takes the newest position per partition (design R9).
func TestFencedPartitionIsReReadAfterReassign(t *testing.T) {
	const n = 10
	a, b := tp("a", 0), tp("b", 0)
	recs := func(topic string) []record.Record {
		var out []record.Record
		for o := 0; o < n; o++ {
			i := int64(0)
			if topic == "b" {
				i = 1
			}
			out = append(out, tsRecord(topic, 0, int64(o), "k", 1_000_000+10*int64(o)+i))
		}
		return out
	}
	src := &timeline{fetches: []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 0, End: n + 1}, {TopicPartition: b, Start: 0, End: n}}},
		fetched(a, n, n+1, recs("a")...),
		fetched(b, n, n, recs("b")...),
		{Revoked: []record.TopicPartition{b}},
		{Assigned: []record.PartitionInfo{{TopicPartition: b, Start: 0, End: n}}}, // nothing of b was committed
		fetched(b, n, n, recs("b")...),
		fetched(a, n+1, n+1, tsRecord("a", 0, n, "k", 1_000_000+10*n+5)),
	}}
	sink := &claimingTxSink{txSink: &txSink{fenced: b, fenceFrom: 1}}
	p, err := signalbox.New(src, tsInputs("a", "b"), signalbox.WithDelay(0), signalbox.WithClock(frozen),
		signalbox.WithMaxFuture(0), signalbox.WithSink(sink), signalbox.WithCheckpointInterval(1),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatalf("Run: %v", err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.refused) == 0 {
		t.Fatal("the sink refused nothing: the scenario did not fence b/0")
	}
	counts := map[int64]int{}
	for _, r := range sink.stored {
		if r.Topic == "b" {
			counts[r.Offset]++
		}
	}
	for o := int64(0); o < n; o++ {
		if counts[o] != 1 {
			t.Errorf("b/0@%d stored %d times, want once", o, counts[o])
		}
	}
	t.Logf("the sink refused %d records of b/0 before the revoke; stored %d records in all", len(sink.refused), len(sink.stored))
}
