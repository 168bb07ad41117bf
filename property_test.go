package signalbox_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers"
)

// disorder bounds how far back, in ms, a record's event time may be from
// the newest one before it in its partition, plus a margin; the delay
// exceeds the disorder, so no record is late by construction.
const disorder = 40

// recordSet draws a set of partitions across three topics: event times that
// rise with bounded disorder, coarse enough that equal event times across
// partitions and keys are common; offset gaps (compaction); trailing
// transaction markers; and an empty partition.
func recordSet(seed uint64) ([]script.Partition, []record.Record) {
	rng := rand.New(rand.NewPCG(seed, 99))
	var parts []script.Partition
	var all []record.Record
	for _, topic := range []string{"orders", "stock", "prices"} {
		for p := range int32(1 + rng.IntN(3)) {
			sp := script.Partition{TopicPartition: tp(topic, p)}
			off := rng.Int64N(100)
			n := rng.IntN(60)
			for i := range n {
				// Up to 30 ms of disorder, in steps of 10 ms.
				ts := 1_700_000_000_000 + int64(i/2)*10 + 10*rng.Int64N(4)
				key := fmt.Sprintf("k%d", rng.IntN(4))
				r := tsRecord(topic, p, off, key, ts)
				sp.Records = append(sp.Records, r)
				r.EventTime = ts // what the pipeline must decode from "ts"
				all = append(all, r)
				off += 1 + rng.Int64N(2)*rng.Int64N(3)
			}
			switch {
			case n == 0:
				sp.Start, sp.End = off, off
			case rng.IntN(3) == 0:
				sp.End = off + 1 // a commit marker after the last record
			}
			parts = append(parts, sp)
		}
	}
	return parts, all
}

// want is the expected output: the records sorted by the total order
// (event time, key, input, partition, offset), encoded by the JSONL sink.
func want(t *testing.T, all []record.Record) []byte {
	t.Helper()
	return encodeJSONL(t, sortedTotal(all))
}

// sortedTotal is all sorted by the total order.
func sortedTotal(all []record.Record) []record.Record {
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b record.Record) int {
		pa, pb := posOf(&a), posOf(&b)
		switch {
		case timers.Less(pa, pb):
			return -1
		case timers.Less(pb, pa):
			return 1
		}
		return 0
	})
	return sorted
}

// encodeJSONL is what the JSONL sink writes of sorted.
func encodeJSONL(t *testing.T, sorted []record.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	s := jsonl.New(&buf, jsonl.Options{})
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, sorted); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestInterleavingsGiveIdenticalOutput: the same record set, delivered under
// many interleavings and fetch sizes, gives byte-identical JSONL output,
// sorted by the total order, in bounded mode; and no record is late.
func TestInterleavingsGiveIdenticalOutput(t *testing.T) {
	for dataSeed := range uint64(6) {
		parts, all := recordSet(dataSeed)
		expected := want(t, all)
		for seed := range uint64(12) {
			p, buf := runInterleaving(t, parts, dataSeed, seed, tsInputs("orders", "stock", "prices"))
			if late := p.Stats().LateTotal(); late.Count != 0 {
				t.Fatalf("data %d, interleaving %d: %d late records, want none by construction", dataSeed, seed, late.Count)
			}
			if !bytes.Equal(buf.Bytes(), expected) {
				t.Fatalf("data %d, interleaving %d: output differs from the records sorted by the total order\n%s",
					dataSeed, seed, firstDiff(buf.Bytes(), expected))
			}
		}
	}
}

// runInterleaving runs parts in bounded mode under interleaving seed of
// data set dataSeed, with batches split anywhere, and returns the pipeline
// and its JSONL output.
func runInterleaving(t *testing.T, parts []script.Partition, dataSeed, seed uint64, inputs signalbox.Option) (*signalbox.Pipeline, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	src := script.New(seed*7919+dataSeed, 1+int(seed%8), parts...)
	p, err := signalbox.New(src, inputs,
		signalbox.WithDelay(disorder*time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithBatchSize(1+int(seed%5)*7),
		signalbox.WithSink(jsonl.New(&buf, jsonl.Options{BufferSize: 64})),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	return p, &buf
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(g), len(w)) {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, gl, wl)
		}
	}
	return "(no difference)"
}
