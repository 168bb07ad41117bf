package process_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/tables"
)

// TestEarlyIsTheChain runs random chains (an input's steps, then the
// job's) over random values, as the run does for a topic whose processing
// runs early: Prepare as the record is decoded (with the decoder's
// members, or without), then Release at release, with the result Prepare
// kept, lost (a store that does not keep it) or copied (one that does).
// Each gives exactly what the chain gives at release alone: the verdict,
// the error's text and the record; and Prepare leaves the record's value
// as it was, the bytes a dead letter carries.
func TestEarlyIsTheChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 11))
	compile := func(k process.Kind, srcs ...string) []*process.Expr {
		var xs []*process.Expr
		for _, src := range srcs {
			x, err := process.Compile("process.x", src, k)
			if err != nil {
				t.Fatal(err)
			}
			xs = append(xs, x)
		}
		return append(xs, nil) // no step
	}
	filters := compile(process.Filter, `value.status != "test"`, `value.qty > 3.0`, `has(value.id) || value.sku == "x"`, `key == "k1" && topic == "orders"`)
	maps := compile(process.Map, `{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`, `{"sku": value.sku, "m": value.meta}`,
		`{"id": value.id, "v": value.meta.v}`, `value.qty - value.price`, `{"total": value.total, "status": value.status}`)
	vals := map[string][]string{
		"id":     {`"o-000123"`, `"\u006f-1"`, `1`, `null`},
		"sku":    {`"sku-000042"`, `"x"`, `"a\"b"`, `["x"]`},
		"qty":    {`3`, `-2`, `"3"`, `2.5`},
		"price":  {`7.25`, `10`, `"7.25"`, `null`},
		"status": {`"ok"`, `"test"`, `"t\u0065st"`, `true`},
		"meta":   {`{"v":1}`, `{"v":"x","v":2}`, `[1]`},
		"total":  {`21.75`, `"x"`},
	}
	names := []string{"ts", "id", "sku", "qty", "price", "status", "meta", "total", "\\u0071ty"}
	value := func() []byte {
		switch rng.IntN(12) {
		case 0:
			return nil // a tombstone
		case 1:
			return []byte(`[1,2]`)
		case 2:
			return []byte(`{"id":"x",`) // not JSON
		}
		var b strings.Builder
		b.WriteString("{")
		for _, n := range rng.Perm(len(names)) {
			if rng.IntN(6) == 0 {
				continue
			}
			v := `1700000000123`
			if vs, ok := vals[strings.ReplaceAll(names[n], `\u0071`, "q")]; ok {
				v = vs[rng.IntN(len(vs))]
			}
			if b.Len() > 1 {
				b.WriteString([]string{",", ",", " ,\n "}[rng.IntN(3)])
			}
			fmt.Fprintf(&b, `"%s":%s`, names[n], v)
		}
		return []byte(b.String() + "}")
	}
	var o outcomes
	for range 20000 {
		pick := func(xs []*process.Expr) *process.Expr {
			if rng.IntN(2) == 0 {
				return nil
			}
			return xs[rng.IntN(len(xs))]
		}
		in := process.Steps{Filter: pick(filters), Map: pick(maps)}
		job := process.Steps{Filter: pick(filters), Map: pick(maps)}
		e, ok := process.NewEarly(in, job)
		if !ok {
			t.Fatalf("%v, %v: not early", in, job)
		}
		v := value()
		orig := record.Record{Topic: "orders", Key: []byte(fmt.Sprint("k", rng.IntN(2))), Value: v,
			ValueJSON: v != nil && jsonfield.Scan(v, nil).Valid && !bytes.ContainsAny(v, "\n") && rng.IntN(2) == 0}
		want := orig
		k1, e1 := process.Chain(in, job)(&want)
		if e1 != nil && (!bytes.Equal(want.Value, v) || unsafe.SliceData(want.Value) != unsafe.SliceData(v)) {
			t.Fatalf("%v then %v over %s: the chain failed (%v) and left %s", in, job, v, e1, want.Value)
		}

		got := orig
		d, spans, scanned := jsonfield.ScanMembers(v, nil, nil)
		scanned = scanned && d.Valid && rng.IntN(3) > 0
		e.Prepare(&got, spans, scanned)
		if unsafe.SliceData(got.Value) != unsafe.SliceData(orig.Value) || len(got.Value) != len(orig.Value) || got.ValueJSON != orig.ValueJSON {
			t.Fatalf("Prepare over %s changed the value: %q", v, got.Value)
		}
		o.release(t, rng, e, &got, &want, k1, e1, fmt.Sprintf("%v then %v over %s", in, job, v))
	}
	o.enough(t, 5000, 2000, 1000, 1000)
	if _, ok := process.NewEarly(process.Steps{Filter: compile(process.Filter, `!late`)[0]}); ok {
		t.Fatal("a filter that reads late runs early")
	}
}

// FuzzEarly: any value, as the run gives it to Prepare (with the members
// of a decoder's scan, or without), and any chain of the filter
// and map (or a map with lookups, left as a template) with an input map
// before them: Release gives the chain's result.
//
//	go test ./process -run '^$' -fuzz FuzzEarly -fuzztime 60s
func FuzzEarly(f *testing.F) {
	f.Add([]byte(`{"ts":1,"id":"o-1","sku":"s","qty":3,"price":7.25,"status":"ok"}`), true, uint8(3))
	f.Add([]byte(`{"id":"o-1","id":2,"\u0073ku":"x","qty":"3","status":"test"}`), true, uint8(7))
	f.Add([]byte(`[1,{"qty":2}]`), false, uint8(1))
	f.Add([]byte(`{"qty":1e400,"price":`), true, uint8(5))
	compile := func(k process.Kind, src string) *process.Expr {
		x, err := process.Compile("process.x", src, k)
		if err != nil {
			f.Fatal(err)
		}
		return x
	}
	filter := compile(process.Filter, `value.status != "test"`)
	mapx := compile(process.Map, `{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`)
	inMap := compile(process.Map, `{"id": value.id, "sku": value.sku, "qty": value.qty, "price": 2.5, "status": value.status}`)
	// with a lookup: a template (invariant 13)
	set := productsTable(f, func(tb *tables.Table) {
		tb.Put("s", 0, []byte(`{"name":"pen"}`), false)
		tb.Put("x", 5, []byte(`"x"`), false)
	})
	lookupMap, err := process.Compile("process.map", `{"id": value.id, "p": lookup("products", value.sku), "q": {"r": lookup("products", value.qty)}}`, process.Map, process.WithTables(set))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"id":"o-1","sku":"s","qty":3}`), true, uint8(9))
	f.Add([]byte(`{"id":"o-1","sku":"x","qty":"s","status":"ok"}`), false, uint8(13))
	f.Fuzz(func(t *testing.T, v []byte, members bool, shape uint8) {
		var in, job process.Steps
		if shape&1 != 0 {
			job.Filter = filter
		}
		if shape&2 != 0 {
			job.Map = mapx
		}
		if shape&8 != 0 {
			job.Map = lookupMap
		}
		if shape&4 != 0 {
			in.Map = inMap
		}
		e, ok := process.NewEarly(in, job)
		if !ok {
			t.Fatal("not early")
		}
		orig := record.Record{Topic: "orders", Value: v, EventTime: int64(shape >> 4)}
		want := orig
		k1, e1 := process.Chain(in, job)(&want)
		got := orig
		_, spans, scanned := jsonfield.ScanMembers(v, nil, nil)
		e.Prepare(&got, spans, scanned && members)
		if !bytes.Equal(got.Value, v) {
			t.Fatalf("Prepare changed the value %q to %q", v, got.Value)
		}
		k2, e2 := e.Release(&got)
		if k1 != k2 || fmt.Sprint(e1) != fmt.Sprint(e2) || (k1 || e1 != nil) && !bytes.Equal(want.Value, got.Value) {
			t.Fatalf("%q: chain %v %v %q; early %v %v %q", v, k1, e1, want.Value, k2, e2, got.Value)
		}
	})
}

// TestTemplateIsTheChain: a chain whose last map reads the release only
// through lookups of keys that do not runs early as a template (doc.go
// invariant 13): Prepare renders all but the lookups, Release makes them
// into the holes; what Release gives is the chain's, over random orders of
// random event times (a version exactly at the time, before the first,
// after a tombstone, a `time: none` record), keys of every kind (a
// string, an integral number, a fraction, null, missing, an unknown one),
// table values of every kind, lookups nested in maps or the whole result,
// an input map before, a filter beside, the template kept, copied or lost.
func TestTemplateIsTheChain(t *testing.T) {
	set := productsTable(t, func(tb *tables.Table) {
		tb.Put("sku-2", 50, []byte(`"two"`), false)
		tb.Put("sku-2", 250, []byte(`[1,{"b":2}]`), false)
		tb.Put("42", 0, []byte(`42.50`), false)
		tb.Put("x\"y", 0, []byte(`{"q":"\u00e9"}`), false)
	})
	compile := func(k process.Kind, src string) *process.Expr {
		x, err := process.Compile("process.x", src, k, process.WithTables(set))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	maps := []*process.Expr{
		compile(process.Map, `{"id": value.id, "product": lookup("products", value.sku)}`),
		compile(process.Map, `{"p": {"a": lookup("products", value.sku), "n": value.qty * 2.0}, "k": lookup("products", value.n), "id": value.id}`),
		compile(process.Map, `lookup("products", value.sku)`),
		compile(process.Map, `{"a": lookup("products", value.sku), "b": lookup("products", value.sku), "s": value.sku}`),
	}
	filter := compile(process.Filter, `value.qty > 1.0`)
	inMap := compile(process.Map, `{"id": value.id, "sku": value.sku, "n": value.n, "qty": value.qty}`)
	for _, src := range []string{`{"x": lookup("products", value.sku).name}`, `{"id": value.id, "l": late}`, `{"p": lookup("products", lookup("products", value.sku))}`} {
		if _, ok := process.NewEarly(process.Steps{Map: compile(process.Map, src)}); ok {
			t.Errorf("%s runs early", src)
		}
	}
	if _, ok := process.NewEarly(process.Steps{Map: maps[0]}, process.Steps{Filter: filter}); ok {
		t.Error("a lookup before another step runs early")
	}
	rng := rand.New(rand.NewPCG(38, 13))
	skus := []string{`"sku-1"`, `"sku-2"`, `"nope"`, `42`, `42.0`, `1.5`, `null`, `"x\"y"`, `"sku-\u0031"`, `true`}
	var o outcomes
	for range 20000 {
		var b strings.Builder
		b.WriteString("{")
		for _, m := range rng.Perm(4) {
			if rng.IntN(8) == 0 {
				continue
			}
			if b.Len() > 1 {
				b.WriteString(",")
			}
			switch m {
			case 0:
				fmt.Fprintf(&b, `"id":"o%d"`, rng.IntN(100))
			case 1:
				fmt.Fprintf(&b, `"sku":%s`, skus[rng.IntN(len(skus))])
			case 2:
				fmt.Fprintf(&b, `"n":%s`, skus[rng.IntN(len(skus))])
			case 3:
				fmt.Fprintf(&b, `"qty":%s`, []string{"1", "2.5", `"3"`, "4"}[rng.IntN(4)])
			}
		}
		v := []byte(b.String() + "}")
		var in, job process.Steps
		if rng.IntN(3) == 0 {
			in.Map = inMap
		}
		if rng.IntN(2) == 0 {
			job.Filter = filter
		}
		job.Map = maps[rng.IntN(len(maps))]
		e, ok := process.NewEarly(in, job)
		if !ok || e.Complete() {
			t.Fatalf("%s: not early with a template", job.Map.Name())
		}
		orig := record.Record{Topic: "orders", EventTime: int64(rng.IntN(400)), Value: v, ValueJSON: rng.IntN(2) == 0}
		orig.Timeless = rng.IntN(10) == 0
		want := orig
		k1, e1 := process.Chain(in, job)(&want)
		got := orig
		_, spans, scanned := jsonfield.ScanMembers(v, nil, nil)
		e.Prepare(&got, spans, scanned && rng.IntN(3) > 0)
		if !bytes.Equal(got.Value, v) {
			t.Fatalf("Prepare changed the value %s to %s", v, got.Value)
		}
		o.release(t, rng, e, &got, &want, k1, e1, fmt.Sprintf("%v then %v over %s at %d", in, job, v, orig.EventTime))
	}
	o.enough(t, 5000, 5000, 1000, 500)

	// a template another map made (an Early's Release given a record
	// another Early prepared): Release runs its own chain, never reads a
	// hole it does not have
	two, one := process.Steps{Map: maps[1]}, process.Steps{Map: maps[0]}
	e2, _ := process.NewEarly(two)
	e1, _ := process.NewEarly(one)
	v := []byte(`{"id":"o1","sku":"sku-1","n":42,"qty":2}`)
	got := record.Record{Topic: "orders", EventTime: 150, Value: v}
	e2.Prepare(&got, nil, false)
	want := got
	want.DecodedValue = nil
	k1, err1 := process.Chain(one)(&want)
	if k2, err2 := e1.Release(&got); k1 != k2 || fmt.Sprint(err1) != fmt.Sprint(err2) || !bytes.Equal(want.Value, got.Value) {
		t.Errorf("another map's template: %v %v %s, want the chain's %v %v %s", k2, err2, got.Value, k1, err1, want.Value)
	}
}

// outcomes counts what the chains of a test did to its records.
type outcomes struct{ prepared, kept, dropped, failed int }

// release runs Release on got, which Prepare prepared, after losing or
// copying what Prepare kept in it (as a store may), and fails t unless it
// gives what the chain gave want: k1, e1 and the record (what is left of
// a dropped one goes nowhere).
func (o *outcomes) release(t *testing.T, rng *rand.Rand, e process.Early, got, want *record.Record, k1 bool, e1 error, what string) {
	t.Helper()
	if got.DecodedValue != nil {
		o.prepared++
	}
	switch rng.IntN(4) {
	case 0:
		got.DecodedValue = nil // not kept by the store
	case 1:
		got.DecodedValue = bytes.Clone(got.DecodedValue) // copied by it
	}
	k2, e2 := e.Release(got)
	same := !k1 && e1 == nil ||
		bytes.Equal(want.Value, got.Value) && want.ValueJSON == got.ValueJSON && got.DecodedValue == nil
	if k1 != k2 || fmt.Sprint(e1) != fmt.Sprint(e2) || !same {
		t.Fatalf("%s: chain %v %v %s; early %v %v %s (decoded %q)", what, k1, e1, want.Value, k2, e2, got.Value, got.DecodedValue)
	}
	switch {
	case e1 != nil:
		o.failed++
	case k1:
		o.kept++
	default:
		o.dropped++
	}
}

// enough fails t when o counts fewer of each than given: the test would
// check too little.
func (o *outcomes) enough(t *testing.T, prepared, kept, dropped, failed int) {
	t.Helper()
	t.Logf("%d prepared, %d kept, %d dropped, %d failed", o.prepared, o.kept, o.dropped, o.failed)
	if o.prepared < prepared || o.kept < kept || o.dropped < dropped || o.failed < failed {
		t.Fatal("the test checks too little")
	}
}
