package signalbox_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers"
)

// peakStore is the in-memory timer queue, remembering the most records and
// bytes it ever held.
type peakStore struct {
	q               *timers.Queue[*record.Record]
	buf             []*record.Record
	maxLen, maxByte int64
}

func newPeakStore() *peakStore { return &peakStore{q: timers.NewQueue[*record.Record]()} }

func (s *peakStore) Park(p timers.Pos, r *record.Record) error {
	s.q.Push(p, r, r.Size())
	s.maxLen, s.maxByte = max(s.maxLen, int64(s.q.Len())), max(s.maxByte, s.q.Bytes())
	return nil
}

func (s *peakStore) Release(wm int64, n int, fn func(*record.Record) error) error {
	s.buf = s.q.PopUntil(wm, n, s.buf[:0])
	for _, r := range s.buf {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (s *peakStore) Min() (timers.Pos, bool) { return s.q.Min() }
func (s *peakStore) Len() int                { return s.q.Len() }
func (s *peakStore) Bytes() int64            { return s.q.Bytes() }

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
	runTimeout = 5 * time.Second
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
	t.Logf("peak parked: %d records aligned (bound %d), %d unaligned", aligned.maxLen, bound, unaligned.maxLen)
	if aligned.maxLen > bound {
		t.Fatalf("aligned replay parked %d records, over the bound %d", aligned.maxLen, bound)
	}
	if unaligned.maxLen <= bound {
		t.Fatalf("unaligned replay parked only %d records: the scenario does not exercise alignment", unaligned.maxLen)
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
	t.Logf("peak parked bytes: %d limited (bound %d), %d unlimited", limited.maxByte, bound, unlimited.maxByte)
	if limited.maxByte > bound {
		t.Fatalf("parked %d bytes, over the bound %d", limited.maxByte, bound)
	}
	if unlimited.maxByte <= bound {
		t.Fatalf("without the limit only %d bytes were parked: the scenario does not exercise the limit", unlimited.maxByte)
	}
}
