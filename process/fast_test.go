package process_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
)

// sameAsInterpreter fails t unless x gives over r exactly what cel-go's
// interpreter gives: the same bool or JSON bytes, the same error text. It
// reports whether the evaluation succeeded.
func sameAsInterpreter(t *testing.T, x *process.Expr, src string, r *record.Record) bool {
	t.Helper()
	if x.Kind() == process.Map {
		got, gerr := x.Apply(nil, r)
		want, werr := x.InterpretedApply(nil, r)
		if string(got) != string(want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%s over %q: fast path %s, %v; interpreter %s, %v", src, r.Value, got, gerr, want, werr)
		}
		return gerr == nil
	}
	got, gerr := x.Bool(r)
	want, werr := x.InterpretedBool(r)
	if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%s over %q: fast path %v, %v; interpreter %v, %v", src, r.Value, got, gerr, want, werr)
	}
	return gerr == nil
}

// TestFastPathIsTheInterpreter compiles the fast shapes (field paths,
// literals, comparisons, arithmetic, && || ! ?:, map literals) and checks
// each against cel-go's interpreter over random JSON values: every kind
// of field, missing fields, escapes, invalid UTF-8, numbers out of range,
// NaN and infinities from arithmetic, repeated keys, values that are not
// objects or not JSON.
func TestFastPathIsTheInterpreter(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	scalars := []string{`1`, `-0`, `0`, `2.5`, `1e308`, `-1e308`, `1e400`, `3`, `"x"`, `"test"`, `""`, `"é"`, `"a\"b"`, `"\u00e9"`,
		"\"\xff\"", `true`, `false`, `null`, `[1,2]`, `{"d":1,"d":"x"}`, `{"d":"test"}`, `{}`,
		`7.25`, `0.1`, `-12.5`, `123456789012345678`, `999999999999999`, `1e-7`, `0.000001`, `"\u0074est"`, `"sku-000042 and a longer text"`,
		`"3"`, `"\u2028"`, `{"d":{"d":[1,{"e":"x"}]}}`, `"a\\b"`, `"a\\\\b"`, `12345678901234567`, `-0012`, `007`, `100000000000000`}
	field := func(depth int) string {
		if depth > 0 && rng.IntN(4) == 0 {
			return `{"d":` + scalars[rng.IntN(len(scalars))] + `,"e":2}`
		}
		return scalars[rng.IntN(len(scalars))]
	}
	value := func() []byte {
		switch rng.IntN(12) {
		case 0:
			return nil
		case 1:
			return []byte(`[1]`)
		case 2:
			return []byte(`{"a":`) // not JSON
		case 3:
			return []byte(`"s"`)
		}
		var b strings.Builder
		b.WriteString(" {")
		keys := []string{`"a"`, `"b"`, `"c"`, `"a"`, `"s"`, `"\u0062"`, `"c\/"`, `"pad"`}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for _, k := range keys {
			if rng.IntN(5) == 0 {
				continue
			}
			if b.Len() > 2 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%s : %s", k, field(1))
		}
		b.WriteString("}\n")
		return []byte(b.String())
	}
	atoms := []string{"value.a", "value.b", "value.c", "value.c.d", "value.s", "value.a.d", "1", "2.5", "0.0", "-1", `"test"`, `"x"`,
		"true", "null", "topic", "partition", "offset", "key", "late", "9223372036854775807", "(0.0 / 0.0)", "(-1.0 / 0.0)",
		`"a\\\\b"`, `"é"`, "7.25", "-0.0"}
	ops := []string{"%s == %s", "%s != %s", "%s < %s", "%s <= %s", "%s > %s", "%s >= %s", "%s + %s", "%s - %s", "%s * %s",
		"%s / %s", "%s %% %s", "(%s && %s)", "(%s || %s)", "!(%s == %s)", "-(%s - %s)", "(%s == null ? %s : 1.0)"}
	var expr func(depth int) string
	expr = func(depth int) string {
		if depth == 0 || rng.IntN(3) == 0 {
			return atoms[rng.IntN(len(atoms))]
		}
		return fmt.Sprintf(ops[rng.IntN(len(ops))], expr(depth-1), expr(depth-1))
	}
	// every scalar against every literal, with the operators the fast
	// path specializes, in both orders
	literals := []string{`"test"`, `"x"`, `"a\\\\b"`, `"a\\b"`, `"é"`, `""`, "7.25", "3.0", "3", "-0.0", "null", "true", "(0.0 / 0.0)"}
	for _, lit := range literals {
		for _, op := range []string{"==", "!=", "<", ">=", "+", "*", "/"} {
			for _, src := range []string{"value.a " + op + " " + lit, lit + " " + op + " value.a"} {
				for _, k := range []process.Kind{process.Filter, process.Map} {
					x, err := process.Compile("e", src, k)
					if err != nil {
						continue
					}
					for _, sc := range scalars { // compiled once, evaluated on every scalar
						sameAsInterpreter(t, x, src, &record.Record{Value: []byte(`{"a":` + sc + `}`)})
					}
				}
			}
		}
	}
	var compiled, fast, succeeded int
	n := 3000
	if raceEnabled {
		n = 1000 // the race detector slows the interpreter tenfold; the literals above are exhaustive
	}
	for i := 0; i < n; i++ {
		src, k := expr(3), process.Filter
		if rng.IntN(2) == 0 {
			src, k = fmt.Sprintf(`{"z": %s, "a": %s, "m": {"n": %s}}`, expr(2), expr(2), expr(1)), process.Map
		}
		x, err := process.Compile("e", src, k)
		if err != nil {
			continue // a type error the checker catches
		}
		compiled++
		if x.Fast() {
			fast++
		}
		for j := 0; j < 20; j++ {
			r := &record.Record{Topic: "orders", Partition: int32(rng.IntN(3)), Offset: rng.Int64N(9), Key: []byte("k"),
				Late: rng.IntN(2) == 0, Value: value(), ValueJSON: rng.IntN(2) == 0}
			if rng.IntN(9) == 0 {
				r.Key = []byte{0xff}
			}
			if sameAsInterpreter(t, x, src, r) {
				succeeded++
			}
		}
	}
	if fast < n/10 || fast*10 < compiled*9 || succeeded < n/2 {
		t.Fatalf("%d fast expressions of %d, %d successful evaluations: the test checks too little", fast, compiled, succeeded)
	}
}

// TestIssueExpressionsAreFast: issue 36's filter and three-field map take
// the fast path, and allocate only the mapped value.
func TestIssueExpressionsAreFast(t *testing.T) {
	filter, err := process.Compile("process.filter", `value.status != "test"`, process.Filter)
	if err != nil {
		t.Fatal(err)
	}
	mapx, err := process.Compile("process.map", `{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`, process.Map)
	if err != nil {
		t.Fatal(err)
	}
	if !filter.Fast() || !mapx.Fast() {
		t.Fatalf("fast path: filter %v, map %v", filter.Fast(), mapx.Fast())
	}
	if raceEnabled {
		return
	}
	r := order()
	s := process.Steps{Filter: filter, Map: mapx}
	rr := new(record.Record)
	if n := testing.AllocsPerRun(100, func() {
		*rr = *r
		if ok, err := s.Run(rr); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}); n > 1 {
		t.Fatalf("%v allocations per record, want at most 1 (the mapped value)", n)
	}
}

// TestStepsAreTheInterpreter runs a filter and a map as Steps (one
// activation, one scan of the value for both) over random values, and
// compares the record they leave, their verdict and their error with the
// same Steps through cel-go's interpreter only.
func TestStepsAreTheInterpreter(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 2))
	filters := []string{`value.status != "test"`, `value.qty > 3.0`, `value.status == "ok" && value.price < 10.0`, `has(value.id) || value.sku == "x"`, `late || value.qty * value.price >= 20.0`}
	maps := []string{`{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`, `{"sku": value.sku, "q": value.qty, "m": value.meta}`,
		`{"id": value.id, "v": value.meta.v, "d": value.price / value.qty}`, `value.qty - value.price`}
	vals := map[string][]string{
		"id":     {`"o-000123"`, `"\u006f-1"`, `1`, `null`, `"é"`},
		"sku":    {`"sku-000042"`, `"x"`, `"a\"b"`, `["x"]`, "\"\xff\""},
		"qty":    {`3`, `0`, `-2`, `"3"`, `1e308`, `12345678901234567890`, `2.5`},
		"price":  {`7.25`, `0.1`, `10`, `"7.25"`, `null`, `1e-300`},
		"status": {`"ok"`, `"test"`, `"t\u0065st"`, `true`},
		"meta":   {`{"v":1}`, `{"v":"x","v":2}`, `{}`, `[1]`},
	}
	names := []string{"ts", "id", "sku", "qty", "price", "status", "meta", "site"}
	var fs, ms []*process.Expr
	for _, f := range filters {
		x, err := process.Compile("process.filter", f, process.Filter)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, x)
	}
	for _, m := range maps {
		x, err := process.Compile("process.map", m, process.Map)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, x)
	}
	var kept int
	for range 20000 {
		var b strings.Builder
		b.WriteString("{")
		for _, n := range rng.Perm(len(names)) {
			name := names[n]
			if rng.IntN(8) == 0 {
				continue
			}
			v := `1700000000123`
			if vs, ok := vals[name]; ok {
				v = vs[rng.IntN(len(vs))]
			} else if name == "site" {
				v = `"oslo"`
			}
			if b.Len() > 1 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q:%s", name, v)
		}
		b.WriteString("}")
		s := process.Steps{Filter: fs[rng.IntN(len(fs))], Map: ms[rng.IntN(len(ms))]}
		if rng.IntN(5) == 0 {
			s.Filter = nil
		}
		r := &record.Record{Topic: "orders", Value: []byte(b.String()), ValueJSON: rng.IntN(2) == 0, Late: rng.IntN(2) == 0}
		r1, r2 := *r, *r
		k1, e1 := s.Run(&r1)
		k2, e2 := s.Interpreted().Run(&r2)
		if k1 != k2 || fmt.Sprint(e1) != fmt.Sprint(e2) || string(r1.Value) != string(r2.Value) || r1.ValueJSON != r2.ValueJSON {
			t.Fatalf("%s over %s: fast path %v %v %s; interpreter %v %v %s", s, r.Value, k1, e1, r1.Value, k2, e2, r2.Value)
		}
		if k1 {
			kept++
		}
	}
	if kept < 2000 {
		t.Fatalf("%d records kept: the test checks too little", kept)
	}
}
