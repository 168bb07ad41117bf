package durable

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/signalbox/signalbox/timers"
)

// Strings chosen to exercise the escaping: NUL, the terminator byte, 0xFF,
// prefixes of each other.
var tricky = []string{"", "\x00", "\x00\x00", "\x00\x01", "\x00\xff", "\x01", "\xff", "a", "a\x00", "a\x00b", "a\x01", "ab", "b"}

func randomPos(rng *rand.Rand) timers.Pos {
	i64 := func() int64 {
		return []int64{math.MinInt64, -1, 0, 1, math.MaxInt64, rng.Int64N(4), rng.Int64() - math.MaxInt64/2}[rng.IntN(7)]
	}
	str := func() string {
		if rng.IntN(4) == 0 {
			b := make([]byte, rng.IntN(6))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			return string(b)
		}
		return tricky[rng.IntN(len(tricky))]
	}
	return timers.Pos{
		EventTime: i64(),
		Key:       str(),
		Input:     str(),
		Partition: []int32{math.MinInt32, -1, 0, 1, math.MaxInt32}[rng.IntN(5)],
		Offset:    i64(),
	}
}

func TestPosKeyOrderIsLess(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 200000 {
		a, b := randomPos(rng), randomPos(rng)
		ka, kb := appendPosKey(nil, a), appendPosKey(nil, b)
		want := 0
		if timers.Less(a, b) {
			want = -1
		} else if timers.Less(b, a) {
			want = 1
		}
		if got := bytes.Compare(ka, kb); got != want {
			t.Fatalf("#%d: Compare(enc(%+v), enc(%+v)) = %d, Less says %d\n%x\n%x", i, a, b, got, want, ka, kb)
		}
		got, err := decodePosKey(ka)
		if err != nil || got != a {
			t.Fatalf("#%d: decode(enc(%+v)) = %+v, %v", i, a, got, err)
		}
		// The time bound separates earlier event times from later ones.
		tb := appendTimeBound(nil, a.EventTime)
		if c := bytes.Compare(tb, kb); (c <= 0) != (b.EventTime >= a.EventTime) {
			t.Fatalf("#%d: time bound %d vs %+v: compare %d", i, a.EventTime, b, c)
		}
		if s := keySuccessor(ka); bytes.Compare(s, ka) <= 0 || (bytes.Compare(ka, kb) < 0 && bytes.Compare(s, kb) > 0) {
			t.Fatalf("#%d: successor of %x is not the next key", i, ka)
		}
	}
}

func TestDecodePosKeyRejects(t *testing.T) {
	good := appendPosKey(nil, timers.Pos{EventTime: 5, Key: "k\x00", Input: "in", Partition: 3, Offset: 9})
	for n := range len(good) {
		if _, err := decodePosKey(good[:n]); err == nil {
			t.Errorf("prefix of %d bytes decoded", n)
		}
	}
	bad := bytes.Clone(good)
	bad[0] = prefixMeta
	if _, err := decodePosKey(bad); err == nil {
		t.Error("wrong prefix decoded")
	}
	if _, err := decodePosKey(append(bytes.Clone(good), 7)); err == nil {
		t.Error("trailing byte decoded")
	}
}

// FuzzDecodePosKey: never panics, and whatever decodes re-encodes to the
// same bytes (the encoding is canonical).
//
//	go test -run=^$ -fuzz=FuzzDecodePosKey ./timers/
func FuzzDecodePosKey(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 16 {
		f.Add(appendPosKey(nil, randomPos(rng)))
	}
	f.Fuzz(func(t *testing.T, k []byte) {
		p, err := decodePosKey(k)
		if err != nil {
			return
		}
		if again := appendPosKey(nil, p); !bytes.Equal(again, k) {
			t.Fatalf("decode(%x) = %+v re-encodes to %x", k, p, again)
		}
	})
}
