package value_test

import (
	"bytes"
	"encoding/json"
	"math"
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
