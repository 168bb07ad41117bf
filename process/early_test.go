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
	var early, kept, dropped, failed int
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
		switch rng.IntN(4) {
		case 0:
			got.DecodedValue = nil // not kept by the store
		case 1:
			got.DecodedValue = bytes.Clone(got.DecodedValue) // copied by it
		}
		if got.DecodedValue != nil {
			early++
		}
		k2, e2 := e.Release(&got)
		same := !k1 && e1 == nil || // dropped: what is left of it goes nowhere
			bytes.Equal(want.Value, got.Value) && want.ValueJSON == got.ValueJSON && got.DecodedValue == nil
		if k1 != k2 || fmt.Sprint(e1) != fmt.Sprint(e2) || !same {
			t.Fatalf("%v then %v over %s: chain %v %v %s; early %v %v %s (decoded %q)", in, job, v, k1, e1, want.Value, k2, e2, got.Value, got.DecodedValue)
		}
		switch {
		case e1 != nil:
			failed++
		case k1:
			kept++
		default:
			dropped++
		}
	}
	t.Logf("%d prepared, %d kept, %d dropped, %d failed", early, kept, dropped, failed)
	if early < 5000 || kept < 2000 || dropped < 1000 || failed < 1000 {
		t.Fatalf("%d prepared, %d kept, %d dropped, %d failed: the test checks too little", early, kept, dropped, failed)
	}
	if _, ok := process.NewEarly(process.Steps{Filter: compile(process.Filter, `!late`)[0]}); ok {
		t.Fatal("a filter that reads late runs early")
	}
}

// FuzzEarly: any value, as the run gives it to Prepare (with the members
// of a decoder's scan, or without), and any chain of the filter
// and map with an input map before them: Release gives the chain's result.
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
	f.Fuzz(func(t *testing.T, v []byte, members bool, shape uint8) {
		var in, job process.Steps
		if shape&1 != 0 {
			job.Filter = filter
		}
		if shape&2 != 0 {
			job.Map = mapx
		}
		if shape&4 != 0 {
			in.Map = inMap
		}
		e, ok := process.NewEarly(in, job)
		if !ok {
			t.Fatal("not early")
		}
		orig := record.Record{Topic: "orders", Value: v}
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
