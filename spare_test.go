package signalbox_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
)

// The backlog source (backpressure_test.go) with bulkParts partitions of
// bulkPer records, fetched bulkFetch at a time, event times rising equally
// in every partition, so that each fetch releases whole batches. bulkPer is
// 4 fetches: 131,072 records in all, twice what 16 in-flight batches of
// 4,096 hold, so a stalled sink still lets them all fill (16 fetches cost
// 16 s of CI under -race and showed nothing more).
const (
	bulkParts = bpParts
	bulkFetch = 8192
	bulkPer   = 4 * bulkFetch
)

// countSink counts what it accepts and keeps nothing; its third Write
// blocks until resume is closed.
type countSink struct {
	written *atomic.Int64
	writes  int
	resume  chan struct{}
}

func (s *countSink) Open(context.Context) error { return nil }
func (s *countSink) Write(_ context.Context, b []record.Record) error {
	if s.writes++; s.writes == 3 {
		<-s.resume
	}
	s.written.Add(int64(len(b)))
	return nil
}
func (s *countSink) Flush(context.Context) error { return nil }
func (s *countSink) Close() error                { return nil }

// TestDrainedBacklogFreesBatches: a sink stalls while a backlog fills every
// in-flight batch; once it has drained, the live job does not keep those
// full-size batches (empty) for reuse. The live heap it holds afterwards
// with 16 batches in flight is within a few batches of what it holds with 1
// (parked records and the fetches they come from are the same in both).
func TestDrainedBacklogFreesBatches(t *testing.T) {
	const batch = 4096
	batchBytes := int64(batch * unsafe.Sizeof(record.Record{}))
	one, many := heldAfterDrain(t, batch, 1), heldAfterDrain(t, batch, 16)
	t.Logf("live heap held after the drain: %d KiB with 1 batch in flight, %d KiB with 16; a full batch is %d KiB",
		one>>10, many>>10, batchBytes>>10)
	if many-one > 4*batchBytes {
		t.Errorf("16 batches in flight left %d KiB more live heap after the drain than 1 did: more than 4 batches of %d KiB",
			(many-one)>>10, batchBytes>>10)
	}
}

// heldAfterDrain runs a live job from a backlog source into a sink that stalls
// in its third Write until the engine stops reading, and returns the live
// heap above the start once everything read has been written or parked.
func heldAfterDrain(t *testing.T, batch, inflight int) int64 {
	s := &countSink{written: new(atomic.Int64), resume: make(chan struct{})}
	src := &backlog{perPart: bulkPer, perFetch: bulkFetch, bare: true}
	p, err := signalbox.New(src, signalbox.WithSink(s), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithBatchSize(batch), signalbox.WithMaxInflightBatches(inflight))
	if err != nil {
		t.Fatal(err)
	}
	live := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	base := live()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Error(err)
		}
	}()
	// Stalled until the engine holds what the bound lets it and stops reading.
	for stalled := int64(-1); ; {
		time.Sleep(200 * time.Millisecond)
		n := src.fetched.Load()
		if n > 0 && n == stalled {
			break
		}
		stalled = n
	}
	close(s.resume)
	// Drained: everything fetched, and the sink has accepted nothing new for
	// a while (the newest records stay parked below the watermark).
	for last := int64(-1); ; {
		time.Sleep(200 * time.Millisecond)
		n := s.written.Load()
		if src.fetched.Load() == bulkParts*bulkPer && n == last {
			break
		}
		last = n
	}
	return live() - base
}

// arraySink notes the arrays of the batches of more than 256 records'
// capacity it is handed (and keeps them reachable, so that no new batch can
// reuse a dropped one's memory), and stalls in every eighth Write, so that
// the engine fills every in-flight batch in a burst while it waits.
type arraySink struct {
	arrays map[*record.Record]bool
	writes int
}

func (s *arraySink) Open(context.Context) error { return nil }
func (s *arraySink) Write(_ context.Context, b []record.Record) error {
	if cap(b) > 256 {
		s.arrays[unsafe.SliceData(b)] = true
	}
	if s.writes++; s.writes%8 == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
func (s *arraySink) Flush(context.Context) error { return nil }
func (s *arraySink) Close() error                { return nil }

// TestBurstsReuseBatches: a replay whose sink drains the in-flight batches
// in bursts reuses them. Every batch the sink has written comes back to the
// engine, so the engine makes a new one only when every other is in flight,
// being written or filling (WithMaxInflightBatches+3 arrays), or when a
// step the scheduler cut short leaves a small batch that grows again by
// doubling: a few more on a busy machine, against hundreds when written
// batches are dropped (about one per two writes). (The tick is a minute, so
// that the spares are never trimmed during the run.)
func TestBurstsReuseBatches(t *testing.T) {
	const inflight = 16
	s := &arraySink{arrays: map[*record.Record]bool{}}
	src := &backlog{perPart: bulkPer, perFetch: bulkFetch, bare: true}
	p, err := signalbox.New(src, signalbox.WithSink(s), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithBatchSize(512), signalbox.WithMaxInflightBatches(inflight), signalbox.WithTick(time.Minute),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	if got := p.Stats().Out; got != bulkParts*bulkPer {
		t.Fatalf("%d records out, want %d", got, bulkParts*bulkPer)
	}
	t.Logf("%d writes, %d batch arrays", s.writes, len(s.arrays))
	if len(s.arrays) > 2*inflight+3 {
		t.Errorf("the sink was handed %d distinct batch arrays in %d writes: more than %d, so written batches were dropped and made again",
			len(s.arrays), s.writes, 2*inflight+3)
	}
}
