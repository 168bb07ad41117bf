package signalbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
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
// and its JSONL output. The delay is disorder unless opts set another.
func runInterleaving(t *testing.T, parts []script.Partition, dataSeed, seed uint64, inputs signalbox.Option, opts ...signalbox.Option) (*signalbox.Pipeline, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	src := script.New(seed*7919+dataSeed, 1+int(seed%8), parts...)
	p, err := signalbox.New(src, append([]signalbox.Option{inputs,
		signalbox.WithDelay(disorder * time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithBatchSize(1 + int(seed%5)*7),
		signalbox.WithSink(jsonl.New(&buf, jsonl.Options{BufferSize: 64})),
		signalbox.WithUntil(signalbox.UntilEndOffsets)}, opts...)...)
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

// markLate is the test's model of design L1: in each partition, in offset
// order, a record more than delay (ms) behind the newest event time before
// it, at or below that newest event time − delay − 1 ms, is late by the
// data, by that mark minus its event time.
// It sets Late and LateBy on parts' records and returns copies of them all,
// with EventTime set, and how many are late.
func markLate(parts []script.Partition, delay int64) (all []record.Record, late int) {
	for i := range parts {
		newest := int64(math.MinInt64)
		for j := range parts[i].Records {
			r := &parts[i].Records[j]
			r.EventTime = tsOf(r)
			if mark := newest - delay - 1; newest != math.MinInt64 && r.EventTime <= mark {
				r.Late, r.LateBy = true, mark-r.EventTime
				late++
			}
			newest = max(newest, r.EventTime)
			all = append(all, *r)
			r.Late, r.LateBy, r.EventTime = false, 0, 0 // what the source delivers
		}
	}
	return all, late
}

// tsOf is a tsRecord's event time.
func tsOf(r *record.Record) int64 {
	var v struct{ Ts int64 }
	if err := json.Unmarshal(r.Value, &v); err != nil {
		panic(err)
	}
	return v.Ts
}

// jumpBack makes some of parts' partitions jump back, from a record on, by
// more than the delay (disorder): those of their records that are then at
// or below their partition's newest event time minus the delay are late by
// the data.
func jumpBack(parts []script.Partition, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range parts {
		recs := parts[i].Records
		if len(recs) < 4 || rng.IntN(3) == 0 {
			continue
		}
		back := int64(disorder + 10 + 10*rng.IntN(30)) // 50 to 340 ms
		for j := 1 + rng.IntN(len(recs)-2); j < len(recs); j++ {
			r := &recs[j]
			recs[j] = tsRecord(r.Topic, r.Partition, r.Offset, string(r.Key), tsOf(r)-back)
		}
	}
}

// TestInterleavingsGiveIdenticalLateness: partitions that jump back by more
// than the delay, delivered under many interleavings and fetch sizes, flag
// the same records late, those the data says (design L1, markLate), and
// give byte-identical output: each late record is released just after its
// partition's mark by the data when it was read (posOf), flagged with how
// late it was.
func TestInterleavingsGiveIdenticalLateness(t *testing.T) {
	lateSets := 0
	for dataSeed := range uint64(8) {
		parts, _ := recordSet(dataSeed)
		jumpBack(parts, dataSeed)
		all, late := markLate(parts, disorder)
		if late > 0 {
			lateSets++
		}
		expected := want(t, all)
		for seed := range uint64(12) {
			p, buf := runInterleaving(t, parts, dataSeed, seed, tsInputs("orders", "stock", "prices"))
			if got := p.Stats().LateTotal(); got.Count != int64(late) || got.Emitted != int64(late) {
				t.Fatalf("data %d, interleaving %d: %d late records (%d emitted), want %d", dataSeed, seed, got.Count, got.Emitted, late)
			}
			if !bytes.Equal(buf.Bytes(), expected) {
				t.Fatalf("data %d, interleaving %d: output differs from the model's\n%s",
					dataSeed, seed, firstDiff(buf.Bytes(), expected))
			}
		}
	}
	if lateSets < 4 {
		t.Fatalf("only %d of the data sets have late records", lateSets)
	}
}

// tieSet draws partitions across three topics whose event times come in
// runs of equal values (many records per millisecond), each partition in
// order, rising by 1 or 2 ms between runs so that the partitions overtake
// one another at every step.
func tieSet(seed uint64) []script.Partition {
	rng := rand.New(rand.NewPCG(seed, 31))
	var parts []script.Partition
	for _, topic := range []string{"orders", "stock", "prices"} {
		for p := range int32(1 + rng.IntN(3)) {
			sp := script.Partition{TopicPartition: tp(topic, p)}
			ts := 1_700_000_000_000 + rng.Int64N(3)
			for i := range 20 + rng.IntN(60) {
				if rng.IntN(4) == 0 {
					ts += 1 + rng.Int64N(2)
				}
				sp.Records = append(sp.Records, tsRecord(topic, p, int64(i), fmt.Sprintf("k%d", rng.IntN(4)), ts))
			}
			parts = append(parts, sp)
		}
	}
	return parts
}

// TestEqualEventTimesAtDelayZero: under a delay of 0, partitions whose runs
// of equal event times are split across fetch answers of random sizes, in
// random interleavings, flag no record late when each partition is in
// order, and the records the data says (markLate) when some jump back; the
// output is the model's, byte for byte, every time. A holding partition
// whose newest event time is m may still deliver records at m, so it holds
// the watermark at m − 1 ms (design W1): its siblings at m are never late
// by timing.
func TestEqualEventTimesAtDelayZero(t *testing.T) {
	for dataSeed := range uint64(8) {
		parts := tieSet(dataSeed)
		if dataSeed%2 == 1 {
			jumpBack(parts, dataSeed)
		}
		all, late := markLate(parts, 0)
		if dataSeed%2 == 0 && late != 0 {
			t.Fatalf("data %d: the model flags %d records of in-order partitions late", dataSeed, late)
		}
		expected := want(t, all)
		for seed := range uint64(12) {
			p, buf := runInterleaving(t, parts, dataSeed, seed, tsInputs("orders", "stock", "prices"), signalbox.WithDelay(0))
			if got := p.Stats().LateTotal(); got.Count != int64(late) || got.Emitted != int64(late) {
				t.Fatalf("data %d, interleaving %d: %d late records (%d emitted), want %d", dataSeed, seed, got.Count, got.Emitted, late)
			}
			if !bytes.Equal(buf.Bytes(), expected) {
				t.Fatalf("data %d, interleaving %d: output differs from the model's\n%s",
					dataSeed, seed, firstDiff(buf.Bytes(), expected))
			}
		}
	}
}
