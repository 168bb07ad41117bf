package signalbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers"
	"github.com/signalbox/signalbox/timers/durable"
)

// failAfter is a Sink that keeps what was flushed and fails fatally once it
// has been handed limit records: the pipeline stops without a last
// checkpoint, which is what a crash leaves behind.
type failAfter struct {
	limit   int
	mu      sync.Mutex
	written []record.Record
	flushed int // written[:flushed] was acknowledged
}

var errCrash = errors.New("simulated crash")

func (s *failAfter) Open(context.Context) error { return nil }
func (s *failAfter) Close() error               { return nil }
func (s *failAfter) Write(_ context.Context, b []record.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit > 0 && len(s.written)+len(b) > s.limit {
		return errCrash
	}
	s.written = append(s.written, b...)
	return nil
}
func (s *failAfter) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushed = len(s.written)
	return nil
}

// heldBack builds partitions a/0..a/2 with bounded disorder, plus slow/0,
// which stays silent for many polls: everything else parks behind it.
func heldBack(seed uint64, n int) []script.Partition {
	rng := rand.New(rand.NewPCG(seed, 1))
	var parts []script.Partition
	for p, topic := range []string{"a", "a", "a", "slow"} {
		part := int32(p)
		if topic == "slow" {
			part = 0
		}
		sp := script.Partition{TopicPartition: tp(topic, part)}
		ts := int64(1_000_000)
		for i := 0; i < n; i++ {
			ts += int64(rng.IntN(20))
			sp.Records = append(sp.Records, tsRecord(topic, part, int64(i), fmt.Sprintf("k%d", rng.IntN(50)), ts))
		}
		if topic == "slow" {
			sp.Silent = 400
		}
		parts = append(parts, sp)
	}
	return parts
}

func durablePipeline(t *testing.T, parts []script.Partition, store *durable.Store, sink signalbox.Sink) *signalbox.Pipeline {
	t.Helper()
	p, err := signalbox.New(script.New(9, 16, parts...),
		tsInputs("a", "slow"),
		signalbox.WithDelay(100*time.Millisecond),
		signalbox.WithClock(ticking()),
		signalbox.WithParkedStore(store),
		signalbox.WithSink(sink),
		signalbox.WithCheckpointInterval(1), // a checkpoint on every engine step
		signalbox.WithUntil(signalbox.UntilEndOffsets),
	)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDurableRestartLosesNothing parks most of the input behind a silent
// partition, in a store whose memory budget forces it to spill, crashes the
// pipeline mid-way (no last checkpoint), and restarts it on the same state
// directory. Every record must come out at least once, the first
// occurrences in the total order, none late; and the restart must resume
// from the saved positions rather than re-read everything.
func TestDurableRestartLosesNothing(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel() // pebble's syncs: each seed mostly waits
			dir := t.TempDir()
			parts := heldBack(seed, 300)
			open := func() *durable.Store {
				s, err := durable.OpenStore(dir, durable.StoreOptions{MemoryBudget: 16 << 10})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}

			store := open()
			first := &failAfter{limit: 200}
			p1 := durablePipeline(t, parts, store, first)
			err := runBounded(t, p1)
			if !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v, want the simulated crash", err)
			}
			if store.SpilledLen() == 0 {
				t.Error("the memory budget never made the store spill")
			}
			if st := p1.Stats(); st.Spilled != store.SpilledLen() || st.StoreBytes <= 0 {
				t.Errorf("stats: %d spilled, store %d bytes; the store has %d spilled", st.Spilled, st.StoreBytes, store.SpilledLen())
			}
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}

			store = open()
			defer store.Close()
			second := &failAfter{}
			p2 := durablePipeline(t, parts, store, second)
			if err := runBounded(t, p2); err != nil {
				t.Fatal(err)
			}
			if in := p2.Stats().In; in >= 4*300 {
				t.Errorf("the restart read %d records: it re-read everything instead of resuming from the saved positions", in)
			}

			all := append(append([]record.Record(nil), first.written...), second.written...)
			seen := map[string]bool{}
			var firsts []record.Record
			for _, r := range all {
				if r.Late {
					t.Fatalf("%s/%d@%d came out late", r.Topic, r.Partition, r.Offset)
				}
				id := fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset)
				if !seen[id] {
					seen[id] = true
					firsts = append(firsts, r)
				}
			}
			if want := 4 * 300; len(firsts) != want {
				t.Fatalf("%d distinct records came out, want %d", len(firsts), want)
			}
			if !sort.SliceIsSorted(firsts, func(i, j int) bool { return less(firsts[i], firsts[j]) }) {
				t.Fatal("first occurrences are not in the total order")
			}
			t.Logf("first run wrote %d (%d acknowledged), second %d; %d duplicates", len(first.written), first.flushed, len(second.written), len(all)-len(firsts))
		})
	}
}

// ticking is a clock that starts at the epoch and moves 1ms per reading:
// checkpoints (which follow the clock) happen, but the processing-time
// fallback stays far below the records' event times.
func ticking() signalbox.Clock {
	var mu sync.Mutex
	var n int64
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return time.UnixMilli(n)
	}
}

func less(a, b record.Record) bool {
	return timers.Less(
		timers.Pos{EventTime: a.EventTime, Key: a.OrderKey, Input: a.Topic, Partition: a.Partition, Offset: a.Offset},
		timers.Pos{EventTime: b.EventTime, Key: b.OrderKey, Input: b.Topic, Partition: b.Partition, Offset: b.Offset})
}
