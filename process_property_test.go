package signalbox_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
)

// TestInterleavingsGiveIdenticalOutputProcessed is
// TestInterleavingsGiveIdenticalOutput with processing (WithProcess,
// WithRoutedSink): under every interleaving and fetch size, the sink of
// every record and the routed sink write byte for byte the records sorted
// by the total order, filtered and mapped, and (the routed one) the subset
// its where selects.
func TestInterleavingsGiveIdenticalOutputProcessed(t *testing.T) {
	compile := func(src string, k process.Kind) *process.Expr {
		x, err := process.Compile(src, src, k)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	steps := process.Steps{
		Filter: compile(`value.key != "k0"`, process.Filter),
		Map:    compile(`{"k": value.key, "topic": topic, "at": event_time, "n": int(value.ts) % 20 == 0 ? 0 : offset}`, process.Map),
	}
	where := compile(`value.topic == "orders" || value.k == "k3"`, process.Where)
	for dataSeed := range uint64(4) {
		parts, all := recordSet(dataSeed)
		var kept, routed []record.Record
		for _, r := range sortedTotal(all) {
			keep, err := steps.Run(&r)
			if err != nil {
				t.Fatal(err)
			}
			if !keep {
				continue
			}
			kept = append(kept, r)
			if ok, err := where.Bool(&r); err != nil {
				t.Fatal(err)
			} else if ok {
				routed = append(routed, r)
			}
		}
		if len(routed) == 0 || len(routed) == len(kept) || len(kept) == len(all) {
			t.Fatalf("data %d: filter and where must each keep some records and not others: %d of %d kept, %d routed", dataSeed, len(kept), len(all), len(routed))
		}
		wantAll, wantRouted := encodeJSONL(t, kept), encodeJSONL(t, routed)
		for seed := range uint64(8) {
			gotAll, gotRouted := runProcessed(t, parts, dataSeed, seed, steps, where)
			if !bytes.Equal(gotAll, wantAll) {
				t.Fatalf("data %d, interleaving %d: the sink of every record differs\n%s", dataSeed, seed, firstDiff(gotAll, wantAll))
			}
			if !bytes.Equal(gotRouted, wantRouted) {
				t.Fatalf("data %d, interleaving %d: the routed sink differs\n%s", dataSeed, seed, firstDiff(gotRouted, wantRouted))
			}
		}
	}
}

func runProcessed(t *testing.T, parts []script.Partition, dataSeed, seed uint64, steps process.Steps, where *process.Expr) (all, routed []byte) {
	t.Helper()
	var a, r bytes.Buffer
	src := script.New(seed*7919+dataSeed, 1+int(seed%8), parts...)
	p, err := signalbox.New(src, tsInputs("orders", "stock", "prices"),
		signalbox.WithDelay(disorder*time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithBatchSize(1+int(seed%5)*7),
		signalbox.WithProcess(steps.Process()),
		signalbox.WithSink(jsonl.New(&a, jsonl.Options{BufferSize: 64})),
		signalbox.WithRoutedSink(jsonl.New(&r, jsonl.Options{BufferSize: 64}), where.Where()),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), r.Bytes()
}
