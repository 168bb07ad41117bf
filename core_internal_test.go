package signalbox

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/signalbox/signalbox/record"
)

// testCore is the core of a run of topic "a", delay 0, with opts, with a/0
// assigned (end offset end) at the epoch.
func testCore(t *testing.T, end int64, opts ...Option) *run {
	t.Helper()
	p, err := New(nopSource{}, append([]Option{WithInputs(Input{Topic: "a", Time: TimeFromField, TimeField: "ts"}),
		WithSink(nopSink{}), WithClock(func() time.Time { return time.UnixMilli(0) })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(context.Background(), p)
	f := record.Fetch{Assigned: []record.PartitionInfo{{TopicPartition: record.TopicPartition{Topic: "a"}, End: end}}}
	r.beginFetch(&f, time.UnixMilli(0))
	if err := r.takeFetch(polled{f: f}, nil, time.UnixMilli(0)); err != nil {
		t.Fatal(err)
	}
	return r
}

// records of a/0 at offsets 0, 1, ... with the event times ets.
func records(ets ...int64) []record.Record {
	recs := make([]record.Record, len(ets))
	for i, et := range ets {
		recs[i] = record.Record{Topic: "a", Offset: int64(i), EventTime: et, OrderKey: "k"}
	}
	return recs
}

// releaseChunks steps the release under way to its end, as the driver
// does, and returns the offsets of the batches sealed by each chunk;
// between two chunks it calls between, if not nil, with the chunks so far.
func releaseChunks(t *testing.T, r *run, between func(n int)) [][]int {
	t.Helper()
	var chunks [][]int
	for more := true; more; {
		var err error
		if more, err = r.releaseMore(); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, o := range r.fx.outs {
			for _, rec := range o.records {
				got = append(got, int(rec.Offset))
			}
		}
		chunks = append(chunks, got)
		if more && between != nil {
			between(len(chunks))
		}
		r.fx.outs = nil // the driver hands them over
	}
	return chunks
}

// A release leaves the store one batch-size chunk at a time, each chunk's
// batches sealed for the driver before the next chunk is released (S3):
// nothing reaches the sinks while the core steps, and what the driver has
// not taken stays parked.
func TestCoreReleasesChunkByChunk(t *testing.T) {
	r := testCore(t, 5, WithBatchSize(2), WithUntil(UntilEndOffsets))
	a0 := record.TopicPartition{Topic: "a"}
	f := record.Fetch{Partitions: []record.PartitionFetch{{TopicPartition: a0, Records: records(10, 20, 30, 40, 50), Position: 5, End: 5}}}
	now := time.UnixMilli(1)
	r.beginFetch(&f, now)
	if err := r.takeFetch(polled{f: f}, nil, now); err != nil {
		t.Fatal(err)
	}
	r.startPass(now)
	chunks := releaseChunks(t, r, nil)
	// The partition is caught up, so the watermark follows the clock: at 1ms
	// nothing is due. The end of the replay releases everything.
	if len(chunks) != 1 || len(chunks[0]) != 0 {
		t.Fatalf("at 1ms the release put out %v, want nothing", chunks)
	}
	if done, err := r.endPass(now, &passTimes{cp: now, pub: now}); !done || err != nil {
		t.Fatalf("endPass: done %v, err %v; want the bounded run done", done, err)
	}
	chunks = releaseChunks(t, r, func(n int) {
		if r.store.Len() != 5-2*n {
			t.Errorf("after chunk %d, %d records parked, want %d", n, r.store.Len(), 5-2*n)
		}
	})
	want := [][]int{{0, 1}, {2, 3}, nil}
	if len(chunks) != 3 || !slices.Equal(chunks[0], want[0]) || !slices.Equal(chunks[1], want[1]) || len(chunks[2]) != 0 {
		t.Fatalf("flush chunks %v, want %v then the last record left in the current batch", chunks, want)
	}
	if got := r.cur.records; len(got) != 1 || got[0].Offset != 4 {
		t.Fatalf("current batch %v, want offset 4", got)
	}
	if r.wm != 50 {
		t.Errorf("watermark after the flush %d, want 50", r.wm)
	}
}

// A Fetch that revokes a partition is two steps (S4): beginFetch asks for a
// checkpoint barrier, whose batch carries the partition's safe offsets, and
// the partition stays assigned; only takeFetch, once the driver has done
// the barrier, lets it go.
func TestCoreRevokeWaitsForTheBarrier(t *testing.T) {
	r := testCore(t, 2)
	a0 := record.TopicPartition{Topic: "a"}
	now := time.UnixMilli(1)
	f := record.Fetch{Partitions: []record.PartitionFetch{{TopicPartition: a0, Records: records(10), Position: 1, End: 2}}}
	r.beginFetch(&f, now)
	if err := r.takeFetch(polled{f: f}, nil, now); err != nil {
		t.Fatal(err)
	}
	rev := record.Fetch{Revoked: []record.TopicPartition{a0}}
	r.beginFetch(&rev, now)
	b := r.fx.barrier
	if b == nil {
		t.Fatal("a revoke asked for no barrier")
	}
	if len(b.cp.Partitions) != 1 || b.cp.Partitions[0].Low != 0 || b.cp.Partitions[0].Position != 1 {
		t.Fatalf("barrier checkpoint %+v, want a/0 low 0 (offset 0 parked) position 1", b.cp.Partitions)
	}
	if len(r.fx.outs) != 1 || r.fx.outs[0] != b.o {
		t.Fatal("the barrier's batch is not the one sealed for the driver")
	}
	if r.parts[a0] == nil {
		t.Fatal("the partition was let go before the barrier was done")
	}
	r.fx = effects{} // the driver did the barrier
	if err := r.takeFetch(polled{f: rev}, nil, now); err != nil {
		t.Fatal(err)
	}
	if r.parts[a0] != nil {
		t.Fatal("takeFetch did not revoke the partition")
	}
	if pc := r.restored[a0]; pc.Position != 1 {
		t.Errorf("the revoke remembered position %d, want 1", pc.Position)
	}
}

// An acknowledgement the loop receives from the sink goroutine is the
// core's input whether or not an observer listens: a fence it reports is
// remembered, so that a revoke then forgets what was emitted (R9).
func TestLoopTakesInAcknowledgementsWithoutAnObserver(t *testing.T) {
	r := testCore(t, 1)
	a0 := record.TopicPartition{Topic: "a"}
	r.acks <- Event{Kind: EventFenced, Partition: a0}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.loop(ctx, make(chan polled)) }()
	for len(r.acks) > 0 { // wait until the loop took it
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if !r.fenced[a0] {
		t.Fatal("the fence the sink goroutine reported was not taken in")
	}
}

// apply hands the out batches over in place: the slice keeps its capacity
// (no allocation per batch), and on a stop the ones not handed over stay,
// first and in order, for the final checkpoint.
func TestApplyKeepsOutsUnsent(t *testing.T) {
	r := testCore(t, 0)
	r.fx.outs = append(r.fx.outs, &out{})
	if err := r.apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.fx.outs) != 0 || cap(r.fx.outs) == 0 {
		t.Fatalf("after apply: len %d cap %d, want 0 and the capacity kept", len(r.fx.outs), cap(r.fx.outs))
	}
	<-r.outs
	for len(r.outs) < cap(r.outs)-1 {
		r.outs <- &out{} // the sink goroutine lags: room for one more
	}
	o1, o2, o3 := &out{}, &out{}, &out{}
	r.fx.outs = append(r.fx.outs, o1, o2, o3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.apply(ctx); err == nil {
		t.Fatal("apply with the sinks full and ctx cancelled: no error")
	}
	if !slices.Equal(r.fx.outs, []*out{o2, o3}) {
		t.Fatalf("unsent outs %p, want %p %p", r.fx.outs, o2, o3)
	}
}
