package signalbox_test

import (
	"bytes"
	"context"
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

// recyclingSource delivers the script source's records in arrays of its
// own and takes them back (signalbox.Recycler). A recycled array is
// poisoned at once: every record in it is overwritten, so a record the
// engine still refers to would come out wrong, or out of order.
type recyclingSource struct {
	*script.Source
	t         *testing.T
	mu        sync.Mutex             // Poll runs on the poller goroutine, Recycle on the engine's
	delivered map[*record.Record]int // first element → length, while out
	arrays    int                    // arrays delivered
	recycled  int
}

func newRecyclingSource(t *testing.T, src *script.Source) *recyclingSource {
	return &recyclingSource{Source: src, t: t, delivered: map[*record.Record]int{}}
}

func (s *recyclingSource) Poll(ctx context.Context) (record.Fetch, error) {
	f, err := s.Source.Poll(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range f.Partitions {
		pf := &f.Partitions[i]
		if len(pf.Records) == 0 {
			continue
		}
		own := make([]record.Record, len(pf.Records), len(pf.Records)+1)
		copy(own, pf.Records)
		pf.Records = own
		s.delivered[unsafe.SliceData(own)] = len(own)
		s.arrays++
	}
	return f, err
}

// Recycle checks that recs is an array it delivered and has not had back,
// and poisons it.
func (s *recyclingSource) Recycle(recs []record.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := unsafe.SliceData(recs)
	n, ok := s.delivered[first]
	if !ok || n != len(recs) {
		s.t.Errorf("Recycle of an array not delivered, or given back twice (%d records)", len(recs))
		return
	}
	delete(s.delivered, first)
	s.recycled++
	for i := range recs {
		recs[i] = record.Record{Topic: "poison", EventTime: -1, Value: []byte("poison"), Key: []byte("poison")}
	}
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
