package value_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/sinks/envelope"
)

func TestAppend(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{string(value.AppendString(nil, "a\"b\\c\n\t\x00é<&")), `"a\"b\\c\n\t\u0000é<&"`},
		{string(value.AppendString(nil, "bad\xffbyte")), `"bad\ufffdbyte"`},
		{string(value.AppendString(nil, "\x1f\u2028x\u2029\ufffd\r")), `"\u001f\u2028x\u2029�\r"`},
		{string(value.AppendBytes(nil, []byte{0xfb, 0xff})), `"+/8="`},
		{string(value.AppendFloat(nil, math.NaN(), 64)), `"NaN"`},
		{string(value.AppendFloat(nil, math.Inf(1), 64)), `"Infinity"`},
		{string(value.AppendFloat(nil, 1e21, 64)), `1e+21`},
		{string(value.AppendFloat(nil, float64(float32(0.1)), 32)), `0.1`},
		{string(value.AppendFloat(nil, 123456789, 64)), `123456789`},
		{string(value.AppendFloat(nil, 1e-7, 64)), `1e-7`},
		{string(value.AppendFloat(nil, -2.5e-300, 64)), `-2.5e-300`},
		{string(value.AppendTime(nil, time.Date(2024, 1, 2, 3, 4, 5, 6000, time.FixedZone("X", 3600)), 6)), `"2024-01-02T02:04:05.000006Z"`},
		{string(value.AppendTime(nil, time.Unix(0, 0), 0)), `"1970-01-01T00:00:00Z"`},
		{string(value.AppendDate(nil, time.Date(2024, 2, 29, 23, 0, 0, 0, time.UTC))), `"2024-02-29"`},
		{string(value.AppendTimeOfDay(nil, time.Second+time.Millisecond, 3)), `"00:00:01.001"`},
		{string(value.AppendTimeOfDay(nil, 23*time.Hour+59*time.Minute+59*time.Second+999999*time.Microsecond, 6)), `"23:59:59.999999"`},
		{value.FormatUUID([]byte{0x89, 0x79, 0x17, 0x62, 0x23, 0x36, 0x41, 0x86, 0x96, 0x74, 0x29, 0x9b, 0x90, 0xa8, 0x02, 0xe2}), "89791762-2336-4186-9674-299b90a802e2"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	if p, ok := value.SplitPath("meta.ts"); !ok || strings.Join(p, "|") != "meta|ts" {
		t.Errorf("SplitPath = %v %v", p, ok)
	}
	for _, bad := range []string{"", ".", "a..b", "a."} {
		if _, ok := value.SplitPath(bad); ok {
			t.Errorf("SplitPath(%q) accepted", bad)
		}
	}
}

// FuzzAppendString: the output is always valid JSON, and reads back as the
// input when the input is valid UTF-8, byte for byte as the envelope
// writes it.
func FuzzAppendString(f *testing.F) {
	f.Add("plain")
	f.Add("\x00\xff\"\\\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		out := value.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q renders as invalid JSON %s: %v", s, out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q reads back as %q", s, back)
		}
		if env := envelope.AppendString(nil, s); !bytes.Equal(out, env) {
			t.Fatalf("%q: %s, the envelope writes %s", s, out, env)
		}
	})
}

// FuzzAppendFloat: a finite float64 renders as encoding/json renders it.
func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, 1, -1.5, 1e21, 1e-7, 123456789, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		if got := value.AppendFloat(nil, x, 64); !bytes.Equal(got, want) {
			t.Fatalf("%v: %s, encoding/json %s", x, got, want)
		}
	})
}

// FuzzAppendTime: AppendTime, AppendDate and AppendTimeOfDay write what
// time.Format writes, for every instant (the years outside 0-9999 too) and
// every fraction length.
func FuzzAppendTime(f *testing.F) {
	for _, s := range []int64{0, -1, 1_700_000_000, 253402300799, 253402300800, -62135596800, -62167219200, -62167219201, 951782400, math.MaxInt64 / 4, math.MinInt64 / 4} {
		f.Add(s, uint32(123456789), uint8(3))
	}
	f.Fuzz(func(t *testing.T, sec int64, ns uint32, digits uint8) {
		tm := time.Unix(sec, int64(ns%1_000_000_000)).In(time.FixedZone("x", 3600))
		checkTime(t, tm, int(digits%10))
	})
}

// TestAppendTimeProperty is FuzzAppendTime over random instants from year
// -300 to 10300, and at the day, month and leap-year edges.
func TestAppendTimeProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo, hi := time.Date(-300, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(10300, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for range 200_000 {
		s := lo + rng.Int64N(hi-lo)
		if rng.IntN(4) == 0 {
			s -= s%86400 + rng.Int64N(2) // midnight, or the second before it
		}
		checkTime(t, time.Unix(s, rng.Int64N(1_000_000_000)), []int{0, 3, 6, 9}[rng.IntN(4)])
	}
	for y := 1890; y <= 2110; y++ {
		for _, md := range [][2]int{{1, 1}, {2, 28}, {2, 29}, {3, 1}, {12, 31}} {
			checkTime(t, time.Date(y, time.Month(md[0]), md[1], 23, 59, 59, 999_999_999, time.UTC), 9)
		}
	}
}

func checkTime(t *testing.T, tm time.Time, digits int) {
	t.Helper()
	layout := map[int]string{3: "15:04:05.000", 6: "15:04:05.000000", 9: "15:04:05.000000000"}[digits]
	if layout == "" {
		layout = "15:04:05"
	}
	u := tm.UTC()
	if got, want := string(value.AppendTime(nil, tm, digits)), `"`+u.Format("2006-01-02T"+layout+"Z07:00")+`"`; got != want {
		t.Fatalf("AppendTime(%d s %d ns, %d): %s, time.Format %s", tm.Unix(), tm.Nanosecond(), digits, got, want)
	}
	if got, want := string(value.AppendDate(nil, tm)), `"`+u.Format("2006-01-02")+`"`; got != want {
		t.Fatalf("AppendDate(%d s): %s, time.Format %s", tm.Unix(), got, want)
	}
	if digits == 9 {
		return
	}
	d := time.Duration(u.Hour())*time.Hour + time.Duration(u.Minute())*time.Minute + time.Duration(u.Second())*time.Second + time.Duration(u.Nanosecond())
	if got, want := string(value.AppendTimeOfDay(nil, d, digits)), `"`+time.Unix(0, 0).UTC().Add(d).Format(layout)+`"`; got != want {
		t.Fatalf("AppendTimeOfDay(%v, %d): %s, time.Format %s", d, digits, got, want)
	}
}

// TestFieldString: a KindTime field without Text renders its RFC 3339 form
// (or its date) only when asked; any other field is its Text.
func TestFieldString(t *testing.T) {
	at := time.Date(2024, 1, 15, 10, 30, 0, 123456789, time.UTC)
	for _, c := range []struct {
		f    value.Field
		want string
	}{
		{value.Field{Kind: value.KindTime, Time: at, Digits: 3}, "2024-01-15T10:30:00.123Z"},
		{value.Field{Kind: value.KindTime, Time: at, Digits: 6}, "2024-01-15T10:30:00.123456Z"},
		{value.Field{Kind: value.KindTime, Time: at, Digits: 9}, "2024-01-15T10:30:00.123456789Z"},
		{value.Field{Kind: value.KindTime, Time: at, Digits: value.DigitsDate}, "2024-01-15"},
		{value.Field{Kind: value.KindTime, Time: time.Date(12000, 3, 1, 0, 0, 0, 0, time.UTC), Digits: value.DigitsDate}, "12000-03-01"},
		{value.Field{Kind: value.KindTime, Time: at, Text: "as given"}, "as given"},
		{value.Field{Kind: value.KindString, Text: "x"}, "x"},
		{value.Field{Kind: value.KindNumber}, ""},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("%+v: String %q, want %q", c.f, got, c.want)
		}
	}
}

// TestAppendStringPlainScan: the eight-bytes-at-a-time scan for strings
// that need no escaping misses no byte that does, at any position of a
// string of any length up to 24.
func TestAppendStringPlainScan(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for at := range n {
			for _, c := range []byte{0x00, 0x01, 0x1f, 0x20, '!', '"', '#', '[', '\\', ']', 0x7e, 0x7f, 0x80, 0xc3, 0xe2, 0xff} {
				s := []byte(strings.Repeat("a~ ", n)[:n])
				s[at] = c
				if got, want := value.AppendString(nil, string(s)), envelope.AppendString(nil, string(s)); !bytes.Equal(got, want) {
					t.Fatalf("%q: %s, the envelope writes %s", s, got, want)
				}
			}
		}
	}
}

// TestAppendTimeSameDay: instants that share their day (the cached date)
// and their neighbours across midnight render as time.Format writes them.
func TestAppendTimeSameDay(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20_000 {
		day := rng.Int64N(3_000_000) - 800_000 // years about -220 to 6200
		for _, s := range []int64{day*86400 + rng.Int64N(86400), day*86400 + rng.Int64N(86400), day*86400 - 1, (day+1)*86400 - 1, day * 86400} {
			checkTime(t, time.Unix(s, rng.Int64N(1_000_000_000)), 3)
		}
	}
}
