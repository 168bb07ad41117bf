package signalbox_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
)

// groupStore is a consumer group's committed offsets, with the checkpoint
// each was committed with, as a Kafka group keeps them across runs.
type groupStore struct {
	mu  sync.Mutex
	cps map[record.TopicPartition]record.PartitionCheckpoint
}

func (g *groupStore) commit(cp record.Checkpoint) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cps == nil {
		g.cps = map[record.TopicPartition]record.PartitionCheckpoint{}
	}
	for _, pc := range cp.Partitions {
		g.cps[pc.TopicPartition] = pc
	}
}

func (g *groupStore) committed() map[record.TopicPartition]record.PartitionCheckpoint {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.cps)
}

// groupScript is a scripted source that behaves like a consumer group
// across runs: it commits checkpoints to group, which outlives the run,
// and each partition starts at its committed offset, with the checkpoint
// committed with it (as the Kafka source hands back its commit metadata).
// It cancels its run at its stopAt-th Poll.
type groupScript struct {
	*script.Source
	group  *groupStore
	cps    map[record.TopicPartition]record.PartitionCheckpoint
	polls  int
	stopAt int
	cancel context.CancelFunc
}

func newGroupScript(seed uint64, maxBatch int, group *groupStore, parts []script.Partition) *groupScript {
	s := &groupScript{Source: script.New(seed, maxBatch, parts...), group: group, cps: group.committed()}
	starts := map[record.TopicPartition]int64{}
	for tp, pc := range s.cps {
		starts[tp] = pc.Low
	}
	s.StartAt(starts)
	return s
}

func (s *groupScript) Commit(context.Context, map[record.TopicPartition]int64) error {
	return errors.New("Commit called on a CheckpointCommitter")
}

func (s *groupScript) CommitCheckpoint(_ context.Context, cp record.Checkpoint) error {
	s.group.commit(cp)
	return nil
}

func (s *groupScript) Poll(ctx context.Context) (record.Fetch, error) {
	s.polls++
	if s.polls == s.stopAt {
		s.cancel()
	}
	f, err := s.Source.Poll(ctx)
	for i := range f.Assigned {
		if pc, ok := s.cps[f.Assigned[i].TopicPartition]; ok {
			f.Assigned[i].Checkpoint = &pc
		}
	}
	return f, err
}

// countStop is a sink that cancels its run once it has been handed n
// records.
type countStop struct {
	n      atomic.Int64
	cancel context.CancelFunc
}

func (s *countStop) Open(context.Context) error  { return nil }
func (s *countStop) Flush(context.Context) error { return nil }
func (s *countStop) Close() error                { return nil }
func (s *countStop) Write(_ context.Context, b []record.Record) error {
	if s.n.Add(-int64(len(b))) <= 0 {
		s.cancel()
	}
	return nil
}

// cpStore is an exactly-once sink's stored checkpoint, across runs.
type cpStore struct {
	mu sync.Mutex
	cp *record.Checkpoint
}

// stoppedCPSink is a CheckpointSink that stores only the checkpoint (in st).
type stoppedCPSink struct{ st *cpStore }

func (s stoppedCPSink) Open(context.Context) error                   { return nil }
func (s stoppedCPSink) Write(context.Context, []record.Record) error { return nil }
func (s stoppedCPSink) Flush(context.Context) error                  { return nil }
func (s stoppedCPSink) Close() error                                 { return nil }
func (s stoppedCPSink) Restore(context.Context) (*record.Checkpoint, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.cp == nil {
		return nil, nil
	}
	cp := *s.st.cp
	cp.Partitions = slices.Clone(cp.Partitions)
	return &cp, nil
}

// FlushCheckpoint replaces the stored checkpoint whole, as a DurableStore
// does (the PostgreSQL and Kafka sinks replace it per partition).
func (s stoppedCPSink) FlushCheckpoint(_ context.Context, cp record.Checkpoint) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	cp.Partitions = slices.Clone(cp.Partitions)
	s.st.cp = &cp
	return nil
}

// TestStopRestartGivesOneRunsOutput: a bounded job over a record set is
// stopped cleanly (its context cancelled, as SIGINT does) at random points
// — a Poll, a count of records written — and restarted, under random
// interleavings, batch sizes and checkpoint intervals, until a run
// finishes. The checkpoint lives in the group's commits (an at-least-once
// JSONL sink alone) or in an exactly-once sink's transaction. The output
// of all runs, concatenated, is exactly the output of one uninterrupted
// run: nothing lost, nothing written twice, nothing reordered. With
// partitions that jump back by more than the delay (jumpBack), the records
// late by the data are among them, each where one run puts it (design L1).
func TestStopRestartGivesOneRunsOutput(t *testing.T) {
	for _, where := range []string{"group", "sink"} {
		t.Run(where, func(t *testing.T) { stopRestartProperty(t, where == "sink", false) })
		t.Run(where+" with late records", func(t *testing.T) { stopRestartProperty(t, where == "sink", true) })
	}
}

func stopRestartProperty(t *testing.T, inSink, jumps bool) {
	stops, skipped := 0, 0
	for dataSeed := range uint64(8) {
		parts, all := recordSet(dataSeed)
		if jumps {
			jumpBack(parts, dataSeed)
			all, _ = markLate(parts, disorder)
		}
		expected := want(t, all)
		for seed := range uint64(16) {
			rng := rand.New(rand.NewPCG(dataSeed, seed))
			group, sunk := &groupStore{}, &cpStore{}
			var buf bytes.Buffer
			for run := 0; ; run++ {
				if run > 50 {
					t.Fatalf("data %d, seed %d: no run finished in 50 restarts", dataSeed, seed)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var extra []signalbox.Option
				if inSink {
					group = &groupStore{} // the sink's checkpoint alone says where to start (Seeker)
					extra = append(extra, signalbox.WithSink(stoppedCPSink{sunk}))
				}
				src := newGroupScript(rng.Uint64(), 1+rng.IntN(8), group, parts)
				src.cancel = cancel
				stop := &countStop{cancel: cancel}
				stop.n.Store(int64(1 + rng.IntN(len(all)+1)))
				if rng.IntN(3) == 0 {
					src.stopAt = 1 + rng.IntN(20)
				}
				var tick atomic.Int64 // a clock that moves 1 ms per reading: periodic checkpoints
				p, err := signalbox.New(src, append(extra, tsInputs("orders", "stock", "prices"),
					signalbox.WithDelay(disorder*time.Millisecond), signalbox.WithMaxFuture(0),
					signalbox.WithClock(func() time.Time { return time.UnixMilli(tick.Add(1)) }),
					signalbox.WithCheckpointInterval(time.Duration(1+rng.IntN(40))*time.Millisecond),
					signalbox.WithBatchSize(1+rng.IntN(12)),
					signalbox.WithSink(jsonl.New(&buf, jsonl.Options{BufferSize: 64})),
					signalbox.WithSink(stop),
					signalbox.WithUntil(signalbox.UntilEndOffsets))...)
				if err != nil {
					t.Fatal(err)
				}
				if err := runCancellable(ctx, cancel, p); err != nil {
					t.Fatalf("data %d, seed %d, run %d: %v", dataSeed, seed, run, err)
				}
				st := p.Stats()
				skipped += int(st.Skipped)
				if late := st.LateTotal(); late.Count != 0 && !jumps {
					t.Fatalf("data %d, seed %d, run %d: %d late records, want none by construction", dataSeed, seed, run, late.Count)
				}
				if ctx.Err() == nil {
					cancel()
					break // finished: everything released and committed
				}
				cancel()
				stops++
			}
			if !bytes.Equal(buf.Bytes(), expected) {
				t.Fatalf("data %d, seed %d: the runs' output differs from one run's\n%s",
					dataSeed, seed, firstDiff(buf.Bytes(), expected))
			}
		}
	}
	t.Logf("%d stops, %d re-read records skipped as emitted", stops, skipped)
	if stops == 0 || skipped == 0 {
		t.Fatalf("%d stops, %d skipped: the test exercised no restart that re-reads emitted records", stops, skipped)
	}
}
