package signalbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers"
	"github.com/signalbox/signalbox/watermark"
)

// collect is an in-memory Sink. Write is called from the pipeline's sink
// goroutine; read it after Run returns.
type collect struct {
	mu      sync.Mutex
	records []record.Record
}

func (c *collect) Open(context.Context) error  { return nil }
func (c *collect) Flush(context.Context) error { return nil }
func (c *collect) Close() error                { return nil }
func (c *collect) Write(_ context.Context, batch []record.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, batch...)
	return nil
}

// lines renders the collected records one per line: topic/partition@offset,
// event time, and late and reason markers.
func (c *collect) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.records))
	for _, r := range c.records {
		l := fmt.Sprintf("%s/%d@%d t=%d", r.Topic, r.Partition, r.Offset, r.EventTime)
		if r.Late {
			l += fmt.Sprintf(" late=%dms", r.LateBy)
		}
		for _, h := range r.Headers {
			if h.Key == record.ReasonHeader {
				l += " reason=" + string(h.Value)
			}
		}
		out = append(out, l)
	}
	return out
}

// timeline is a Source that replays fixed fetches, one per Poll, then
// blocks: a test decides exactly what the engine sees and in which order.
type timeline struct {
	fetches []record.Fetch
	next    int
}

func (s *timeline) Open(context.Context) error { return nil }
func (s *timeline) Close() error               { return nil }
func (s *timeline) Commit(context.Context, map[record.TopicPartition]int64) error {
	return nil
}
func (s *timeline) Poll(ctx context.Context) (record.Fetch, error) {
	if s.next < len(s.fetches) {
		s.next++
		return s.fetches[s.next-1], nil
	}
	<-ctx.Done()
	return record.Fetch{}, ctx.Err()
}

func tp(topic string, p int32) record.TopicPartition {
	return record.TopicPartition{Topic: topic, Partition: p}
}

// tsRecord is a JSON record whose event time is its "ts" field.
func tsRecord(topic string, p int32, off int64, key string, ts int64) record.Record {
	return record.Record{Topic: topic, Partition: p, Offset: off, Key: []byte(key),
		Value: []byte(fmt.Sprintf(`{"key":%q,"ts":%d}`, key, ts))}
}

// fetched is one fetch of partition t with records, ending at position pos,
// with the broker's end offset end.
func fetched(t record.TopicPartition, pos, end int64, recs ...record.Record) record.Fetch {
	return record.Fetch{Partitions: []record.PartitionFetch{{TopicPartition: t, Records: recs, Position: pos, End: end}}}
}

func tsInputs(topics ...string) signalbox.Option {
	var in []signalbox.Input
	for _, t := range topics {
		in = append(in, signalbox.Input{Topic: t, Time: signalbox.TimeFromField, TimeField: "ts"})
	}
	return signalbox.WithInputs(in...)
}

// frozen is a clock stopped at the epoch: the processing-time fallback
// (now − delay − 1 ms) then never releases anything, so only evidence does. Every
// record's event time is then far ahead of the clock, so tests that use it
// turn the poison guard off (WithMaxFuture(0)).
func frozen() time.Time { return time.UnixMilli(0) }

// runTimeout bounds a bounded run in tests.
var runTimeout = time.Minute

// runBounded runs p until it stops by itself; a run that does not stop
// within a minute is a hang, reported as such.
func runBounded(t *testing.T, p *signalbox.Pipeline) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	err := p.Run(ctx)
	if ctx.Err() != nil {
		s := p.Stats()
		t.Fatalf("bounded run did not terminate: %v; watermark %d, holders %+v, paused %v, parked %d",
			err, s.Watermark, s.Holders, s.Paused, s.Parked)
	}
	return err
}

// lateTimeline: a/0 is caught up early; b/0's second record is 3 s older
// than its first, beyond the 1 s delay bound, so it arrives after the
// watermark has passed it.
func lateTimeline() *timeline {
	a, b := tp("a", 0), tp("b", 0)
	return &timeline{fetches: []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 0, End: 2}, {TopicPartition: b, Start: 0, End: 2}}},
		// a/0 delivers everything; b/0 still holds the watermark at −∞.
		fetched(a, 2, 2, tsRecord("a", 0, 0, "x", 1000), tsRecord("a", 0, 1, "y", 5000)),
		// b/0 at 6000: watermark 6000 − 1000 − 1 = 4999 releases a/0@0.
		fetched(b, 1, 2, tsRecord("b", 0, 0, "x", 6000)),
		// b/0 at 2000 ≤ 4999: late by 2999 ms. b/0 is then caught up: the
		// bounded run flushes a/0@1, b/0@1 (parked at 5000) and b/0@0.
		fetched(b, 2, 2, tsRecord("b", 0, 1, "z", 2000)),
	}}
}

// TestLatePolicies: every late record is counted per partition, with how
// late it was, whatever the policy; the policy only decides where it goes.
func TestLatePolicies(t *testing.T) {
	for _, tc := range []struct {
		policy   signalbox.LatePolicy
		out      []string
		dead     []string
		counters signalbox.LateCounter
	}{
		{
			policy: signalbox.LateEmit,
			out:    []string{"a/0@0 t=1000", "a/0@1 t=5000", "b/0@1 t=2000 late=2999ms", "b/0@0 t=6000"},
			counters: signalbox.LateCounter{Count: 1, Emitted: 1, MaxLateBy: 2999, SumLateBy: 2999,
				Histogram: []int64{0, 0, 0, 0, 1, 0, 0, 0, 0}},
		},
		{
			policy: signalbox.LateDeadLetter,
			out:    []string{"a/0@0 t=1000", "a/0@1 t=5000", "b/0@0 t=6000"},
			dead:   []string{"b/0@1 t=2000 late=2999ms reason=late by 2999ms"},
			counters: signalbox.LateCounter{Count: 1, DeadLettered: 1, MaxLateBy: 2999, SumLateBy: 2999,
				Histogram: []int64{0, 0, 0, 0, 1, 0, 0, 0, 0}},
		},
		{
			policy: signalbox.LateDrop,
			out:    []string{"a/0@0 t=1000", "a/0@1 t=5000", "b/0@0 t=6000"},
			counters: signalbox.LateCounter{Count: 1, Dropped: 1, MaxLateBy: 2999, SumLateBy: 2999,
				Histogram: []int64{0, 0, 0, 0, 1, 0, 0, 0, 0}},
		},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			out, dead := &collect{}, &collect{}
			p, err := signalbox.New(lateTimeline(), tsInputs("a", "b"),
				signalbox.WithDelay(time.Second), signalbox.WithClock(frozen),
				signalbox.WithLatePolicy(tc.policy), signalbox.WithSink(out), signalbox.WithDeadLetter(dead),
				signalbox.WithUntil(signalbox.UntilEndOffsets))
			if err != nil {
				t.Fatal(err)
			}
			if err := runBounded(t, p); err != nil {
				t.Fatal(err)
			}
			if got := out.lines(); !slices.Equal(got, tc.out) {
				t.Errorf("output:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.out, "\n  "))
			}
			if got := dead.lines(); !slices.Equal(got, tc.dead) {
				t.Errorf("dead letters: %q, want %q", got, tc.dead)
			}
			st := p.Stats()
			if len(st.Late) != 1 {
				t.Fatalf("late counters for %d partitions, want only b/0: %+v", len(st.Late), st.Late)
			}
			got := st.Late[tp("b", 0)]
			if fmt.Sprint(got) != fmt.Sprint(tc.counters) {
				t.Errorf("late counters of b/0 = %+v, want %+v", got, tc.counters)
			}
			if total := st.LateTotal(); total.Count != 1 {
				t.Errorf("LateTotal().Count = %d, want 1", total.Count)
			}
		})
	}
}

// TestBoundedFlushesAndTerminates: UntilEndOffsets stops once every
// partition reached its start-up end offset — including an empty one and one
// whose end offset is a transaction marker no record carries — releases
// everything in order, and commits every partition up to its end.
func TestBoundedFlushesAndTerminates(t *testing.T) {
	parts := []script.Partition{
		{TopicPartition: tp("orders", 0), Records: []record.Record{
			tsRecord("orders", 0, 0, "k1", 3000), tsRecord("orders", 0, 1, "k2", 1000), tsRecord("orders", 0, 4, "k1", 9000),
		}, End: 6}, // offsets 2, 3: compacted; 5: a commit marker
		{TopicPartition: tp("orders", 1), Records: []record.Record{
			tsRecord("orders", 1, 10, "k3", 2000), tsRecord("orders", 1, 11, "k3", 8000),
		}},
		{TopicPartition: tp("orders", 2), Start: 7, End: 7}, // empty
		{TopicPartition: tp("stock", 0), Records: []record.Record{
			tsRecord("stock", 0, 0, "k1", 1000), tsRecord("stock", 0, 1, "k2", 99000),
		}},
	}
	for seed := range uint64(8) {
		src := script.New(seed, 2, parts...)
		out := &collect{}
		p, err := signalbox.New(src, tsInputs("orders", "stock"),
			signalbox.WithDelay(5*time.Second), signalbox.WithClock(frozen), signalbox.WithSink(out),
			signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"stock/0@0 t=1000", "orders/0@1 t=1000", // equal times: key k1 < k2
			"orders/1@10 t=2000", "orders/0@0 t=3000",
			"orders/1@11 t=8000", "orders/0@4 t=9000", "stock/0@1 t=99000",
		}
		if got := out.lines(); !slices.Equal(got, want) {
			t.Fatalf("seed %d: output:\n  %s\nwant:\n  %s", seed, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		st := p.Stats()
		if st.Parked != 0 || st.ParkedB != 0 || !st.ReplayDone || st.Out != 7 || st.LateTotal().Count != 0 {
			t.Errorf("seed %d: stats after the run: %+v", seed, st)
		}
		wantCommit := map[record.TopicPartition]int64{tp("orders", 0): 6, tp("orders", 1): 12, tp("orders", 2): 7, tp("stock", 0): 2}
		if got := src.Committed(); fmt.Sprint(got) != fmt.Sprint(wantCommit) {
			t.Errorf("seed %d: committed %v, want %v", seed, got, wantCommit)
		}
	}
}

// TestMalformedGoesToDeadLetter: a malformed payload, a missing or
// unparsable event time go to the dead-letter sink with their reason; the
// job keeps running and releases the rest in order. Without a dead-letter
// sink the job stops rather than lose them.
func TestMalformedGoesToDeadLetter(t *testing.T) {
	bad := func(off int64, v string) record.Record {
		return record.Record{Topic: "orders", Offset: off, Key: []byte("k"), Value: []byte(v)}
	}
	part := script.Partition{TopicPartition: tp("orders", 0), Records: []record.Record{
		tsRecord("orders", 0, 0, "k", 2000),
		bad(1, `{"ts":`),
		bad(2, `{"other":1}`),
		tsRecord("orders", 0, 3, "k", 1000),
		bad(4, `{"ts":"yesterday"}`),
		tsRecord("orders", 0, 5, "k", 3000),
	}}
	out, dead := &collect{}, &collect{}
	src := script.New(1, 2, part)
	p, err := signalbox.New(src, tsInputs("orders"), signalbox.WithDelay(5*time.Second), signalbox.WithClock(frozen),
		signalbox.WithSink(out), signalbox.WithDeadLetter(dead), signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	if got, want := out.lines(), []string{"orders/0@3 t=1000", "orders/0@0 t=2000", "orders/0@5 t=3000"}; !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
	want := []string{
		`orders/0@1 t=0 reason=event time field "ts": malformed JSON`,
		`orders/0@2 t=0 reason=event time field "ts": field not found`,
		`orders/0@4 t=0 reason=event time field "ts": not RFC 3339: "yesterday"`,
	}
	if got := dead.lines(); !slices.Equal(got, want) {
		t.Errorf("dead letters:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if st := p.Stats(); st.Dead != 3 || st.In != 6 || st.Out != 3 {
		t.Errorf("stats: In=%d Out=%d Dead=%d, want 6, 3, 3", st.In, st.Out, st.Dead)
	}
	if got := src.Committed()[tp("orders", 0)]; got != 6 {
		t.Errorf("committed %d, want 6: dead letters complete their offsets", got)
	}

	p, err = signalbox.New(script.New(1, 2, part), tsInputs("orders"), signalbox.WithSink(&collect{}),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); !errors.Is(err, signalbox.ErrNoDeadLetter) {
		t.Errorf("without a dead-letter sink: Run = %v, want ErrNoDeadLetter", err)
	}
}

// TestSlowFirstPartitionCausesNoLateRecords: a partition that is silent at
// first, then fails its first fetches, holds the watermark (at −∞, then as
// Unknown) while the others race ahead with later event times. With delay 0
// any early release would make its records late; there must be none.
func TestSlowFirstPartitionCausesNoLateRecords(t *testing.T) {
	mk := func(topic string, p int32, n int, t0, step int64) []record.Record {
		var rs []record.Record
		for i := range n {
			rs = append(rs, tsRecord(topic, p, int64(i), fmt.Sprintf("k%d", i%3), t0+int64(i)*step))
		}
		return rs
	}
	run := func(seed uint64, opts ...signalbox.Option) (signalbox.Stats, []record.Record) {
		// All three partitions are partition 0: one co-partitioned task,
		// one watermark.
		slow := script.Partition{TopicPartition: tp("returns", 0), Records: mk("returns", 0, 20, 0, 100), Silent: 30, FailFirst: 3}
		src := script.New(seed, 4, slow,
			script.Partition{TopicPartition: tp("orders", 0), Records: mk("orders", 0, 40, 50, 50)},
			script.Partition{TopicPartition: tp("stock", 0), Records: mk("stock", 0, 30, 10, 70)},
		)
		out := &collect{}
		p, err := signalbox.New(src, append(opts, tsInputs("orders", "stock", "returns"), signalbox.WithClock(frozen),
			signalbox.WithSink(out), signalbox.WithUntil(signalbox.UntilEndOffsets))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
		out.mu.Lock()
		defer out.mu.Unlock()
		return p.Stats(), out.records
	}
	controlLate := int64(0)
	for seed := range uint64(10) {
		st, recs := run(seed)
		if late := st.LateTotal(); late.Count != 0 {
			t.Fatalf("seed %d: %d late records: the slow partition did not hold the watermark (%+v)", seed, late.Count, st.Late)
		}
		if len(recs) != 90 {
			t.Fatalf("seed %d: %d records out, want 90", seed, len(recs))
		}
		for i := 1; i < len(recs); i++ {
			if !timers.Less(posOf(&recs[i-1]), posOf(&recs[i])) {
				t.Fatalf("seed %d: out of order at %d: %+v then %+v", seed, i, posOf(&recs[i-1]), posOf(&recs[i]))
			}
		}
		// Control: a strategy that guesses from silence (a partition that
		// has delivered nothing does not hold) on the same script.
		st, _ = run(seed, strategy.Option(func() strategy.Strategy {
			return &silenceIsDone{max: map[watermark.ID]int64{}, wm: watermark.MinTime}
		}).(signalbox.Option))
		controlLate += st.LateTotal().Count
	}
	if controlLate == 0 {
		t.Error("the control strategy, which ignores silent partitions, produced no late records: the scenario proves nothing")
	}
}

// silenceIsDone is the mistake the offset gate avoids: the watermark is the
// minimum over the partitions that have delivered something.
type silenceIsDone struct {
	max map[watermark.ID]int64
	wm  int64
}

func (s *silenceIsDone) Add(watermark.ID, bool, time.Time)                      {}
func (s *silenceIsDone) Remove(id watermark.ID)                                 { delete(s.max, id) }
func (s *silenceIsDone) SetPhase(watermark.ID, catchup.Phase, int64, time.Time) {}
func (s *silenceIsDone) Restore(wm int64)                                       { s.wm = max(s.wm, wm) }
func (s *silenceIsDone) Holders() []watermark.Hold                              { return nil }
func (s *silenceIsDone) Observe(id watermark.ID, et int64, _ time.Time) {
	if m, ok := s.max[id]; !ok || et > m {
		s.max[id] = et
	}
}
func (s *silenceIsDone) Advance(time.Time) int64 {
	if len(s.max) == 0 {
		return s.wm
	}
	low := watermark.MaxTime
	for _, m := range s.max {
		low = min(low, m)
	}
	s.wm = max(s.wm, low)
	return s.wm
}

// posOf is a record's place in the output, as design O1 and L1 define it:
// a late record (markLate) goes just after its partition's mark by the
// data when it was read.
func posOf(r *record.Record) timers.Pos {
	at := r.EventTime
	if r.Late {
		at += r.LateBy + 1
	}
	return timers.Pos{EventTime: at, Key: string(r.Key), Input: r.Topic, Partition: r.Partition, Offset: r.Offset}
}

// jumpTopic is the set-up of issue 34, with n = 3,000: one topic of three
// partitions; partition 0 holds n records in event-time order, 100 ms
// apart, then n more that start 2n/3 × 100 ms earlier (200 s); partitions 1
// and 2 hold 2n in order. Under a delay of 10 s, n − n/3 − 101 records of
// partition 0 (1,899), those more than 10 s behind its newest event time,
// are late by the data.
func jumpTopic(topic string, n int) []script.Partition {
	const base = 1_700_000_000_000
	parts := make([]script.Partition, 3)
	for p := range parts {
		parts[p].TopicPartition = tp(topic, int32(p))
		for i := range 2 * n {
			ts := base + int64(i)*100
			if p == 0 && i >= n {
				ts -= int64(2*n/3) * 100
			}
			parts[p].Records = append(parts[p].Records, tsRecord(topic, int32(p), int64(i), fmt.Sprintf("k%d", i%7), ts))
		}
	}
	return parts
}

// TestLatenessIsAFunctionOfTheData: issue 34's set-up, read with fetches of
// 1 to 5,000 records in random interleavings, flags the same 1,899 records
// late in every run (design L1) and gives byte-identical output, the
// model's (markLate, posOf): each late record released just after its
// partition's mark by the data when it was read.
func TestLatenessIsAFunctionOfTheData(t *testing.T) {
	parts := jumpTopic("t", 3000)
	all, late := markLate(parts, 10_000)
	if late != 1899 {
		t.Fatalf("the model flags %d records late, want 1899", late)
	}
	expected := want(t, all)
	for i, maxBatch := range []int{5000, 1, 300, 7, 1000, 64} {
		var buf bytes.Buffer
		p, err := signalbox.New(script.New(uint64(i), maxBatch, parts...), tsInputs("t"),
			signalbox.WithDelay(10*time.Second), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
			signalbox.WithLatePolicy(signalbox.LateEmit), signalbox.WithBatchSize(1+i*37),
			signalbox.WithSink(jsonl.New(&buf, jsonl.Options{})),
			signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
		if got := p.Stats().LateTotal(); got.Count != int64(late) || got.Emitted != int64(late) {
			t.Fatalf("run %d (fetches of up to %d): %d records late (%d emitted), want %d", i, maxBatch, got.Count, got.Emitted, late)
		}
		if !bytes.Equal(buf.Bytes(), expected) {
			t.Fatalf("run %d (fetches of up to %d): output differs from the model's\n%s", i, maxBatch, firstDiff(buf.Bytes(), expected))
		}
	}
}
