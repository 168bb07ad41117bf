package avro_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/signalbox/signalbox/formats/avro"
	"github.com/signalbox/signalbox/formats/value"
)

// encode writes v with hamba/avro, a library independent of the decoder
// under test, in a one-field record of type typ.
func encode(t testing.TB, typ string, v any) []byte {
	t.Helper()
	s, err := hamba.Parse(`{"type":"record","name":"W","fields":[{"name":"f","type":` + typ + `}]}`)
	if err != nil {
		t.Fatalf("hamba parse %s: %v", typ, err)
	}
	b, err := hamba.Marshal(s, map[string]any{"f": v})
	if err != nil {
		t.Fatalf("hamba marshal %s %v: %v", typ, v, err)
	}
	return b
}

func compile(t testing.TB, typ string, refs ...string) *avro.Codec {
	t.Helper()
	c, err := avro.Compile(`{"type":"record","name":"W","fields":[{"name":"f","type":`+typ+`}]}`, refs)
	if err != nil {
		t.Fatalf("compile %s: %v", typ, err)
	}
	return c
}

var (
	ts      = time.Date(2024, 1, 15, 10, 30, 0, 123456789, time.UTC)
	twoRecs = `[{"type":"record","name":"A","fields":[{"name":"a","type":"int"}]},{"type":"record","name":"B","fields":[{"name":"b","type":"string"}]}]`
	list    = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`
)

// bigDecimal is a big-decimal payload: the unscaled bytes, then the scale.
func bigDecimal(unscaled []byte, scale int64) []byte {
	b := binary.AppendVarint(nil, int64(len(unscaled)))
	b = append(b, unscaled...)
	return binary.AppendVarint(b, scale)
}

// TestConversionTable is the table of docs/sinks.md, "Schema'd values":
// every Avro type, encoded by hamba/avro, renders to the documented JSON.
// A logical type hamba lacks is written through its underlying type (the
// binary encoding is the same) and read with the logical type.
func TestConversionTable(t *testing.T) {
	cases := []struct {
		name, typ string
		writer    string // writer type for hamba, when it differs from typ
		v         any
		want      string
	}{
		{"null", `"null"`, "", nil, `null`},
		{"boolean", `"boolean"`, "", true, `true`},
		{"int", `"int"`, "", int32(-5), `-5`},
		{"long", `"long"`, "", int64(1) << 53, `9007199254740992`},
		{"float", `"float"`, "", float32(1.5), `1.5`},
		{"double", `"double"`, "", 0.1, `0.1`},
		{"double NaN", `"double"`, "", math.NaN(), `"NaN"`},
		{"double -Inf", `"double"`, "", math.Inf(-1), `"-Infinity"`},
		{"string escaped", `"string"`, "", "h\u00e9\"q\"\n<\x01", `"h` + "\u00e9" + `\"q\"\n<\u0001"`},
		{"bytes base64", `"bytes"`, "", []byte{0, 1, 2, 255}, `"AAEC/w=="`},
		{"fixed base64", `{"type":"fixed","name":"F4","size":4}`, "", [4]byte{1, 2, 3, 4}, `"AQIDBA=="`},
		{"enum symbol", `{"type":"enum","name":"E","symbols":["A","B"]}`, "", "B", `"B"`},
		{"array", `{"type":"array","items":"int"}`, "", []any{int32(1), int32(2)}, `[1,2]`},
		{"map keys sorted", `{"type":"map","values":"int"}`, "", map[string]any{"b": int32(1), "a": int32(2)}, `{"a":2,"b":1}`},
		{"record fields in schema order", `{"type":"record","name":"R","fields":[{"name":"z","type":"int"},{"name":"a","type":{"type":"record","name":"In","fields":[{"name":"y","type":"string"}]}}]}`, "",
			map[string]any{"a": map[string]any{"y": "s"}, "z": int32(1)}, `{"z":1,"a":{"y":"s"}}`},
		{"union null", `["null","string"]`, "", nil, `null`},
		{"union string plain", `["null","string"]`, "", map[string]any{"string": "x"}, `"x"`},
		{"union long plain", `["null","string","long"]`, "", map[string]any{"long": int64(7)}, `7`},
		{"union second record plain", twoRecs, "", map[string]any{"B": map[string]any{"b": "hi"}}, `{"b":"hi"}`},
		{"union of logical timestamp", `["null",{"type":"long","logicalType":"timestamp-millis"}]`, "", map[string]any{"long.timestamp-millis": ts}, `"2024-01-15T10:30:00.123Z"`},
		{"recursive record", list, "", map[string]any{"v": int32(1), "next": map[string]any{"Node": map[string]any{"v": int32(2), "next": nil}}}, `{"v":1,"next":{"v":2,"next":null}}`},
		{"decimal bytes exact", `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, "", big.NewRat(12345, 100), `"123.45"`},
		{"decimal keeps scale", `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, "", big.NewRat(3, 2), `"1.50"`},
		{"decimal negative", `{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}`, "", big.NewRat(-1, 100), `"-0.01"`},
		{"decimal beyond float64", `{"type":"bytes","logicalType":"decimal","precision":30,"scale":4}`, "", new(big.Rat).SetFrac(mustInt("123456789012345678901234567891"), big.NewInt(10000)), `"12345678901234567890123456.7891"`},
		{"decimal fixed", `{"type":"fixed","name":"D8","size":8,"logicalType":"decimal","precision":12,"scale":3}`, "", big.NewRat(-2500, 1000), `"-2.500"`},
		{"big-decimal", `{"type":"bytes","logicalType":"big-decimal"}`, `"bytes"`, bigDecimal([]byte{0x30, 0x39}, 2), `"123.45"`},
		{"uuid string", `{"type":"string","logicalType":"uuid"}`, "", "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", `"f81d4fae-7dec-11d0-a765-00a0c91e6bf6"`},
		{"uuid fixed", `{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}`, `{"type":"fixed","name":"U","size":16}`,
			[16]byte{0xf8, 0x1d, 0x4f, 0xae, 0x7d, 0xec, 0x11, 0xd0, 0xa7, 0x65, 0, 0xa0, 0xc9, 0x1e, 0x6b, 0xf6}, `"f81d4fae-7dec-11d0-a765-00a0c91e6bf6"`},
		{"date", `{"type":"int","logicalType":"date"}`, "", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), `"2024-02-29"`},
		{"date before epoch", `{"type":"int","logicalType":"date"}`, "", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), `"1969-12-31"`},
		{"time-millis", `{"type":"int","logicalType":"time-millis"}`, "", 13*time.Hour + 45*time.Minute + 10123*time.Millisecond, `"13:45:10.123"`},
		{"time-micros", `{"type":"long","logicalType":"time-micros"}`, "", 13*time.Hour + 45*time.Minute + 10123456*time.Microsecond, `"13:45:10.123456"`},
		{"timestamp-millis", `{"type":"long","logicalType":"timestamp-millis"}`, "", ts, `"2024-01-15T10:30:00.123Z"`},
		{"timestamp-micros", `{"type":"long","logicalType":"timestamp-micros"}`, "", ts, `"2024-01-15T10:30:00.123456Z"`},
		{"timestamp-nanos", `{"type":"long","logicalType":"timestamp-nanos"}`, `"long"`, ts.UnixNano(), `"2024-01-15T10:30:00.123456789Z"`},
		{"timestamp before epoch", `{"type":"long","logicalType":"timestamp-millis"}`, `"long"`, int64(-1), `"1969-12-31T23:59:59.999Z"`},
		{"local-timestamp-millis as UTC", `{"type":"long","logicalType":"local-timestamp-millis"}`, "", ts, `"2024-01-15T10:30:00.123Z"`},
		{"local-timestamp-micros as UTC", `{"type":"long","logicalType":"local-timestamp-micros"}`, "", ts, `"2024-01-15T10:30:00.123456Z"`},
		{"local-timestamp-nanos as UTC", `{"type":"long","logicalType":"local-timestamp-nanos"}`, `"long"`, ts.UnixNano(), `"2024-01-15T10:30:00.123456789Z"`},
		{"duration", `{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}`, `{"type":"fixed","name":"Dur","size":12}`,
			[12]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}, `{"months":1,"days":2,"milliseconds":3}`},
		{"unknown logical type is its base type", `{"type":"long","logicalType":"x-custom"}`, "", int64(4), `4`},
		{"uuid on a fixed not of 16 is its base type", `{"type":"fixed","name":"U4","size":4,"logicalType":"uuid"}`, `{"type":"fixed","name":"U4","size":4}`, [4]byte{1, 2, 3, 4}, `"AQIDBA=="`},
		{"duration on a fixed not of 12 is its base type", `{"type":"fixed","name":"D4","size":4,"logicalType":"duration"}`, `{"type":"fixed","name":"D4","size":4}`, [4]byte{1, 2, 3, 4}, `"AQIDBA=="`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			writer := c.writer
			if writer == "" {
				writer = c.typ
			}
			codec, body := compile(t, c.typ), encode(t, writer, c.v)
			v, err := codec.Decode(body)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"f":` + c.want + `}`
			if got := string(v.JSON()); got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if ref, err := codec.DecodeReference(body); err != nil || string(ref) != want {
				t.Fatalf("library path: %s, %v", ref, err)
			}
			if !json.Valid(v.JSON()) {
				t.Fatalf("invalid JSON %s", v.JSON())
			}
		})
	}
}

func mustInt(s string) *big.Int {
	i, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return i
}

func TestReferencesAcrossSubjects(t *testing.T) {
	addr := `{"type":"record","name":"Address","namespace":"geo","fields":[{"name":"city","type":"string"}]}`
	c := compile(t, `{"type":"record","name":"User","fields":[{"name":"home","type":"geo.Address"},{"name":"work","type":["null","geo.Address"]}]}`, addr)
	// hamba writes with the referenced type inlined: the same binary.
	typ := `{"type":"record","name":"User","fields":[{"name":"home","type":` + addr + `},{"name":"work","type":["null","geo.Address"]}]}`
	body := encode(t, typ, map[string]any{"home": map[string]any{"city": "Oslo"}, "work": map[string]any{"geo.Address": map[string]any{"city": "Bergen"}}})
	v, err := c.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"f":{"home":{"city":"Oslo"},"work":{"city":"Bergen"}}}`; string(v.JSON()) != want {
		t.Fatalf("got %s, want %s", v.JSON(), want)
	}
	if _, err := avro.Compile(`{"type":"record","name":"U","fields":[{"name":"a","type":"geo.Address"}]}`, nil); err == nil {
		t.Fatal("a missing reference compiled")
	}
}

func TestLookup(t *testing.T) {
	typ := `{"type":"record","name":"Ev","fields":[
		{"name":"meta","type":{"type":"record","name":"Meta","fields":[
			{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
			{"name":"lts","type":["null",{"type":"long","logicalType":"local-timestamp-millis"}]},
			{"name":"day","type":{"type":"int","logicalType":"date"}},
			{"name":"ms","type":"long"},
			{"name":"iso","type":"string"}]}},
		{"name":"id","type":["null","string"]},
		{"name":"n","type":"double"},
		{"name":"tags","type":{"type":"map","values":"int"}}]}`
	body := encode(t, typ, map[string]any{
		"meta": map[string]any{"ts": ts, "lts": map[string]any{"long.local-timestamp-millis": ts}, "day": ts, "ms": int64(1700000000000), "iso": "2024-01-01T00:00:00Z"},
		"id":   map[string]any{"string": "sku-1"},
		"n":    2.5,
		"tags": map[string]any{"x": int32(3)},
	})
	codec := compile(t, typ)
	v, err := codec.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want value.Field
	}{
		{"f.meta.ts", value.Field{Kind: value.KindTime, Time: ts.Truncate(time.Microsecond), Text: "2024-01-15T10:30:00.123456Z"}},
		{"f.meta.lts", value.Field{Kind: value.KindTime, Time: ts.Truncate(time.Millisecond), Text: "2024-01-15T10:30:00.123Z"}},
		{"f.meta.day", value.Field{Kind: value.KindTime, Time: time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), Text: "2024-01-15"}},
		{"f.meta.ms", value.Field{Kind: value.KindNumber, Text: "1700000000000"}},
		{"f.meta.iso", value.Field{Kind: value.KindString, Text: "2024-01-01T00:00:00Z"}},
		{"f.id", value.Field{Kind: value.KindString, Text: "sku-1"}},
		{"f.n", value.Field{Kind: value.KindNumber, Text: "2.5"}},
		{"f.tags.x", value.Field{Kind: value.KindNumber, Text: "3"}},
		{"f.tags", value.Field{Kind: value.KindOther, Text: `{"x":3}`}},
	} {
		p, _ := value.SplitPath(c.path)
		got, ok := v.Lookup(p)
		if !ok || got.Kind != c.want.Kind || !got.Time.Equal(c.want.Time) || got.String() != c.want.Text {
			t.Errorf("%s: got %+v %v, want %+v", c.path, got, ok, c.want)
		}
		if ref, ok := codec.LookupReference(body, p); !ok || ref != got {
			t.Errorf("%s: library path %+v %v, transcoder %+v", c.path, ref, ok, got)
		}
	}
	for _, p := range []string{"f.nope", "f.meta.ts.deeper", "f.tags.y", "g"} {
		path, _ := value.SplitPath(p)
		if got, ok := v.Lookup(path); ok {
			t.Errorf("%s: found %+v", p, got)
		}
	}
}

func TestBadBodies(t *testing.T) {
	c := compile(t, `{"type":"record","name":"R","fields":[{"name":"s","type":"string"},{"name":"a","type":{"type":"array","items":"long"}}]}`)
	good := encode(t, `{"type":"record","name":"R","fields":[{"name":"s","type":"string"},{"name":"a","type":{"type":"array","items":"long"}}]}`, map[string]any{"s": "x", "a": []any{int64(1)}})
	if _, err := c.Decode(good); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"truncated":          good[:len(good)-1],
		"trailing bytes":     append(append([]byte{}, good...), 0),
		"huge string length": {0xfe, 0xff, 0xff, 0xff, 0x0f},
		"huge array count":   append([]byte{0x02, 'x'}, 0xfe, 0xff, 0xff, 0xff, 0x0f),
		"empty":              {},
	} {
		if js, err := c.DecodeReference(body); err == nil {
			t.Errorf("%s: the library path decoded %s", name, js)
		}
		if v, err := c.Decode(body); err == nil {
			t.Errorf("%s: decoded %s", name, v.JSON())
		} else if !strings.HasPrefix(err.Error(), "avro: ") {
			t.Errorf("%s: error %q does not say avro", name, err)
		}
	}
}

// TestMapOrderAndRepeats: entries written out of order, with a key written
// twice, render sorted, and the last of the repeated key wins, on both paths.
func TestMapOrderAndRepeats(t *testing.T) {
	c := compile(t, `{"type":"map","values":"int"}`)
	// one block of 3 entries: "b"→1, "a"→2, "b"→3; then the end block
	body := []byte{6, 2, 'b', 2, 2, 'a', 4, 2, 'b', 6, 0}
	const want = `{"f":{"a":2,"b":3}}`
	v, err := c.Decode(body)
	if err != nil || string(v.JSON()) != want {
		t.Fatalf("transcoder: %v %v", v, err)
	}
	if ref, err := c.DecodeReference(body); err != nil || string(ref) != want {
		t.Fatalf("library path: %s %v", ref, err)
	}
	p, _ := value.SplitPath("f.b")
	if f, ok := v.Lookup(p); !ok || f.Text != "3" {
		t.Fatalf("f.b = %+v %v", f, ok)
	}
	// Two blocks, the second a negative count with its byte size.
	body = []byte{2, 2, 'z', 2, 1, 4, 2, 'y', 4, 0}
	if v, err := c.Decode(body); err != nil || string(v.JSON()) != `{"f":{"y":2,"z":1}}` {
		t.Fatalf("negative block: %v %v", v, err)
	}
}

// TestBigDecimalOfLargestScaleIsCheap: a 6-byte big-decimal of the largest
// scale renders its 65536 digits with a few allocations, not one per factor
// of 2 and 5 of its denominator (a hostile record costing seconds).
func TestBigDecimalOfLargestScaleIsCheap(t *testing.T) {
	c := compile(t, `{"type":"bytes","logicalType":"big-decimal"}`)
	p := bigDecimal([]byte{1}, 1<<16)
	body := append(binary.AppendVarint(nil, int64(len(p))), p...)
	var js []byte
	allocs := testing.AllocsPerRun(1, func() {
		v, err := c.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		js = v.JSON()
	})
	if want := `{"f":"0.` + strings.Repeat("0", 1<<16-1) + `1"}`; string(js) != want {
		t.Fatalf("got %d bytes of JSON %.40q…, want 1e-65536", len(js), js)
	}
	if allocs > 1000 {
		t.Fatalf("%.0f allocations to decode a 6-byte big-decimal", allocs)
	}
}

// TestTimeOfDayOutsideADay: a time-millis or time-micros outside [0, 24h)
// is refused, by Decode and by Check alike, naming the logical type.
func TestTimeOfDayOutsideADay(t *testing.T) {
	for _, tc := range []struct {
		logical, writer string
		v               any
	}{
		{"time-millis", `"int"`, int32(24 * 3600 * 1000)},
		{"time-millis", `"int"`, int32(-1)},
		{"time-micros", `"long"`, int64(24 * 3600 * 1000 * 1000)},
		{"time-micros", `"long"`, int64(-1)},
	} {
		base := strings.Trim(tc.writer, `"`)
		c := compile(t, `{"type":"`+base+`","logicalType":"`+tc.logical+`"}`)
		body := encode(t, tc.writer, tc.v)
		want := tc.logical + " outside a day"
		if _, err := c.Decode(body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode %s %v: %v, want %q", tc.logical, tc.v, err, want)
		}
		if _, err := c.Check(body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check %s %v: %v, want %q", tc.logical, tc.v, err, want)
		}
	}
}

// TestRenderedValuesShareNoBytes: values rendered one after the other (the
// JSON of each carved from a shared slab), from several goroutines and of
// every size, keep their own JSON: appending to one never changes another,
// and each is what rendering it alone gives.
func TestRenderedValuesShareNoBytes(t *testing.T) {
	c := compile(t, `{"type":"record","name":"R","fields":[{"name":"s","type":"string"},{"name":"b","type":"bytes"}]}`)
	body := func(n int, ch byte) []byte {
		s := strings.Repeat(string(rune(ch)), n)
		b := binary.AppendVarint(nil, int64(len(s)))
		b = append(b, s...)
		b = binary.AppendVarint(b, int64(n%7))
		return append(b, make([]byte, n%7)...)
	}
	done := make(chan []string, 4)
	for g := range 4 {
		go func() {
			var got [][]byte
			var want []string
			for i := range 3000 {
				n := (i * 37 * (g + 1)) % 1500 // up to past slabMaxBody
				ch := byte('a' + i%26)
				if i%50 == 0 {
					ch = 0x01 // renders as \u0001: six bytes for one
				}
				v, err := c.Decode(body(n, ch))
				if err != nil {
					t.Error(err)
					break
				}
				js := v.JSON()
				want = append(want, string(js))
				got = append(got, js)
				_ = append(js, "garbage"...) // capped: must not write into the next value
			}
			var bad []string
			for i := range got {
				if string(got[i]) != want[i] || !json.Valid(got[i]) {
					bad = append(bad, string(got[i]))
				}
			}
			done <- bad
		}()
	}
	for range 4 {
		if bad := <-done; len(bad) > 0 {
			t.Fatalf("%d values changed after later renders, the first: %.80s", len(bad), bad[0])
		}
	}
}
