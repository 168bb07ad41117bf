package keyed_test

import (
	"strconv"
	"testing"

	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/keyed/durable"
)

// BenchmarkWindowsMem: a tumbling one-minute count, sum and max per key
// (1,000 keys), a record every 5 ms of event time, the watermark advanced
// every 256 records, over the MemStore: the cost per record.
func BenchmarkWindowsMem(b *testing.B) { benchWindows(b) }

// BenchmarkWindowsDurable: the same over a keyed/durable Store of 64 MiB
// (on disk), whose cache holds every key.
func BenchmarkWindowsDurable(b *testing.B) {
	st, err := durable.Open[keyed.State](b.TempDir()+"/state", keyed.StateCodec{}, durable.Options{MemoryBudget: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	benchWindows(b, keyed.WithStore(st))
}

func benchWindows(b *testing.B, opts ...keyed.Option) {
	s := keyed.Spec{Name: "m", Kind: keyed.Tumbling, Size: 60_000, Aggregates: []keyed.Aggregate{
		{Name: "count", Op: keyed.Count}, {Name: "qty", Op: keyed.Sum}, {Name: "max_qty", Op: keyed.Max}}}
	w, err := keyed.New(s, func(*keyed.Result) error { return nil }, opts...)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = []byte(strconv.Quote("sku-" + strconv.Itoa(i)))
	}
	q := []byte("7")
	args := [][]byte{nil, q, q}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t := int64(i) * 5
		it, err := w.Item(keys[(i*7919)%1000], t, args) // the engine's
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Add(it, t); err != nil {
			b.Fatal(err)
		}
		if i%256 == 0 {
			if err := w.Advance(t); err != nil {
				b.Fatal(err)
			}
		}
	}
}
