package signalbox_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers/durable"
)

// arrayLedger re-delivers a source's record arrays as arrays of its own and
// takes them back (signalbox.Recycler). A recycled array is poisoned at
// once: every record in it is overwritten, so a record the engine still
// refers to would come out wrong, or out of order.
type arrayLedger struct {
	t         *testing.T
	mu        sync.Mutex             // Poll runs on the poller goroutine, Recycle on the engine's
	delivered map[*record.Record]int // first element → length, while out
	back      map[string]bool        // "topic/partition@first offset" → given back
	arrays    int                    // arrays delivered
	recycled  int
}

func newArrayLedger(t *testing.T) arrayLedger {
	return arrayLedger{t: t, delivered: map[*record.Record]int{}, back: map[string]bool{}}
}

func arrayName(recs []record.Record) string {
	return fmt.Sprintf("%s/%d@%d", recs[0].Topic, recs[0].Partition, recs[0].Offset)
}

// own replaces every record array of f by a copy the arrayLedger tracks.
func (l *arrayLedger) own(f *record.Fetch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range f.Partitions {
		pf := &f.Partitions[i]
		if len(pf.Records) == 0 {
			continue
		}
		own := make([]record.Record, len(pf.Records), len(pf.Records)+1)
		copy(own, pf.Records)
		pf.Records = own
		l.delivered[unsafe.SliceData(own)] = len(own)
		l.back[arrayName(own)] = false
		l.arrays++
	}
}

// Recycle checks that recs is an array it delivered and has not had back,
// and poisons it.
func (l *arrayLedger) Recycle(recs []record.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := unsafe.SliceData(recs)
	n, ok := l.delivered[first]
	if !ok || n != len(recs) {
		l.t.Errorf("Recycle of an array not delivered, or given back twice (%d records)", len(recs))
		return
	}
	delete(l.delivered, first)
	l.back[arrayName(recs)] = true
	l.recycled++
	for i := range recs {
		recs[i] = record.Record{Topic: "poison", EventTime: -1, Value: []byte("poison"), Key: []byte("poison")}
	}
}

// recyclingSource is the script source, its arrays tracked by a arrayLedger.
type recyclingSource struct {
	*script.Source
	arrayLedger
}

func newRecyclingSource(t *testing.T, src *script.Source) *recyclingSource {
	return &recyclingSource{Source: src, arrayLedger: newArrayLedger(t)}
}

func (s *recyclingSource) Poll(ctx context.Context) (record.Fetch, error) {
	f, err := s.Source.Poll(ctx)
	s.own(&f)
	return f, err
}

// TestRecycledArraysAreNotReferenced: the property test's record sets and
// interleavings, delivered in arrays that are poisoned as soon as the
// engine gives them back, still give byte-identical, sorted output, with
// the in-memory store (which refers to parked records) and with a durable
// one (which copies them); and every array comes back by the end of a
// bounded run. With a store the engine does not know, none is given back.
// (The test fails if the engine gives an array back while a record of it
// is parked: its poisoned copy is released instead.)
func TestRecycledArraysAreNotReferenced(t *testing.T) {
	for _, store := range []string{"memory", "durable", "unknown"} {
		t.Run(store, func(t *testing.T) {
			for dataSeed := range uint64(4) {
				parts, all := recordSet(dataSeed)
				expected := want(t, all)
				for seed := range uint64(8) {
					var buf bytes.Buffer
					src := newRecyclingSource(t, script.New(seed*7919+dataSeed, 1+int(seed%8), parts...))
					opts := []signalbox.Option{tsInputs("orders", "stock", "prices"),
						signalbox.WithDelay(disorder * time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
						signalbox.WithBatchSize(1 + int(seed%5)*7),
						signalbox.WithSink(jsonl.New(&buf, jsonl.Options{BufferSize: 64})),
						signalbox.WithUntil(signalbox.UntilEndOffsets),
					}
					switch store {
					case "durable":
						s, err := durable.OpenStore(t.TempDir(), durable.StoreOptions{MemoryBudget: 4 << 10})
						if err != nil {
							t.Fatal(err)
						}
						defer s.Close()
						opts = append(opts, signalbox.WithParkedStore(s))
					case "unknown":
						opts = append(opts, signalbox.WithParkedStore(newPeakStore()))
					}
					p, err := signalbox.New(src, opts...)
					if err != nil {
						t.Fatal(err)
					}
					if err := runBounded(t, p); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(buf.Bytes(), expected) {
						t.Fatalf("data %d, interleaving %d: output differs from the records sorted by the total order\n%s",
							dataSeed, seed, firstDiff(buf.Bytes(), expected))
					}
					want := src.arrays
					if store == "unknown" {
						want = 0
					}
					if src.recycled != want {
						t.Errorf("data %d, interleaving %d: %d of %d arrays given back, want %d", dataSeed, seed, src.recycled, src.arrays, want)
					}
				}
			}
		})
	}
}

// recyclingTimeline is a scripted timeline, its arrays tracked by a arrayLedger.
type recyclingTimeline struct {
	timeline
	arrayLedger
}

func (s *recyclingTimeline) Poll(ctx context.Context) (record.Fetch, error) {
	f, err := s.timeline.Poll(ctx)
	s.own(&f)
	return f, err
}

// TestRecycleAcrossRevoke: a/0 parks records from one array, two of which
// are still parked when a/0 is revoked; it is assigned again and re-reads
// them, in a second array. The engine never gives the first array back (its
// partition's list went with the revocation, and the queue drops the
// earlier copies of the re-read positions), gives back every other one,
// and the output is each record once, in order, none of it poisoned.
func TestRecycleAcrossRevoke(t *testing.T) {
	a, b := tp("a", 0), tp("b", 0)
	src := &recyclingTimeline{arrayLedger: newArrayLedger(t), timeline: timeline{fetches: []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 0, End: 3}, {TopicPartition: b, Start: 0, End: 4}}},
		fetched(b, 1, 4, tsRecord("b", 0, 0, "x", 2000)),
		// all three park behind b/0; at b/0's next record @0 goes, @1 and @2 stay.
		fetched(a, 3, 3, tsRecord("a", 0, 0, "x", 1600), tsRecord("a", 0, 1, "y", 3000), tsRecord("a", 0, 2, "z", 4000)),
		fetched(b, 2, 4, tsRecord("b", 0, 1, "w", 2600)),
		{Revoked: []record.TopicPartition{a}},
		{Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 1, End: 3}}},
		fetched(a, 3, 3, tsRecord("a", 0, 1, "y", 3000), tsRecord("a", 0, 2, "z", 4000)),
		fetched(b, 4, 4, tsRecord("b", 0, 2, "v", 5000), tsRecord("b", 0, 3, "u", 6000)),
	}}}
	out := &collect{}
	p, err := signalbox.New(src, tsInputs("a", "b"),
		signalbox.WithDelay(500*time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0), signalbox.WithSink(out),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	want := []string{"a/0@0 t=1600", "b/0@0 t=2000", "b/0@1 t=2600", "a/0@1 t=3000", "a/0@2 t=4000", "b/0@2 t=5000", "b/0@3 t=6000"}
	if got := out.lines(); !slices.Equal(got, want) {
		t.Fatalf("output:\n%v\nwant:\n%v", got, want)
	}
	if src.back["a/0@0"] {
		t.Error("the array a/0 delivered before it was revoked was given back while the queue may still refer to it")
	}
	if src.recycled != src.arrays-1 {
		t.Errorf("%d of %d arrays given back, want all but the revoked partition's first", src.recycled, src.arrays)
	}
}
