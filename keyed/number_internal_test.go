package keyed

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestParseNumberIsStrconv: parseNumber gives strconv.ParseFloat's result
// (sign of zero included) and error, for integers around its fast path's
// limits and for anything else.
func TestParseNumberIsStrconv(t *testing.T) {
	cases := []string{"0", "-0", "00", "7", "-7", "3", "007", "999999999999999", "-999999999999999",
		"1000000000000000", "9007199254740993", "12345678901234567890", "1.5", "-2.25", "1e3", "+1", ".5",
		"", "-", "--1", "1-", "0x10", "NaN", "Inf", "1_000", " 1", "1 ", "\"1\"", "null"}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 20_000 {
		n := rnd.Int64N(1 << 60)
		cases = append(cases, strconv.FormatInt(n>>rnd.IntN(60), 10), strconv.FormatInt(-(n>>rnd.IntN(60)), 10))
	}
	for _, c := range cases {
		got, gerr := parseNumber([]byte(c))
		want, werr := strconv.ParseFloat(c, 64)
		if (gerr == nil) != (werr == nil) || math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("%q: %v, %v; strconv %v, %v", c, got, gerr, want, werr)
		}
	}
}
