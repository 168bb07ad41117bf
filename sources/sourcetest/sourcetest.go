package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
)

// Source is the contract under test; Pauser, where the source implements it.
type (
	Source = signalbox.Source
	Pauser = signalbox.Pauser
)

// Data is what a source under test must serve: for each partition, the
// values of its records, at offsets 0, 1, 2, … (no gaps). A partition with
// no values exists and is empty.
type Data map[record.TopicPartition][]string

// Target is one source under test.
type Target struct {
	// Source is a new, unopened source over exactly the Data.
	Source Source
	// Committed, if set, reads back the offsets committed for the data's
	// partitions (e.g. from the consumer group); nil skips that check.
	Committed func(t *testing.T) map[record.TopicPartition]int64
}

// Factory builds a fresh Target serving data for one subtest.
type Factory func(t *testing.T, data Data) Target

// hangGuard bounds each subtest so that a source that never delivers fails
// instead of hanging; it is no timing assertion (a slow machine only waits).
const hangGuard = time.Minute

// maxPolls bounds the polls a subtest makes before it gives up.
const maxPolls = 10000

// data is the suite's data: two partitions of one topic with records, one
// empty, and a partition of a second topic.
func data() Data {
	d := Data{}
	for p, n := range map[int32]int{0: 25, 1: 7, 2: 0} {
		tp := record.TopicPartition{Topic: "conformance", Partition: p}
		d[tp] = []string{}
		for i := range n {
			d[tp] = append(d[tp], fmt.Sprintf(`{"p":%d,"i":%d}`, p, i))
		}
	}
	d[record.TopicPartition{Topic: "conformance-b", Partition: 0}] = []string{`{"b":0}`, `{"b":1}`}
	return d
}

// Run runs the conformance suite against the sources newTarget makes.
func Run(t *testing.T, newTarget Factory) {
	t.Run("ReadAll", func(t *testing.T) { testReadAll(t, newTarget) })
	t.Run("PauseResume", func(t *testing.T) { testPauseResume(t, newTarget) })
	t.Run("Commit", func(t *testing.T) { testCommit(t, newTarget) })
	t.Run("PollAfterCancel", func(t *testing.T) { testPollAfterCancel(t, newTarget) })
}

// reader follows a source's fetches and checks invariants 1 to 3 on each.
type reader struct {
	t        *testing.T
	src      Source
	d        Data
	assigned map[record.TopicPartition]record.PartitionInfo
	values   map[record.TopicPartition][]string
	pos      map[record.TopicPartition]int64
	end      map[record.TopicPartition]int64 // the latest end offset reported
}

func open(t *testing.T, newTarget Factory) (*reader, Target, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	d := data()
	tg := newTarget(t, d)
	if err := tg.Source.Open(ctx); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := tg.Source.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &reader{t: t, src: tg.Source, d: d, assigned: map[record.TopicPartition]record.PartitionInfo{},
		values: map[record.TopicPartition][]string{}, pos: map[record.TopicPartition]int64{},
		end: map[record.TopicPartition]int64{}}, tg, ctx
}

// poll makes one Poll and checks what it reports.
func (r *reader) poll(ctx context.Context) {
	r.t.Helper()
	f, err := r.src.Poll(ctx)
	if err != nil {
		r.t.Fatalf("Poll: %v (so far: %d assigned, positions %v, ends %v)", err, len(r.assigned), r.pos, r.end)
	}
	for _, a := range f.Assigned {
		want, ok := r.d[a.TopicPartition]
		if !ok {
			r.t.Fatalf("assigned %v, which is not in the data", a.TopicPartition)
		}
		if _, dup := r.assigned[a.TopicPartition]; dup {
			r.t.Fatalf("%v assigned twice", a.TopicPartition)
		}
		if a.Start != 0 || a.End != int64(len(want)) {
			r.t.Fatalf("%v assigned with start %d end %d, want 0 and %d", a.TopicPartition, a.Start, a.End, len(want))
		}
		r.assigned[a.TopicPartition] = a
		r.pos[a.TopicPartition] = a.Start
		r.end[a.TopicPartition] = a.End
	}
	for _, pf := range f.Partitions {
		tp := pf.TopicPartition
		if _, ok := r.assigned[tp]; !ok {
			r.t.Fatalf("%v reported before it was assigned", tp)
		}
		if pf.Err != nil {
			continue // a failed fetch carries no evidence
		}
		for _, rec := range pf.Records {
			if rec.Topic != tp.Topic || rec.Partition != tp.Partition {
				r.t.Fatalf("record of %s/%d in the fetch of %v", rec.Topic, rec.Partition, tp)
			}
			if want := int64(len(r.values[tp])); rec.Offset != want {
				r.t.Fatalf("%v: record at offset %d, want %d (once, in order)", tp, rec.Offset, want)
			}
			r.values[tp] = append(r.values[tp], string(rec.Value))
		}
		if pf.Position < r.pos[tp] {
			r.t.Fatalf("%v: position went back from %d to %d", tp, r.pos[tp], pf.Position)
		}
		if len(pf.Records) > 0 && pf.Position != pf.Records[len(pf.Records)-1].Offset+1 {
			r.t.Fatalf("%v: position %d after a record at %d: it must be the next offset to fetch", tp, pf.Position, pf.Records[len(pf.Records)-1].Offset)
		}
		r.pos[tp] = pf.Position
		if pf.End >= 0 {
			// An end offset may be a lower bound (a file source that has not
			// looked further) but must never claim the partition caught up
			// while records remain, nor lie beyond the data.
			if n := int64(len(r.d[tp])); pf.End <= pf.Position && pf.Position < n || pf.End > n {
				r.t.Fatalf("%v: end offset %d reported at position %d, with %d records in the partition", tp, pf.End, pf.Position, n)
			}
			r.end[tp] = pf.End
		}
	}
}

// until polls until done is true.
func (r *reader) until(ctx context.Context, what string, done func() bool) {
	r.t.Helper()
	for range maxPolls {
		if done() {
			return
		}
		r.poll(ctx)
	}
	r.t.Fatalf("after %d polls, still waiting for %s", maxPolls, what)
}

// caughtUp reports whether every record of tp has arrived and the evidence
// shows it: the reported position has reached the reported end.
func (r *reader) caughtUp(tp record.TopicPartition) bool {
	_, ok := r.assigned[tp]
	return ok && r.read(tp) && r.pos[tp] == r.end[tp] && r.pos[tp] == int64(len(r.d[tp]))
}

// read reports whether every record of tp has arrived.
func (r *reader) read(tp record.TopicPartition) bool {
	return len(r.values[tp]) == len(r.d[tp])
}

func (r *reader) checkValues(tp record.TopicPartition) {
	r.t.Helper()
	for i, v := range r.d[tp] {
		if r.values[tp][i] != v {
			r.t.Fatalf("%v offset %d: value %q, want %q", tp, i, r.values[tp][i], v)
		}
	}
}

func testReadAll(t *testing.T, newTarget Factory) {
	r, _, ctx := open(t, newTarget)
	r.until(ctx, "every partition assigned, read and caught up", func() bool {
		for tp := range r.d {
			if !r.caughtUp(tp) {
				return false
			}
		}
		return true
	})
	for tp := range r.d {
		r.checkValues(tp)
	}
}

func testPauseResume(t *testing.T, newTarget Factory) {
	r, tg, ctx := open(t, newTarget)
	p, ok := tg.Source.(Pauser)
	if !ok {
		t.Skip("the source does not implement Pauser")
	}
	paused := record.TopicPartition{Topic: "conformance", Partition: 0}
	p.Pause(paused)
	other := record.TopicPartition{Topic: "conformance", Partition: 1}
	r.until(ctx, "the partition that is not paused", func() bool { return r.caughtUp(other) })
	if n := len(r.values[paused]); n != 0 {
		t.Fatalf("a paused partition delivered %d records", n)
	}
	p.Resume(paused)
	r.until(ctx, "the resumed partition", func() bool { return r.read(paused) })
	r.checkValues(paused)
}

func testCommit(t *testing.T, newTarget Factory) {
	r, tg, ctx := open(t, newTarget)
	tp := record.TopicPartition{Topic: "conformance", Partition: 0}
	r.until(ctx, "partition 0 read", func() bool { return r.read(tp) })
	if err := tg.Source.Commit(ctx, map[record.TopicPartition]int64{tp: 10}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if tg.Committed == nil {
		return
	}
	if got := tg.Committed(t)[tp]; got != 10 {
		t.Fatalf("committed offset of %v = %d, want 10", tp, got)
	}
}

func testPollAfterCancel(t *testing.T, newTarget Factory) {
	r, _, ctx := open(t, newTarget)
	r.poll(ctx)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.src.Poll(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll after its context was cancelled: %v, want context.Canceled", err)
	}
}
