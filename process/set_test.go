package process_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
)

// randomValue is a record's value: mostly an object with some of a, b, s,
// n and l (numbers, strings with escapes, null, nested objects, arrays, a
// number too large for a double, a repeated member), else another JSON
// value, bytes that are no JSON, or none.
func randomValue(rng *rand.Rand) []byte {
	field := func() string {
		return []string{`1`, `2.5`, `-0`, `7`, `"x"`, `"test"`, `"é\u00e9\"q"`, `null`, `true`, `{"x":3,"y":"z"}`, `{"x":"s"}`,
			`[1,2]`, `1e400`, `12345678901234567890`, `"sku-000042"`, `{}`}[rng.IntN(16)]
	}
	switch rng.IntN(12) {
	case 0:
		return nil
	case 1:
		return []byte([]string{`[1,{"a":2}]`, `"s"`, `3`, `null`, `{"a":1,`, `not json`, `{"a":1}}`, ``}[rng.IntN(8)])
	}
	var b strings.Builder
	b.WriteString("{")
	n := 0
	for _, k := range []string{"a", "b", "s", "n", "l", "a"} {
		if rng.IntN(3) == 0 {
			continue
		}
		if n > 0 {
			b.WriteString([]string{",", " , "}[rng.IntN(2)])
		}
		fmt.Fprintf(&b, "%q:%s", k, field())
		n++
	}
	b.WriteString("}")
	return []byte(b.String())
}

// setExprs are expressions a window's where, key and arguments might be,
// every one made to fail on some values (a missing member, a type
// mismatch, a value that is no JSON, a result that is no JSON).
var (
	setWheres = []string{`value.a > 1.0`, `has(value.b)`, `value.s == "test"`, `value.s != "test"`, `size(value) > 2`, `value.a`,
		`key == "k"`, `late || value.n.x > 0.0`, `value.a + value.b > 2.0`, `value.l.exists(i, i > 1.0)`, `value.s.startsWith("sku")`}
	setMaps = []string{`value.s`, `value.a`, `value.b`, `{"a": value.a, "s": value.s}`, `string(value.a)`, `key`, `value`,
		`value.n`, `value.n.x`, `value.a * 2.0`, `int(value.a)`, `1.0 / value.a`, `value.l`, `value.a == value.b`,
		`has(value.b) ? value.b : null`, `size(value)`, `value.missing`, `[value.a, value.s]`, `topic + ":" + value.s`}
)

// TestSetIsSeparate: a Set's functions, called in the engine's order (a
// where, then the key, then the arguments, one repeated) and then again
// in a random order, over records that come in a row (some of them one
// record whose place and value change in place), give exactly what each
// expression's own Bool and Apply give: the same results, the same errors
// (type and text), and so the same dead-letter reasons.
func TestSetIsSeparate(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 8))
	compile := func(name, src string, k process.Kind) *process.Expr {
		x, err := process.Compile(name, src, k)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		return x
	}
	fuzzy := 0
	for trial := range 300 {
		var set process.Set
		type fn struct {
			x     *process.Expr
			where func(*record.Record) (bool, error)
			apply func(*record.Record) ([]byte, error)
		}
		var fns []fn
		if rng.IntN(2) == 0 {
			x := compile("w.where", setWheres[rng.IntN(len(setWheres))], process.Where)
			fns = append(fns, fn{x: x, where: set.Bool(x)})
		}
		for i := range 1 + rng.IntN(4) {
			src := setMaps[rng.IntN(len(setMaps))]
			if rng.IntN(4) == 0 { // a random expression of the fuzzer's
				prog := make([]byte, 1+rng.IntN(8))
				for j := range prog {
					prog[j] = byte(rng.IntN(256))
				}
				if x, err := process.Compile("w.arg", build(prog), process.Map); err == nil {
					fuzzy++
					fns = append(fns, fn{x: x, apply: set.Apply(x)})
					continue
				}
			}
			x := compile(fmt.Sprintf("w.arg%d", i), src, process.Map)
			fns = append(fns, fn{x: x, apply: set.Apply(x)})
		}
		if len(fns) > 1 { // an argument asked for twice, as sum(value.qty) and max(value.qty)
			fns = append(fns, fns[len(fns)-1])
		}
		reused := &record.Record{}
		for n := range 20 {
			r := &record.Record{}
			if rng.IntN(3) == 0 {
				r = reused // the same record, its place and value changed in place
			}
			*r = record.Record{Topic: "t", Partition: int32(rng.IntN(2)), Offset: int64(n), Key: []byte([]string{"k", "j", "\xff"}[rng.IntN(3)]),
				EventTime: int64(rng.IntN(5)), Late: rng.IntN(4) == 0, Value: randomValue(rng), ValueJSON: rng.IntN(2) == 0}
			if r.ValueJSON && !jsonValid(r.Value) {
				r.ValueJSON = false // the flag says the bytes are JSON
			}
			check := func(f fn, order string) {
				t.Helper()
				if f.where != nil {
					got, gerr := f.where(r)
					want, werr := f.x.Bool(r)
					if got != want || !sameErr(gerr, werr) {
						t.Fatalf("trial %d %s, %s over %q: set %v %v, alone %v %v", trial, order, f.x.Name(), r.Value, got, gerr, want, werr)
					}
					return
				}
				got, gerr := f.apply(r)
				want, werr := f.x.Apply(nil, r)
				if string(got) != string(want) || (got == nil) != (want == nil) && gerr == nil || !sameErr(gerr, werr) {
					t.Fatalf("trial %d %s, %s over %q: set %q %v, alone %q %v", trial, order, f.x.Name(), r.Value, got, gerr, want, werr)
				}
			}
			// the engine's order: stop at the first error or a false where
		engine:
			for _, f := range fns {
				check(f, "engine order")
				if f.where != nil {
					if ok, err := f.where(r); !ok || err != nil {
						break engine
					}
				} else if _, err := f.apply(r); err != nil {
					break engine
				}
			}
			for _, i := range rng.Perm(len(fns)) {
				check(fns[i], "random order")
			}
		}
	}
	if fuzzy < 50 {
		t.Fatalf("%d random expressions compiled, want at least 50", fuzzy)
	}
}

func jsonValid(b []byte) bool {
	var v any
	return json.Unmarshal(b, &v) == nil
}

// sameErr reports whether a and b are both nil, or the same type and text.
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *process.Error
	return errors.As(a, &ea) == errors.As(b, &eb) && fmt.Sprintf("%T %v", a, a) == fmt.Sprintf("%T %v", b, b)
}
