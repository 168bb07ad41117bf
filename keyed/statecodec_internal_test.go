package keyed

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestStateCodec: Decode(Append(s)) is s, for random states; a cut or
// extended encoding is an error, never a wrong state.
func TestStateCodec(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var c StateCodec
	for range 500 {
		s := make(State, rnd.IntN(4))
		for i := range s {
			w := &window{start: rnd.Int64() - rnd.Int64(), end: rnd.Int64N(1 << 40), slots: make([]slot, rnd.IntN(5))}
			for j := range w.slots {
				w.slots[j] = slot{n: rnd.Int64N(100), f: rnd.NormFloat64() * 1e9, t: -rnd.Int64N(1 << 50), seq: rnd.Int64N(1 << 30)}
				if rnd.IntN(2) == 0 {
					w.slots[j].raw = []byte(`{"a":1}`)[:1+rnd.IntN(7)]
				}
			}
			s[i] = w
		}
		b := c.Append(nil, s)
		got, err := c.Decode(b)
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Fatalf("%v: decoded %v, want %v", err, got, s)
		}
		if c.Size(s) <= 0 {
			t.Fatal("size")
		}
		if len(b) > 1 {
			if _, err := c.Decode(b[:rnd.IntN(len(b)-1)+1]); err == nil && len(s) > 0 {
				t.Fatalf("a cut encoding decoded")
			}
		}
		if _, err := c.Decode(append(b, 0)); err == nil {
			t.Fatalf("an extended encoding decoded")
		}
	}
}
