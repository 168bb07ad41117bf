package process_test

import (
	"testing"

	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
)

// BenchmarkProcess is the cost per record of issue 36's filter, of its
// three-field map, and of both (Steps, reading value once; early: with the
// members the decoder's scan recorded, Early's Prepare then Release), over
// a JSON order of 120 bytes.
func BenchmarkProcess(b *testing.B) {
	r := &record.Record{Topic: "orders", Key: []byte("sku-1"), EventTime: 1700000000123,
		Value: []byte(`{"ts":1700000000123,"id":"o-000123","sku":"sku-000042","qty":3,"price":7.25,"status":"ok","site":"oslo"}`), ValueJSON: true}
	filter, err := process.Compile("process.filter", `value.status != "test"`, process.Filter)
	if err != nil {
		b.Fatal(err)
	}
	mapx, err := process.Compile("process.map", `{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`, process.Map)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("filter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := filter.Bool(r); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("map3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := mapx.Apply(nil, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("early", func(b *testing.B) { // Prepare with the decoder's members, then Release
		e, ok := process.NewEarly(process.Steps{Filter: filter, Map: mapx})
		if !ok {
			b.Fatal("not early")
		}
		_, spans, ok := jsonfield.ScanMembers(r.Value, nil, nil)
		if !ok {
			b.Fatal("no members")
		}
		rr := new(record.Record)
		b.ReportAllocs()
		for b.Loop() {
			*rr = *r
			e.Prepare(rr, spans, true)
			if keep, err := e.Release(rr); !keep || err != nil {
				b.Fatal(keep, err)
			}
		}
	})
	b.Run("filter+map3", func(b *testing.B) {
		s := process.Steps{Filter: filter, Map: mapx}
		rr := new(record.Record) // as the engine's: in an array on the heap
		b.ReportAllocs()
		for b.Loop() {
			*rr = *r
			if ok, err := s.Run(rr); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}

// BenchmarkWindowArgs is the cost per record of issue 37's window key
// (value.sku) and argument (value.qty, asked for twice: sum and max),
// each evaluated alone, and with a Set (one activation, one member scan,
// no allocation), over the same JSON order.
func BenchmarkWindowArgs(b *testing.B) {
	r := &record.Record{Topic: "orders", Key: []byte("sku-1"), EventTime: 1700000000123,
		Value: []byte(`{"ts":1700000000123,"id":"o-000123","sku":"sku-000042","qty":3,"price":7.25,"status":"ok","site":"oslo"}`), ValueJSON: true}
	key, err := process.Compile("windows[0].key", `value.sku`, process.Map)
	if err != nil {
		b.Fatal(err)
	}
	qty, err := process.Compile("windows[0].aggregate.qty", `value.qty`, process.Map)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := key.Apply(nil, r); err != nil {
				b.Fatal(err)
			}
			if _, err := qty.Apply(nil, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("set", func(b *testing.B) {
		var set process.Set
		k, q := set.Apply(key), set.Apply(qty)
		recs := make([]record.Record, 2) // the set moves from one to the other
		recs[0], recs[1] = *r, *r
		recs[1].Offset = 1
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			rr := &recs[i&1]
			i++
			if _, err := k(rr); err != nil {
				b.Fatal(err)
			}
			if _, err := q(rr); err != nil {
				b.Fatal(err)
			}
			if _, err := q(rr); err != nil {
				b.Fatal(err)
			}
		}
	})
}
