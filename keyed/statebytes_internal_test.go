package keyed

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"
)

// TestStateBytesIsTheState: after every Add and Advance, StateBytes equals
// the size of what the MemStore holds, counted from scratch: each open
// window's fixed size, each key's bytes and keyOverhead, the First and
// Last values' capacity; sessions merge, windows are emitted.
func TestStateBytesIsTheState(t *testing.T) {
	aggs := []Aggregate{{Name: "n", Op: Count}, {Name: "f", Op: First}, {Name: "l", Op: Last}, {Name: "s", Op: Sum}}
	for _, spec := range []Spec{
		{Name: "t", Kind: Tumbling, Size: 1000, Aggregates: aggs},
		{Name: "h", Kind: Hopping, Size: 1000, Every: 250, Aggregates: aggs},
		{Name: "s", Kind: Session, Gap: 300, Lateness: 500, Aggregates: aggs},
	} {
		t.Run(spec.Name, func(t *testing.T) {
			w, err := New(spec, func(*Result) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			m := w.p.store.(*MemStore[State])
			if w.StateBytes() != 0 {
				t.Fatalf("empty: %d", w.StateBytes())
			}
			perWindow := int64(unsafe.Sizeof(&window{})+unsafe.Sizeof(window{})) + int64(len(aggs))*int64(unsafe.Sizeof(slot{}))
			counted := func() int64 {
				var n int64
				for k, st := range m.m {
					n += int64(len(k)) + keyOverhead
					for _, x := range st {
						n += rawCap(x)
					}
				}
				return n
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			at := int64(0)
			for i := range 3000 {
				at += rnd.Int64N(40)
				key := []byte(`"k` + strconv.Itoa(rnd.IntN(30)) + `"`)
				v := []byte(`{"v":"` + string(make([]byte, rnd.IntN(40))) + `"}`)
				it, err := spec.Item(key, at-rnd.Int64N(200), [][]byte{nil, v, v, []byte("1")})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Add(it, at); err != nil {
					t.Fatal(err)
				}
				if i%7 == 0 {
					if err := w.Advance(at); err != nil {
						t.Fatal(err)
					}
				}
				if want := w.Open*perWindow + counted(); w.StateBytes() != want {
					t.Fatalf("record %d: StateBytes %d, the store holds %d (%d open windows)", i, w.StateBytes(), want, w.Open)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if w.StateBytes() != 0 {
				t.Fatalf("after Close: %d", w.StateBytes())
			}
		})
	}
}
