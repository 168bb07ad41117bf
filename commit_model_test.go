package signalbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sources/script"
)

// The commit model: the offset committed to the source for a partition never
// passes a record that is still parked or not yet acknowledged by every
// sink. The test keeps a ledger of what each sink has acknowledged (a
// record is acknowledged when a Flush or FlushCheckpoint after its Write
// returns nil) and checks, inside every Source.Commit call, that every
// record of the partition below the committed offset is accounted for:
//
//   - filtered, or dropped as late (LateDrop): nothing to acknowledge;
//   - malformed, or late under LateDeadLetter: acknowledged by the
//     dead-letter sink;
//   - otherwise (released, or late under LateEmit): acknowledged by every
//     sink.

// coord names one input record.
type coord struct {
	tp  record.TopicPartition
	off int64
}

// ledger is what the sinks acknowledged and which records were late.
type ledger struct {
	mu    sync.Mutex
	acked map[string]map[coord]bool // per sink
	late  map[coord]bool
	fails []string // violations found
}

// modelSink buffers written records and acknowledges them in the ledger on
// a successful flush. It fails some calls with retryable errors: a failed
// Write does not accept its batch, a failed flush keeps the buffer.
type modelSink struct {
	name    string
	l       *ledger
	pending []coord
	failIn  int // the call that fails next, counting down; 0: none
}

var errBusy = errors.New("busy")

func (s *modelSink) Open(context.Context) error { return nil }

func (s *modelSink) fail() bool {
	if s.failIn == 0 {
		return false
	}
	s.failIn--
	return s.failIn == 0
}

func (s *modelSink) Write(_ context.Context, batch []record.Record) error {
	if s.fail() {
		return retry.Throttled(errBusy, time.Millisecond)
	}
	for i := range batch {
		s.pending = append(s.pending, coord{tp(batch[i].Topic, batch[i].Partition), batch[i].Offset})
	}
	return nil
}

func (s *modelSink) Flush(context.Context) error {
	if s.fail() {
		return retry.Retryable(errBusy)
	}
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	for _, c := range s.pending {
		s.l.acked[s.name][c] = true
	}
	s.pending = s.pending[:0]
	return nil
}

func (s *modelSink) Close() error { return s.Flush(context.Background()) }

// modelCheckpointSink stores the checkpoint with its data.
type modelCheckpointSink struct{ modelSink }

func (s *modelCheckpointSink) Restore(context.Context) (*record.Checkpoint, error) { return nil, nil }
func (s *modelCheckpointSink) FlushCheckpoint(ctx context.Context, _ record.Checkpoint) error {
	return s.Flush(ctx)
}

// checkedSource checks the commit model inside every Commit.
type checkedSource struct {
	*script.Source
	check func(offsets map[record.TopicPartition]int64)
}

func (s *checkedSource) Commit(ctx context.Context, offsets map[record.TopicPartition]int64) error {
	s.check(offsets)
	return s.Source.Commit(ctx, offsets)
}

// modelRecords draws partitions of JSON records whose event time is "ts":
// rising with disorder within the delay, a few far older (late), a few
// malformed, and offset gaps; plus a partition of a timeless input.
func modelRecords(rng *rand.Rand) []script.Partition {
	var parts []script.Partition
	for p := range int32(2) {
		sp := script.Partition{TopicPartition: tp("a", p)}
		off := rng.Int64N(50)
		for i := range 40 + rng.IntN(80) {
			ts := 1_700_000_000_000 + int64(i)*10 + rng.Int64N(15)
			if rng.IntN(15) == 0 {
				ts -= 1000 // beyond the delay: late once the watermark passed it
			}
			r := tsRecord("a", p, off, fmt.Sprint("k", rng.IntN(3)), ts)
			if rng.IntN(30) == 0 {
				r.Value = []byte("not json")
			}
			sp.Records = append(sp.Records, r)
			off += 1 + rng.Int64N(2)
		}
		parts = append(parts, sp)
	}
	sp := script.Partition{TopicPartition: tp("ref", 0)}
	for off := range int64(20 + rng.IntN(20)) {
		sp.Records = append(sp.Records, record.Record{Topic: "ref", Offset: off, Key: []byte("r"), Value: []byte("{}")})
	}
	return append(parts, sp)
}

// filtered is the pipeline's filter, rejecting some records.
func filtered(r *record.Record) bool { return r.Offset%11 == 5 }

func TestCommitNeverPassesUnacknowledgedRecords(t *testing.T) {
	t.Parallel()
	policies := []signalbox.LatePolicy{signalbox.LateEmit, signalbox.LateDrop, signalbox.LateDeadLetter}
	var commits, midway atomic.Int64 // commits, and those that fall inside a partition
	// Each seed's run mostly waits (ticks, retries): the seeds run in parallel.
	t.Run("seeds", func(t *testing.T) {
		for seed := range uint64(60) {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(seed, 4))
				parts := modelRecords(rng)
				policy := policies[seed%3]
				l := &ledger{acked: map[string]map[coord]bool{}, late: map[coord]bool{}}
				newSink := func(name string) *modelSink {
					l.acked[name] = map[coord]bool{}
					s := &modelSink{name: name, l: l}
					if seed%4 == 0 {
						s.failIn = 1 + rng.IntN(20)
					}
					return s
				}
				out1, dead := newSink("out1"), newSink("dead")
				out2 := &modelCheckpointSink{*newSink("out2")}

				byTP := map[record.TopicPartition][]record.Record{}
				for _, p := range parts {
					byTP[p.TopicPartition] = p.Records
				}
				// acked reports whether every sink in names acknowledged c.
				acked := func(c coord, names ...string) bool {
					for _, n := range names {
						if !l.acked[n][c] {
							return false
						}
					}
					return true
				}
				src := &checkedSource{Source: script.New(seed, 1+int(seed%9), parts...)}
				src.check = func(offsets map[record.TopicPartition]int64) {
					l.mu.Lock()
					defer l.mu.Unlock()
					commits.Add(1)
					for tpc, o := range offsets {
						if recs := byTP[tpc]; o > recs[0].Offset && o <= recs[len(recs)-1].Offset {
							midway.Add(1)
						}
						for i := range byTP[tpc] {
							r := &byTP[tpc][i]
							if r.Offset >= o {
								break
							}
							c := coord{tpc, r.Offset}
							var ok bool
							switch {
							case filtered(r):
								ok = true
							case string(r.Value) == "not json":
								ok = acked(c, "dead")
							case l.late[c] && policy == signalbox.LateDrop:
								ok = true
							case l.late[c] && policy == signalbox.LateDeadLetter:
								ok = acked(c, "dead")
							default:
								ok = acked(c, "out1", "out2")
							}
							if !ok {
								l.fails = append(l.fails, fmt.Sprintf("seed %d (late %s): committed %s/%d@%d passes record %d, not acknowledged by every sink",
									seed, policy, tpc.Topic, tpc.Partition, o, r.Offset))
								return
							}
						}
					}
				}
				var tick atomic.Int64 // a clock that moves 1 ms per reading
				p, err := signalbox.New(src,
					signalbox.WithInputs(signalbox.Input{Topic: "a", Time: signalbox.TimeFromField, TimeField: "ts"}, signalbox.Input{Topic: "ref", Time: signalbox.TimeNone}),
					signalbox.WithDelay(20*time.Millisecond), signalbox.WithLatePolicy(policy),
					signalbox.WithFilter(func(r *record.Record) bool { return !filtered(r) }),
					signalbox.WithClock(func() time.Time { return time.UnixMilli(tick.Add(1)) }),
					signalbox.WithMaxFuture(0), // the clock starts at the epoch, the records do not
					signalbox.WithCheckpointInterval(3*time.Millisecond),
					signalbox.WithBatchSize(1+int(seed%7)), signalbox.WithMaxInflightBatches(1+int(seed%3)),
					signalbox.WithSink(out1), signalbox.WithSink(out2), signalbox.WithDeadLetter(dead),
					signalbox.WithObserver(func(e signalbox.Event) {
						if e.Kind == signalbox.EventLate {
							l.mu.Lock()
							l.late[coord{e.Partition, e.Offset}] = true
							l.mu.Unlock()
						}
					}),
					signalbox.WithUntil(signalbox.UntilEndOffsets))
				if err != nil {
					t.Fatal(err)
				}
				if err := runBounded(t, p); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if len(l.fails) > 0 {
					t.Fatalf("%d violations, first: %s", len(l.fails), l.fails[0])
				}
				// A bounded run ends with everything acknowledged and committed.
				for _, sp := range parts {
					end := sp.Records[len(sp.Records)-1].Offset + 1
					if got := src.Committed()[sp.TopicPartition]; got != end {
						t.Fatalf("seed %d: final commit of %v = %d, want the end offset %d", seed, sp.TopicPartition, got, end)
					}
				}
			})
		}
	})
	t.Logf("%d commits checked, %d of them inside a partition", commits.Load(), midway.Load())
	if midway.Load() == 0 {
		t.Fatal("every commit was at a partition's start or end: the check is vacuous")
	}
}
