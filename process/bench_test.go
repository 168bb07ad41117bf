package process_test

import (
	"strconv"
	"testing"

	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
)

// BenchmarkProcess is the cost per record of issue 36's filter, of its
// three-field map, and of both (Steps, reading value once; early: with the
// members the decoder's scan recorded, Early's Prepare then Release), over
// a JSON order of 120 bytes; by-hand is early's floor, the same work
// written in Go for this record (docs/bench.md, "The floor").
func BenchmarkProcess(b *testing.B) {
	r := issue36Order(`"ok"`)
	filter, mapx := issue36Exprs(b)
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
	// by-hand is the floor for early: the same filter and map written in
	// Go for this one record's shape, over the same members, with no
	// evaluator (a field found by name, a string copied as it is, two
	// numbers parsed, multiplied and formatted the shortest way, the result
	// copied into a value of its own). It gives exactly early's value.
	b.Run("by-hand", func(b *testing.B) {
		_, spans, ok := jsonfield.ScanMembers(r.Value, nil, nil)
		if !ok {
			b.Fatal("no members")
		}
		want, err := mapx.Apply(nil, r)
		if err != nil {
			b.Fatal(err)
		}
		var buf, slab []byte
		if got, keep := byHand(buf[:0], r.Value, spans); !keep || string(got) != string(want) {
			b.Fatalf("by hand %s, the map %s", got, want) // TestByHandIsTheChain
		}
		b.ReportAllocs()
		for b.Loop() {
			v, keep := byHand(buf[:0], r.Value, spans)
			if !keep {
				b.Fatal("dropped")
			}
			buf = v[:0]
			if len(slab)+len(v) > cap(slab) {
				slab = make([]byte, 0, 16<<10)
			}
			slab = append(slab, v...) // a value of its own, as early's: carved from a chunk
			slab = slab[:(len(slab)+7)&^7]
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
	r := issue36Order(`"ok"`)
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

// issue36Order is BenchmarkProcess's JSON order of 120 bytes, its status
// the JSON string status.
func issue36Order(status string) *record.Record {
	return &record.Record{Topic: "orders", Key: []byte("sku-1"), EventTime: 1700000000123,
		Value: []byte(`{"ts":1700000000123,"id":"o-000123","sku":"sku-000042","qty":3,"price":7.25,"status":` + status + `,"site":"oslo"}`), ValueJSON: true}
}

// issue36Exprs are issue 36's filter and map, compiled.
func issue36Exprs(tb testing.TB) (filter, mapx *process.Expr) {
	filter, err := process.Compile("process.filter", `value.status != "test"`, process.Filter)
	if err != nil {
		tb.Fatal(err)
	}
	mapx, err = process.Compile("process.map", `{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`, process.Map)
	if err != nil {
		tb.Fatal(err)
	}
	return filter, mapx
}

// TestByHandIsTheChain holds BenchmarkProcess/by-hand to the work it
// stands for: over the benchmark's order, and the same order with status
// "test", byHand keeps and drops what the filter does, and its value is
// the map's, byte for byte.
func TestByHandIsTheChain(t *testing.T) {
	filter, mapx := issue36Exprs(t)
	for _, status := range []string{`"ok"`, `"test"`} {
		r := issue36Order(status)
		_, spans, ok := jsonfield.ScanMembers(r.Value, nil, nil)
		if !ok {
			t.Fatal("no members")
		}
		got, keep := byHand(nil, r.Value, spans)
		want, err := filter.Bool(r)
		if err != nil || keep != want {
			t.Fatalf("status %s: by hand keeps %v, the filter %v (%v)", status, keep, want, err)
		}
		if !keep {
			continue
		}
		if v, err := mapx.Apply(nil, r); err != nil || string(got) != string(v) {
			t.Errorf("status %s: by hand %s, the map %s (%v)", status, got, v, err)
		}
	}
}

// byHand is BenchmarkProcess's filter and map written for its record by
// hand: value.status != "test", then {"id", "sku", "total": qty × price}
// into buf; keep false when the filter drops the record. Only for values
// like the benchmark's (the fields present, strings without escapes).
func byHand(buf, doc []byte, spans []jsonfield.Span) (out []byte, keep bool) {
	var status, id, sku, qty, price []byte
	for _, m := range spans { // one pass: each name at its first member
		v := doc[m.ValueStart:m.ValueEnd]
		switch string(doc[m.KeyStart+1 : m.KeyEnd-1]) {
		case "status":
			status = first(status, v)
		case "id":
			id = first(id, v)
		case "sku":
			sku = first(sku, v)
		case "qty":
			qty = first(qty, v)
		case "price":
			price = first(price, v)
		}
	}
	if string(status) == `"test"` {
		return buf, false
	}
	q, _ := strconv.ParseFloat(string(qty), 64)
	p, _ := strconv.ParseFloat(string(price), 64)
	buf = append(buf, `{"id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"sku":`...)
	buf = append(buf, sku...)
	buf = append(buf, `,"total":`...)
	buf = strconv.AppendFloat(buf, q*p, 'g', -1, 64)
	return append(buf, '}'), true
}

// first is v unless a member of the name was found already (got).
func first(got, v []byte) []byte {
	if got != nil {
		return got
	}
	return v
}
