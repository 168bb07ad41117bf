package signalbox_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers"
)

// peakStore is the in-memory store, remembering the most records and bytes
// it ever held.
type peakStore struct {
	*signalbox.MemStore
	maxLen, maxByte int64
}

func newPeakStore() *peakStore { return &peakStore{MemStore: signalbox.NewMemStore()} }

func (s *peakStore) Park(p timers.Pos, r *record.Record) error {
	err := s.MemStore.Park(p, r)
	s.maxLen, s.maxByte = max(s.maxLen, int64(s.Len())), max(s.maxByte, s.Bytes())
	return err
}

// countingSource counts the partitions the engine pauses.
type countingSource struct {
	*script.Source
	paused atomic.Int64
}

func (c *countingSource) Pause(tps ...record.TopicPartition) {
	c.paused.Add(int64(len(tps)))
	c.Source.Pause(tps...)
}

// TestAlignmentKeepsOutputIdentical is the property test of flow control:
// with an alignment window and a parked limit small enough that partitions
// are paused and resumed all the time, every interleaving still gives the
// byte-identical, sorted output, with nothing late.
func TestAlignmentKeepsOutputIdentical(t *testing.T) {
	defer func(d time.Duration) { runTimeout = d }(runTimeout)
	runTimeout = 20 * time.Second
	var pauses int64
	for dataSeed := range uint64(6) {
		parts, all := recordSet(dataSeed)
		expected := want(t, all)
		for seed := range uint64(10) {
			var buf bytes.Buffer
			src := &countingSource{Source: script.New(seed*31+dataSeed, 1+int(seed%5), parts...)}
			opts := []signalbox.Option{tsInputs("orders", "stock", "prices"),
				signalbox.WithDelay(disorder * time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
				signalbox.WithAlignment(time.Duration(10*(1+seed%3)) * time.Millisecond),
				signalbox.WithSink(jsonl.New(&buf, jsonl.Options{})), signalbox.WithUntil(signalbox.UntilEndOffsets)}
			if seed%2 == 1 {
				opts = append(opts, signalbox.WithParkedLimit(2<<10))
			}
			p, err := signalbox.New(src, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := runBounded(t, p); err != nil {
				t.Fatalf("data %d seed %d: %v", dataSeed, seed, err)
			}
			if !bytes.Equal(buf.Bytes(), expected) {
				t.Fatalf("data %d seed %d: output differs from the sorted record set", dataSeed, seed)
			}
			if late := p.Stats().LateTotal().Count; late != 0 {
				t.Fatalf("data %d seed %d: %d late records", dataSeed, seed, late)
			}
			pauses += src.paused.Load()
		}
	}
	if pauses == 0 {
		t.Fatal("no partition was ever paused: the property is vacuous")
	}
	t.Logf("%d partitions paused across the runs", pauses)
}

// silentReplay is eight partitions of history, one record every 10 ms of
// event time in each, whose partition 0 delivers nothing for its first
// silent polls (a partition slow to connect).
func silentReplay(silent int) ([]script.Partition, int) {
	const perPart = 2000
	var parts []script.Partition
	for p := range int32(8) {
		sp := script.Partition{TopicPartition: tp("ev", p)}
		if p == 0 {
			sp.Silent = silent
		}
		for i := range int64(perPart) {
			sp.Records = append(sp.Records, tsRecord("ev", p, i, "k", 1_700_000_000_000+i*10))
		}
		parts = append(parts, sp)
	}
	return parts, 8 * perPart
}

// replaySilent runs silentReplay through the engine with opts and returns
// the store's peaks; the output must be complete and in order, nothing late.
func replaySilent(t *testing.T, maxBatch int, opts ...signalbox.Option) *peakStore {
	t.Helper()
	parts, n := silentReplay(400)
	store := newPeakStore()
	out := &collect{}
	p, err := signalbox.New(script.New(7, maxBatch, parts...), append([]signalbox.Option{tsInputs("ev"),
		signalbox.WithDelay(50 * time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithParkedStore(store), signalbox.WithSink(out), signalbox.WithUntil(signalbox.UntilEndOffsets)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	if len(out.records) != n {
		t.Fatalf("%d records out, want %d", len(out.records), n)
	}
	for i := 1; i < len(out.records); i++ {
		if out.records[i].EventTime < out.records[i-1].EventTime {
			t.Fatalf("out of order at %d: %d after %d", i, out.records[i].EventTime, out.records[i-1].EventTime)
		}
	}
	if late := p.Stats().LateTotal().Count; late != 0 {
		t.Fatalf("%d late records", late)
	}
	return store
}

// TestAlignmentBoundsParkedWhileAPartitionIsSilent: partition 0 delivers
// nothing for a while, so the watermark stays at −∞. Without alignment the
// other partitions are read on and everything they deliver is parked; with
// it, each is paused once it runs one window (plus the event time of one
// answer) past its own first record, so the parked set stays under the
// bound the window implies — and the output is still complete and ordered.
func TestAlignmentBoundsParkedWhileAPartitionIsSilent(t *testing.T) {
	const maxBatch = 20 // records per answer: at most 200 ms of event time
	window := time.Second
	// Per running partition: the window, one answer's span on top of it,
	// and the answer that crossed the line, at one record per 10 ms; the
	// silent partition, once it speaks, holds the others at its own pace.
	perPart := int64(window/(10*time.Millisecond)) + 2*maxBatch
	bound := 8 * perPart
	aligned := replaySilent(t, maxBatch, signalbox.WithAlignment(window), signalbox.WithParkedLimit(0))
	unaligned := replaySilent(t, maxBatch, signalbox.WithAlignment(0), signalbox.WithParkedLimit(0))
	checkBound(t, "records parked with alignment", aligned.maxLen, unaligned.maxLen, bound)
}

// checkBound fails when with exceeds bound, or when without does not: a
// bound that holds without the mechanism proves nothing.
func checkBound(t *testing.T, what string, with, without, bound int64) {
	t.Helper()
	t.Logf("peak %s: %d (bound %d); %d without", what, with, bound, without)
	if with > bound {
		t.Fatalf("peak %s %d is over the bound %d", what, with, bound)
	}
	if without <= bound {
		t.Fatalf("without the mechanism the peak is only %d: the scenario does not exercise it", without)
	}
}

// TestParkedLimitBoundsMemory: with alignment off, the parked-bytes limit
// alone pauses every partition but the one holding the watermark lowest,
// so the parked bytes stay within the limit plus what was already fetched
// when it was crossed: the answer that crossed it, the answers on their way
// between the source and the engine (the poller holds one, its channel
// two), and the answers of partitions resumed together below three quarters
// of the limit: at most one answer per partition in all.
func TestParkedLimitBoundsMemory(t *testing.T) {
	const maxBatch = 20
	const limit = 32 << 10
	var one record.Record = tsRecord("ev", 0, 0, "k", 1_700_000_000_000)
	one.OrderKey = "k"
	bound := int64(limit + 8*maxBatch*one.Size())
	limited := replaySilent(t, maxBatch, signalbox.WithAlignment(0), signalbox.WithParkedLimit(limit))
	unlimited := replaySilent(t, maxBatch, signalbox.WithAlignment(0), signalbox.WithParkedLimit(0))
	checkBound(t, "bytes parked with the limit", limited.maxByte, unlimited.maxByte, bound)
}

// pauseLog is a timeline source that records what the engine pauses and
// resumes.
type pauseLog struct {
	timeline
	mu     sync.Mutex
	paused map[record.TopicPartition]bool
	ever   map[record.TopicPartition]bool
}

func (s *pauseLog) Pause(tps ...record.TopicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		s.paused[tp], s.ever[tp] = true, true
	}
}

func (s *pauseLog) Resume(tps ...record.TopicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		delete(s.paused, tp)
	}
}

func (s *pauseLog) state(tp record.TopicPartition) (paused, ever bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused[tp], s.ever[tp]
}

// TestRevokeResumesAPausedPartition: a partition paused by alignment and
// then revoked (a rebalance) is resumed at the source as it leaves, so that
// a later assignment of it fetches again; the partition that holds the
// watermark lowest is never paused.
func TestRevokeResumesAPausedPartition(t *testing.T) {
	a, b := tp("ev", 0), tp("ev", 1)
	src := &pauseLog{paused: map[record.TopicPartition]bool{}, ever: map[record.TopicPartition]bool{}, timeline: timeline{fetches: []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a, End: 10}, {TopicPartition: b, End: 10}}},
		fetched(a, 1, 10, tsRecord("ev", 0, 0, "k", 1_000)),
		// b runs ahead one second per answer: past the 1 s window plus
		// the last answer's span once it is 3 s past its first record.
		fetched(b, 1, 10, tsRecord("ev", 1, 0, "k", 2_000)),
		fetched(b, 2, 10, tsRecord("ev", 1, 1, "k", 3_000)),
		fetched(b, 3, 10, tsRecord("ev", 1, 2, "k", 4_000)),
		fetched(b, 4, 10, tsRecord("ev", 1, 3, "k", 5_000)),
		fetched(b, 5, 10, tsRecord("ev", 1, 4, "k", 6_000)),
		{Revoked: []record.TopicPartition{b}},
	}}}
	revoked := make(chan struct{})
	p, err := signalbox.New(src, tsInputs("ev"), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithAlignment(time.Second), signalbox.WithSink(&collect{}),
		signalbox.WithObserver(func(e signalbox.Event) {
			if e.Kind == signalbox.EventRevoked {
				close(revoked)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-revoked:
	case <-time.After(30 * time.Second):
		t.Error("the revoke was never handled")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ever := src.state(a); ever {
		t.Fatalf("the lowest holder %v was paused", a)
	}
	paused, ever := src.state(b)
	if !ever {
		t.Fatal("b was never paused: the scenario does not exercise alignment")
	}
	if paused {
		t.Fatal("b is still paused at the source after its revoke")
	}
}
