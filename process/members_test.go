package process

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/signalbox/signalbox/internal/jsonfield"
)

// sameAsGet fails t unless every read of one memberScan over doc, in the
// order of keys (repeats included), is exactly jsonfield.Get(doc,
// Path{key}): the same kind, the same bytes at the same address, the same
// error.
func sameAsGet(t *testing.T, doc []byte, keys []string) {
	t.Helper()
	var s memberScan
	s.reset(doc)
	for _, k := range keys {
		got, gerr := s.find(k)
		want, werr := jsonfield.Get(doc, jsonfield.Path{[]byte(k)})
		if gerr != werr || got.Kind != want.Kind || string(got.Raw) != string(want.Raw) ||
			len(got.Raw) > 0 && unsafe.SliceData(got.Raw) != unsafe.SliceData(want.Raw) {
			t.Fatalf("%q, key %q (reads %q): scan %v %q %v; Get %v %q %v", doc, k, keys, got.Kind, got.Raw, gerr, want.Kind, want.Raw, werr)
		}
	}
}

// TestMemberScanIsGet reads random documents, valid and not (cut short,
// a byte changed), with the reads in random orders: the scan that stops at
// the last member read so far reads what Get reads, errors included.
func TestMemberScanIsGet(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 6))
	keys := []string{"a", "b", "é", "c", "", "a\"b", "long key with spaces"}
	quoted := []string{`"a"`, `"b"`, `"\u00e9"`, `"é"`, `"c"`, `""`, `"a\"b"`, `"\u0061"`, `"long key with spaces"`, `"a\/"`}
	var value func(depth int) string
	value = func(depth int) string {
		switch n := rng.IntN(14); {
		case n == 0 && depth < 3:
			var b strings.Builder
			b.WriteString("{")
			for i := range rng.IntN(4) {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%s:%s", quoted[rng.IntN(len(quoted))], value(depth+1))
			}
			return b.String() + "}"
		case n == 1 && depth < 3:
			return "[" + value(depth+1) + " , " + value(depth+1) + "]"
		case n == 2:
			return `"a long string, longer than eight bytes, \"quoted\" \\ é \u00e9 and more"`
		case n == 3:
			return strings.Repeat("[", 600) + strings.Repeat("]", 600) // deeper than Get reads
		default:
			return []string{`1`, `-0.5e3`, `"x"`, `true`, `false`, `null`, `""`, `"\\"`, `12345678901234567890`, `"é"`, "\"tab\there\"", `[]`, `{}`}[rng.IntN(13)]
		}
	}
	for range 20000 {
		var b strings.Builder
		b.WriteString([]string{"", " ", "\n\t"}[rng.IntN(3)] + "{")
		for i := range rng.IntN(7) {
			if i > 0 {
				b.WriteString([]string{",", " , ", ",\n"}[rng.IntN(3)])
			}
			fmt.Fprintf(&b, "%s%s:%s%s", quoted[rng.IntN(len(quoted))], []string{"", " "}[rng.IntN(2)], []string{"", " "}[rng.IntN(2)], value(0))
		}
		b.WriteString("}")
		doc := []byte(b.String())
		switch rng.IntN(4) {
		case 0:
			doc = doc[:rng.IntN(len(doc)+1)]
		case 1:
			bad := "{}[]\",:\\ x\x01"
			doc[rng.IntN(len(doc))] = bad[rng.IntN(len(bad))]
		}
		reads := make([]string, 1+rng.IntN(5))
		for i := range reads {
			reads[i] = keys[rng.IntN(len(keys))]
		}
		sameAsGet(t, doc, reads)
	}
}

// FuzzMemberScan: any bytes, any keys read in any order.
func FuzzMemberScan(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":[1,"x"]},"a":2}`), "b,a,c")
	f.Add([]byte(`{"\u0061":"\"x\"" ,"b":tru}`), "a,b")
	f.Add([]byte(` {"a":1 "b":2}`), "b,a")
	f.Fuzz(func(t *testing.T, doc []byte, keys string) {
		sameAsGet(t, doc, strings.Split(keys, ","))
	})
}

// TestNumbersAreStrconv: the fast number reading and writing give exactly
// strconv's results, over decimals of up to 17 digits, products of two
// such numbers (issue 36's qty * price), and random bits.
func TestNumbersAreStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 7))
	decimal := func() string {
		digits := 1 + rng.IntN(17)
		s := strconv.FormatUint(rng.Uint64N(uint64(math.Pow10(min(digits, 19)))), 10)
		if k := rng.IntN(len(s) + 1); k < len(s) && rng.IntN(3) > 0 {
			s = s[:len(s)-k] + "." + s[len(s)-k:]
			if s[0] == '.' {
				s = "0" + s
			}
		}
		if rng.IntN(4) == 0 {
			s = "-" + s
		}
		return s
	}
	format := func(f float64) {
		t.Helper()
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 || math.Abs(f) < 1e-6 || math.Abs(f) >= 1e21 {
			return
		}
		got, ok := appendShortFloat([]byte("x"), f)
		want := strconv.AppendFloat([]byte("x"), f, 'f', -1, 64)
		if ok && string(got) != string(want) || !ok && string(got) != "x" {
			t.Fatalf("%v (%b): %q, want %q", f, math.Float64bits(f), got, want)
		}
	}
	for _, s := range []string{"0", "-0", "7.25", "3", "0.1", "1.", ".5", "01", "1e3", "1E-2", "999999999999999", "9999999999999999",
		"123456789012345.6", "0.000001", "-", "1-2", "1.2.3", "--1", "+1", "1e400"} {
		got, gok := parseNumber([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if gok != (err == nil) || gok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseNumber(%q) = %v %v, want %v %v", s, got, gok, want, err)
		}
	}
	for range 200000 {
		s := decimal()
		got, gok := parseNumber([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if gok != (err == nil) || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseNumber(%q) = %v %v, want %v %v", s, got, gok, want, err)
		}
		format(want)
		y, _ := strconv.ParseFloat(decimal(), 64)
		format(want * y)
		format(math.Float64frombits(rng.Uint64()))
	}
}
