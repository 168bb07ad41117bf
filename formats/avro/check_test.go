package avro_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/formats/avro"
)

// recursiveSchema wraps a random type in a record that refers to itself
// through a union, an array and a map, so that the program's calls into a
// record it is already in are exercised too.
const recursiveSchema = `{"type":"record","name":"Rec","fields":[
	{"name":"v","type":%s},
	{"name":"next","type":["null","Rec"]},
	{"name":"kids","type":{"type":"array","items":"Rec"}},
	{"name":"byName","type":{"type":"map","values":"Rec"}}]}`

// recursive is a random schema of recursiveSchema's shape and an encoder
// of random values of it, at most depth levels deep.
func (g *gen) recursive() (string, encoder) {
	vt, ve := g.typ(1)
	var rec func(b []byte, depth int) []byte
	rec = func(b []byte, depth int) []byte {
		b = ve(b)
		if depth > 0 && g.r.IntN(2) == 0 {
			b = rec(append(b, 2), depth-1) // branch 1: Rec
		} else {
			b = append(b, 0)
		}
		if depth > 0 && g.r.IntN(3) == 0 {
			b = zigzag(b, 1)
			b = rec(b, depth-1)
		}
		b = append(b, 0) // the array ends
		if depth > 0 && g.r.IntN(3) == 0 {
			b = zigzag(b, 1)
			b = lenPrefixed(b, []byte{byte('a' + g.r.IntN(2))})
			b = rec(b, depth-1)
		}
		return append(b, 0) // the map ends
	}
	g.fields = []string{"v", "next", "kids", "byName"}
	return fmt.Sprintf(recursiveSchema, vt), func(b []byte) []byte { return rec(b, 4) }
}

// mutate applies edits to body, three bytes an edit (what, where, byte):
// set, insert or delete a byte, or cut the body there.
func mutate(body, edits []byte) []byte {
	body = bytes.Clone(body)
	for ; len(edits) >= 3; edits = edits[3:] {
		what, val := edits[0]%4, edits[2]
		where := 0
		if len(body) > 0 {
			where = int(edits[1]) % len(body)
		}
		switch {
		case what == 1:
			body = append(body[:where], append([]byte{val}, body[where:]...)...)
		case len(body) == 0:
		case what == 0:
			body[where] = val
		case what == 2:
			body = append(body[:where], body[where+1:]...)
		default:
			body = body[:where]
		}
	}
	return body
}

// FuzzCheck is the program's check walk against its render walk: for a random
// schema (every type and logical type, nested and recursive records,
// arrays, maps, unions; chosen by seed) and a body written with it, then
// mutated by edits, Check refuses exactly the bodies Decode refuses, with
// the same error; a checked
// value renders as the decoded one and looks up every top-level field, and
// one level below, as the decoded one does.
func FuzzCheck(f *testing.F) {
	for seed := range uint64(16) {
		f.Add(seed, []byte{})
		f.Add(seed, []byte{0, 3, 0xff})
		f.Add(seed, []byte{1, 0, 0x80, 3, 9, 0})
		f.Add(seed, []byte{2, 5, 0, 0, 1, 0x7f})
	}
	f.Fuzz(func(t *testing.T, seed uint64, edits []byte) { checkAgainstDecode(t, seed, edits) })
}

// TestCheckRandomSchemas runs FuzzCheck's property on a fixed range of
// seeds, each with a few random mutations.
func TestCheckRandomSchemas(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	r := rand.New(rand.NewPCG(23, 23))
	decoded, mutatedDecoded := 0, 0
	for seed := range uint64(n) {
		if checkAgainstDecode(t, seed, nil) {
			decoded++
		}
		edits := make([]byte, 3*(1+r.IntN(3)))
		for i := range edits {
			edits[i] = byte(r.Uint32())
		}
		if checkAgainstDecode(t, seed, edits) {
			mutatedDecoded++
		}
	}
	if decoded < n/2 || mutatedDecoded == 0 || mutatedDecoded == n {
		t.Errorf("%d of %d bodies and %d mutated ones decoded: the generator tests too few of one verdict", decoded, n, mutatedDecoded)
	}
}

// checkAgainstDecode checks FuzzCheck's property for one schema and body,
// and reports whether the body decoded.
func checkAgainstDecode(t *testing.T, seed uint64, edits []byte) bool {
	t.Helper()
	g := &gen{r: rand.New(rand.NewPCG(seed, 23))}
	var typ string
	var enc encoder
	if seed%4 == 3 {
		typ, enc = g.recursive()
	} else {
		typ, enc = g.record(0)
	}
	c, err := avro.Compile(typ, nil)
	if err != nil {
		t.Fatalf("seed %d: schema %s: %v", seed, typ, err)
	}
	body := mutate(enc(nil), edits)
	v, err := c.Decode(body)
	cv, cerr := c.Check(body)
	if fmt.Sprint(cerr) != fmt.Sprint(err) {
		t.Fatalf("seed %d: schema %s\nbody %x: Check err %v, Decode err %v", seed, typ, body, cerr, err)
	}
	if err != nil {
		return false
	}
	var paths [][]string
	for _, name := range g.fields {
		paths = append(paths, []string{name})
		for _, below := range []string{"f0", "f1", "a", "b", "v", "next"} {
			paths = append(paths, []string{name, below})
		}
	}
	for _, p := range paths {
		got, ok := cv.Lookup(p)
		want, wok := v.Lookup(p)
		if ok != wok || got != want {
			t.Fatalf("seed %d: schema %s\nbody %x: Lookup(%s): checked %+v %v, decoded %+v %v", seed, typ, body, strings.Join(p, "."), got, ok, want, wok)
		}
	}
	if !bytes.Equal(cv.JSON(), v.JSON()) {
		t.Fatalf("seed %d: schema %s\nbody %x: checked renders %s, decoded %s", seed, typ, body, cv.JSON(), v.JSON())
	}
	return true
}

// TestCheckDepthLimit: a record nested through its own union as deep as
// the limit allows checks, one level more is refused, by Check as by
// Decode.
func TestCheckDepthLimit(t *testing.T) {
	for _, tc := range []struct {
		schema string
		body   func(k int) []byte // k levels deep
		limit  int                // the first k refused
	}{
		// The record at level k is at depth 2k (each union adds one):
		// level 500 is at depth 1000, past the limit.
		{`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`,
			func(k int) []byte { return append(bytes.Repeat([]byte{2}, k), 0) }, 500},
		// Here the record at level k is at depth 3k and its nullable field
		// one deeper: at level 333 the field, not a record, is past it.
		{`{"type":"record","name":"M","fields":[{"name":"s","type":["null","string"]},
			{"name":"next","type":["null",{"type":"array","items":"M"}]}]}`,
			func(k int) []byte {
				return append(append(bytes.Repeat([]byte{0, 2, 2}, k), 0, 0), bytes.Repeat([]byte{0}, k)...)
			}, 333},
	} {
		c, err := avro.Compile(tc.schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{1, tc.limit - 2, tc.limit - 1, tc.limit, tc.limit + 1, tc.limit + 100} {
			body := tc.body(k)
			_, err := c.Decode(body)
			_, cerr := c.Check(body)
			if fmt.Sprint(cerr) != fmt.Sprint(err) {
				t.Fatalf("%s, %d levels: Check err %v, Decode err %v", tc.schema, k, cerr, err)
			}
			if deep := err != nil && strings.Contains(err.Error(), "nesting deeper than 1000"); deep != (k >= tc.limit) {
				t.Fatalf("%s, %d levels: err %v", tc.schema, k, err)
			}
		}
	}
}

// TestCheckLimits: at the decimal limits (32 KiB of unscaled bytes, a
// big-decimal's scale) Check refuses what Decode refuses, with its error.
func TestCheckLimits(t *testing.T) {
	big := make([]byte, 32<<10+1)
	for _, tc := range []struct {
		schema string
		bodies [][]byte
	}{
		{`{"type":"fixed","name":"D","size":32769,"logicalType":"decimal","precision":9,"scale":2}`, [][]byte{big, big[:100]}},
		{`{"type":"fixed","name":"D","size":32768,"logicalType":"decimal","precision":9,"scale":2}`, [][]byte{big[:32<<10]}},
		{`{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}`, [][]byte{lenPrefixed(nil, big), lenPrefixed(nil, big[:32<<10])}},
		{`{"type":"bytes","logicalType":"big-decimal"}`, [][]byte{
			lenPrefixed(nil, zigzag(lenPrefixed(nil, []byte{1}), 1<<16)),
			lenPrefixed(nil, zigzag(lenPrefixed(nil, []byte{1}), 1<<16+1)),
			lenPrefixed(nil, append(zigzag(lenPrefixed(nil, []byte{1}), 2), 0)),
			lenPrefixed(nil, zigzag(lenPrefixed(nil, big), 2)),
			lenPrefixed(nil, lenPrefixed(nil, []byte{1})),
		}},
	} {
		c, err := avro.Compile(tc.schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		refused := 0
		for i, body := range tc.bodies {
			_, err := c.Decode(body)
			_, cerr := c.Check(body)
			if fmt.Sprint(cerr) != fmt.Sprint(err) {
				t.Fatalf("%s, body %d: Check err %v, Decode err %v", tc.schema, i, cerr, err)
			}
			if err != nil {
				refused++
			}
		}
		if refused == 0 && len(tc.bodies) > 1 {
			t.Errorf("%s: every body decoded: the limits are not reached", tc.schema)
		}
	}
}
