package signalbox_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/timers"
)

// Backpressure: the engine holds a bounded number of records however long
// the sinks lag. A record is held from the moment Poll returns it until a
// sink Write accepts it: in a fetch waiting for the engine, parked, in the
// release batch being built, in the bounded channel of release batches, or
// in the batch a sink is writing. With a backlog source that delivers its
// partitions round robin, fetches of perFetch records each, and event times
// that rise equally in every partition, at most parts·perFetch records are
// parked (the fetch just handled included, until the release that follows
// it), so the engine holds at most
//
//	(maxInflight + 2)·batch   the channel, the batch being sent, the batch being written
//	+ (parts + 3)·perFetch    parked, two fetches in the channel, one held by the poller
//
// records; the bound derived from the configuration is that sum.
const (
	bpParts    = 4
	bpPerPart  = 20_000
	bpPerFetch = 64
	bpBatch    = 256
	bpInflight = 4
	bpBound    = (bpInflight+2)*bpBatch + (bpParts+3)*bpPerFetch
	bpTotal    = bpParts * bpPerPart
)

// backlog is a source with perPart records in each partition, all
// available at once, like a Kafka topic with a large backlog, fetched
// perFetch records at a time (0: bpPerPart, bpPerFetch). It counts what it
// hands out and, at each Poll (the only moment the engine's holding grows),
// the peak number of records held.
type backlog struct {
	perPart, perFetch int64
	bare              bool // records without a key, with a one-byte value
	assigned          bool
	next              [bpParts]int64
	turn              int
	polls             atomic.Int64
	fetched           atomic.Int64
	written           *atomic.Int64 // records accepted by the sink (nil: no peak)
	peak              atomic.Int64
}

var bpBase = time.UnixMilli(1_700_000_000_000)

func (b *backlog) Open(context.Context) error { return nil }

func (b *backlog) Poll(ctx context.Context) (record.Fetch, error) {
	if err := ctx.Err(); err != nil {
		return record.Fetch{}, err
	}
	b.polls.Add(1)
	perPart, perFetch := cmp.Or(b.perPart, bpPerPart), cmp.Or(b.perFetch, bpPerFetch)
	var f record.Fetch
	if !b.assigned {
		b.assigned = true
		for p := range int32(bpParts) {
			f.Assigned = append(f.Assigned, record.PartitionInfo{TopicPartition: tp("in", p), End: perPart})
		}
		return f, nil
	}
	p := b.turn
	b.turn = (b.turn + 1) % bpParts
	pf := record.PartitionFetch{TopicPartition: tp("in", int32(p)), End: perPart}
	for off := b.next[p]; off < min(b.next[p]+perFetch, perPart); off++ {
		rec := record.Record{Topic: "in", Partition: int32(p), Offset: off, Timestamp: bpBase.Add(time.Duration(off) * time.Millisecond)}
		if b.bare {
			rec.Value = []byte("v")
		} else {
			rec.Key, rec.Value = []byte(fmt.Sprint("k", off%5)), make([]byte, 64)
		}
		pf.Records = append(pf.Records, rec)
	}
	b.next[p] += int64(len(pf.Records))
	pf.Position = b.next[p]
	f.Partitions = append(f.Partitions, pf)
	fetched := b.fetched.Add(int64(len(pf.Records)))
	if b.written != nil {
		if held := fetched - b.written.Load(); held > b.peak.Load() {
			b.peak.Store(held)
		}
	}
	if len(pf.Records) == 0 {
		select { // everything delivered: fresh evidence now and then
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
	return f, nil
}

func (b *backlog) Commit(context.Context, map[record.TopicPartition]int64) error { return nil }
func (b *backlog) Close() error                                                  { return nil }

// slowSink keeps what it accepts. Its stallAt-th Write blocks until resume
// is closed; throttle(n) makes its n-th call (Write or Flush, retries
// included, from 1) fail with a 429-style retry.Throttled error, without
// accepting anything.
type slowSink struct {
	written   *atomic.Int64
	got       []record.Record
	stallAt   int
	stalled   chan struct{}
	resume    chan struct{}
	throttle  func(call int) bool
	writes    int
	maxBatch  int // the most records one Write got
	calls     int
	throttled int
}

var errTooMany = errors.New("429 Too Many Requests")

func (s *slowSink) Open(context.Context) error { return nil }

func (s *slowSink) busy() error {
	s.calls++
	if s.throttle != nil && s.throttle(s.calls) {
		s.throttled++
		return retry.Throttled(errTooMany, time.Millisecond)
	}
	return nil
}

func (s *slowSink) Write(_ context.Context, batch []record.Record) error {
	if err := s.busy(); err != nil {
		return err
	}
	s.writes++
	if s.writes == s.stallAt {
		close(s.stalled)
		<-s.resume
	}
	s.got = append(s.got, batch...)
	s.maxBatch = max(s.maxBatch, len(batch))
	s.written.Add(int64(len(batch)))
	return nil
}

func (s *slowSink) Flush(context.Context) error { return s.busy() }
func (s *slowSink) Close() error                { return nil }

// newBacklog returns a backlog source feeding s.
func newBacklog(s *slowSink) *backlog {
	s.written = new(atomic.Int64)
	return &backlog{written: s.written}
}

// runBacklog runs a bounded pipeline from src into s, with a hang guard,
// sampling the heap meanwhile. It returns the peak heap in use above the
// level before the run.
func runBacklog(t *testing.T, src *backlog, s *slowSink, opts ...signalbox.Option) uint64 {
	t.Helper()
	p, err := signalbox.New(src, append([]signalbox.Option{signalbox.WithSink(s), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithBatchSize(bpBatch), signalbox.WithMaxInflightBatches(bpInflight),
		signalbox.WithUntil(signalbox.UntilEndOffsets)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan error, 1)
	go func() { done <- runBounded(t, p) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return peak - base
		case <-tick.C:
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
}

// checkComplete fails unless got holds every backlog record once, in the
// total release order.
func checkComplete(t *testing.T, got []record.Record) {
	t.Helper()
	if len(got) != bpTotal {
		t.Fatalf("the sink got %d records, want %d", len(got), bpTotal)
	}
	for i := 1; i < len(got); i++ {
		if a, b := posOf(&got[i-1]), posOf(&got[i]); !timers.Less(a, b) {
			t.Fatalf("record %d (%+v) is not after record %d (%+v): reordered or duplicated", i, b, i-1, a)
		}
	}
}

// stallFor returns a sink whose third Write blocks for d.
func stallFor(d time.Duration) *slowSink {
	s := &slowSink{stallAt: 3, stalled: make(chan struct{}), resume: make(chan struct{})}
	go func() {
		<-s.stalled
		time.Sleep(d) // the stall's length is the scenario, not a wait
		close(s.resume)
	}()
	return s
}

// TestInflightBytesBoundReleasedBatches: under WithMaxInflightBytes(n) a
// batch is handed over once it holds n/(maxInflight+2) bytes, so while a
// sink stalls the engine holds released records of about n bytes, not
// (maxInflight+2) full batches; the output stays complete and in order.
func TestInflightBytesBoundReleasedBatches(t *testing.T) {
	t.Parallel()
	size := int64((&record.Record{Topic: "in", Key: []byte("k0"), Value: make([]byte, 64), OrderKey: "k0"}).Size())
	const perBatch = 32 // records per batch the byte bound allows, against bpBatch (256)
	s := stallFor(time.Second)
	src := newBacklog(s)
	runBacklog(t, src, s, signalbox.WithMaxInflightBytes((bpInflight+2)*perBatch*size))
	bound := int64((bpInflight+2)*perBatch + (bpParts+3)*bpPerFetch)
	peak := src.peak.Load()
	t.Logf("peak held by the engine: %d records (bound %d; %d with record counts alone)", peak, bound, bpBound)
	if peak > bound {
		t.Errorf("the engine held %d records, more than the bound %d the byte bound implies", peak, bound)
	}
	checkComplete(t, s.got)
	// The batches the sink saw: none over the byte bound's share.
	if s.maxBatch > perBatch {
		t.Errorf("a batch of %d records reached the sink; the byte bound allows %d", s.maxBatch, perBatch)
	}
}

// TestSlowSinkPausesTheSource: a sink stalls for 3 s in a Write, with a
// backlog 40 times the bound behind it. The engine stops polling once it
// holds what the configuration allows, the rest stays in the source, and
// after the sink recovers the output is complete and in order.
func TestSlowSinkPausesTheSource(t *testing.T) {
	t.Parallel()
	s := &slowSink{stallAt: 3, stalled: make(chan struct{}), resume: make(chan struct{})}
	src := newBacklog(s)
	var atStall, atResume, pollsAtStall, pollsAtResume atomic.Int64
	var stallHeap atomic.Uint64 // live heap while stalled, above the start
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	go func() {
		<-s.stalled
		// The stall is the sink's behaviour, not an assertion: whatever
		// the machine's speed, the engine may hold no more than the bound.
		atStall.Store(src.fetched.Load())
		pollsAtStall.Store(src.polls.Load())
		time.Sleep(3 * time.Second)
		atResume.Store(src.fetched.Load())
		pollsAtResume.Store(src.polls.Load())
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		stallHeap.Store(ms.HeapInuse - min(base, ms.HeapInuse))
		close(s.resume)
	}()
	heap := runBacklog(t, src, s)
	// Two batches were accepted before the stall.
	if n := atResume.Load(); n > 2*bpBatch+bpBound || n >= bpTotal {
		t.Errorf("%d records fetched by the end of the stall: the source was not paused", n)
	}
	peak := src.peak.Load()
	size := int64((&record.Record{Topic: "in", Key: []byte("k0"), Value: make([]byte, 64), OrderKey: "k0"}).Size())
	t.Logf("stall: %d records fetched when it began, %d when it ended (polls %d → %d), of %d in the backlog",
		atStall.Load(), atResume.Load(), pollsAtStall.Load(), pollsAtResume.Load(), bpTotal)
	t.Logf("peak held by the engine: %d records ≈ %d KiB (bound %d records ≈ %d KiB); live heap while stalled %d KiB above the start; peak heap in use (garbage included) %d KiB above it",
		peak, peak*size>>10, bpBound, bpBound*size>>10, stallHeap.Load()>>10, heap>>10)
	if peak > bpBound {
		t.Errorf("the engine held %d records, more than the bound %d derived from the configuration", peak, bpBound)
	}
	checkComplete(t, s.got)
}

// TestThrottledSinkLosesAndReordersNothing: bursts of 429-style errors from
// Write and Flush are retried with backoff while consumption pauses; the
// output is complete, in order, without duplicates (a throttled Write
// accepted nothing), and the engine's holding stays under the bound.
func TestThrottledSinkLosesAndReordersNothing(t *testing.T) {
	t.Parallel()
	s := &slowSink{throttle: func(call int) bool {
		return call >= 5 && call < 8 || call >= 60 && call < 62 || call >= 200 && call < 203
	}}
	src := newBacklog(s)
	runBacklog(t, src, s)
	if s.throttled != 8 {
		t.Fatalf("%d calls throttled, want 8", s.throttled)
	}
	if peak := src.peak.Load(); peak > bpBound {
		t.Errorf("the engine held %d records, more than the bound %d", peak, bpBound)
	}
	checkComplete(t, s.got)
}
