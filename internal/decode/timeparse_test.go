package decode

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestParseIntWords: numbers of every length the word-at-a-time path reads
// (8 to 18 digits), signed or not, and each with one byte changed to any
// value at any place, agree with strconv.ParseInt.
func TestParseIntWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(b []byte) {
		n, ok := parseInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		if ok != (err == nil) || ok && n != want {
			t.Fatalf("parseInt(%q) = %d, %v; strconv: %d, %v", b, n, ok, want, err)
		}
	}
	for digits := 8; digits <= 18; digits++ {
		for range 2000 {
			b := []byte([]string{"", "-", "+"}[rng.IntN(3)])
			for range digits {
				b = append(b, byte('0'+rng.IntN(10)))
			}
			check(b)
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
			check(b)
		}
	}
}

// FuzzParseInt: the fast path agrees with strconv.ParseInt on every input.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "+7", "1700000000123", "-", "+", "", "999999999999999999", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1_000", "12a", " 1", "0x10", "٣",
		"12345678", "-123456789", "1700000000:23", "17000000/0123", "170000000012345678", "1234567890123456789", "12345678 ", "@2345678", "+00000000000000001"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := parseInt(b)
		want, err := strconv.ParseInt(string(b), 10, 64)
		if ok != (err == nil) || ok && n != want {
			t.Fatalf("parseInt(%q) = %d, %v; strconv: %d, %v", b, n, ok, want, err)
		}
	})
}

// BenchmarkParseInt is an event time in epoch milliseconds, as a JSON field
// holds it:
//
//	go test -run '^$' -bench ParseInt .
func BenchmarkParseInt(b *testing.B) {
	ts := []byte("1764479604123")
	for b.Loop() {
		if n, ok := parseInt(ts); !ok || n != 1764479604123 {
			b.Fatal(n, ok)
		}
	}
}
