package signalbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
)

// joinTimeline is a consumer group's view of one run: task 0 (a/0) parks
// two records while task 1 (a/1, nothing fetched yet) holds G at −∞; then
// b/0 joins task 0 in a later assignment (as a discovery round or an
// incremental rebalance hands it over) with a checkpoint committed at a far
// higher watermark. It records the checkpoints committed.
type joinTimeline struct {
	timeline
	group *groupStore
}

func (s *joinTimeline) CommitCheckpoint(_ context.Context, cp record.Checkpoint) error {
	s.group.commit(cp)
	return nil
}

// TestJoiningPartitionNeverClaimsHeldRecords: a partition joining a task
// with a higher restored watermark raises that task's release mark, but the
// checkpoint must not claim as emitted the records another partition of the
// task still holds (design R8). The run stops with a/0's records parked;
// every record a/0's committed checkpoint claims was emitted must be in the
// sink, and a restart from that checkpoint writes every record of a/0.
func TestJoiningPartitionNeverClaimsHeldRecords(t *testing.T) {
	a0, a1, b0 := tp("a", 0), tp("a", 1), tp("b", 0)
	held := []record.Record{tsRecord("a", 0, 0, "k", 1000), tsRecord("a", 0, 1, "k", 1100)}
	group := &groupStore{}
	src := &joinTimeline{group: group, timeline: timeline{fetches: []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a0, End: 10}, {TopicPartition: a1, End: 10}}},
		fetched(a0, 2, 10, held...),
		{Assigned: []record.PartitionInfo{{TopicPartition: b0, Start: 5, End: 5,
			Checkpoint: &record.PartitionCheckpoint{TopicPartition: b0, Low: 5, Position: 5, Watermark: 5000}}}},
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &collect{}
	p, err := signalbox.New(src, tsInputs("a", "b"), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithSink(out), signalbox.WithObserver(func(e signalbox.Event) {
			if e.Kind == signalbox.EventAssigned && e.Partition == b0 {
				cancel() // stop once b/0 has joined: a/0's records are still parked
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := runCancellable(ctx, cancel, p); err != nil {
		t.Fatal(err)
	}
	emitted := map[string]bool{}
	for _, r := range out.records {
		emitted[id(r)] = true
	}
	pc, ok := group.committed()[a0]
	if !ok {
		t.Fatal("no checkpoint committed for a/0")
	}
	for _, r := range held {
		if r.Offset >= pc.Low && r.Offset < pc.Position && eventTime(r) <= pc.Watermark && !emitted[id(r)] {
			t.Errorf("a/0's checkpoint (low %d, position %d, watermark %d) claims %s t=%d was emitted; it is still parked",
				pc.Low, pc.Position, pc.Watermark, id(r), eventTime(r))
		}
	}

	// The restart: a/0's records come out, once.
	rest := []script.Partition{{TopicPartition: a0, Records: held}, {TopicPartition: a1}, {TopicPartition: b0, Records: bRecords(5)}}
	p, err = signalbox.New(newGroupScript(1, 1, group, rest), tsInputs("a", "b"), signalbox.WithClock(frozen),
		signalbox.WithMaxFuture(0), signalbox.WithSink(out), signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range out.records {
		n[id(r)]++
	}
	for _, r := range held {
		if n[id(r)] != 1 {
			t.Errorf("%s written %d times across the stop, want once", id(r), n[id(r)])
		}
	}
}

// runCancellable runs p until ctx is cancelled (by the test, or by cancel
// after runTimeout: a hang guard).
func runCancellable(ctx context.Context, cancel context.CancelFunc, p *signalbox.Pipeline) error {
	tm := time.AfterFunc(runTimeout, cancel)
	defer tm.Stop()
	return p.Run(ctx)
}

// bRecords are b/0's records below its committed offset n, already emitted
// by an earlier owner.
func bRecords(n int) []record.Record {
	var recs []record.Record
	for i := range n {
		recs = append(recs, tsRecord("b", 0, int64(i), fmt.Sprintf("b%d", i), 4000+int64(i)))
	}
	return recs
}
