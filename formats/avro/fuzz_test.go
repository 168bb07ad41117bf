package avro_test

import (
	"bytes"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/signalbox/signalbox/formats/avro"
)

// fuzzSchema has every kind the transcoder handles, including a recursive
// record, so any body exercises all of them.
const fuzzSchema = `{"type":"record","name":"F","fields":[
	{"name":"s","type":"string"},
	{"name":"b","type":"bytes"},
	{"name":"i","type":"int"},
	{"name":"l","type":"long"},
	{"name":"fl","type":"float"},
	{"name":"db","type":"double"},
	{"name":"bo","type":"boolean"},
	{"name":"a","type":{"type":"array","items":["null","long",{"type":"record","name":"E","fields":[]}]}},
	{"name":"m","type":{"type":"map","values":["null","F"]}},
	{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":3}},
	{"name":"df","type":{"type":"fixed","name":"DF","size":9,"logicalType":"decimal","precision":20,"scale":2}},
	{"name":"bd","type":["null",{"type":"bytes","logicalType":"big-decimal"}]},
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
	{"name":"tn","type":{"type":"long","logicalType":"local-timestamp-nanos"}},
	{"name":"dt","type":{"type":"int","logicalType":"date"}},
	{"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
	{"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
	{"name":"e","type":{"type":"enum","name":"En","symbols":["A","B"]}},
	{"name":"u","type":{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}},
	{"name":"du","type":{"type":"fixed","name":"Du","size":12,"logicalType":"duration"}},
	{"name":"x","type":{"type":"fixed","name":"X","size":3}}]}`

// FuzzTranscode: on any body the transcoder (the hot path) and the library
// path agree: both fail, or both give the same JSON and the same lookups;
// Check fails with Decode's error or gives a value that looks up and
// renders the same.
// Neither panics; the output stays within a constant factor of the body.
func FuzzTranscode(f *testing.F) {
	// hamba lacks local-timestamp-nanos: it writes tn as the plain long it is.
	s := hamba.MustParse(strings.Replace(fuzzSchema, `{"type":"long","logicalType":"local-timestamp-nanos"}`, `"long"`, 1))
	rec := func(m map[string]any) map[string]any {
		base := map[string]any{"s": "x", "b": []byte{1}, "i": int32(-1), "l": int64(1) << 40, "fl": float32(1.5), "db": 2.25, "bo": true,
			"a": []any{nil, map[string]any{"long": int64(3)}, map[string]any{"E": map[string]any{}}}, "m": map[string]any{},
			"d": big.NewRat(-12345, 1000), "df": big.NewRat(1, 100), "bd": nil, "ts": time.Unix(1700000000, 123000),
			"tn": int64(1000000005), "dt": time.Unix(86400*3, 0).UTC(), "tm": 5 * time.Second, "tu": time.Minute,
			"e": "B", "u": [16]byte{1, 2}, "du": [12]byte{1}, "x": [3]byte{1, 2, 3}}
		for k, v := range m {
			base[k] = v
		}
		return base
	}
	for _, m := range []map[string]any{
		rec(nil),
		rec(map[string]any{"m": map[string]any{"z": nil, "a": map[string]any{"F": rec(nil)}}}),
	} {
		body, err := hamba.Marshal(s, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	c, err := avro.Compile(fuzzSchema, nil)
	if err != nil {
		f.Fatal(err)
	}
	paths := [][]string{{"s"}, {"ts"}, {"tn"}, {"dt"}, {"e"}, {"u"}, {"m", "a", "l"}, {"m", "z"}, {"d"}, {"a"}, {"db"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		ref, rerr := c.DecodeReference(body)
		v, err := c.Decode(body)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("transcoder err %v, library err %v (library JSON %s)", err, rerr, ref)
		}
		cv, cerr := c.Check(body)
		if fmt.Sprint(cerr) != fmt.Sprint(err) {
			t.Fatalf("Check err %v, Decode err %v", cerr, err)
		}
		if err != nil {
			return
		}
		defer func() { // a checked value looks up and renders as the decoded one
			for _, p := range paths {
				got, ok := cv.Lookup(p)
				want, wok := v.Lookup(p)
				if ok != wok || got != want {
					t.Fatalf("Lookup(%v): checked %+v %v, decoded %+v %v", p, got, ok, want, wok)
				}
			}
			if !bytes.Equal(cv.JSON(), v.JSON()) {
				t.Fatalf("checked renders %s, decoded %s", cv.JSON(), v.JSON())
			}
		}()
		if !bytes.Equal(v.JSON(), ref) {
			t.Fatalf("transcoder %s\nlibrary    %s", v.JSON(), ref)
		}
		if len(ref) > 64*len(body)+1<<20 {
			t.Fatalf("%d-byte body rendered to %d bytes", len(body), len(ref))
		}
		for _, p := range paths {
			got, ok := v.Lookup(p)
			want, wok := c.LookupReference(body, p)
			if ok != wok || got.Kind != want.Kind || got.String() != want.String() || !got.Time.Equal(want.Time) {
				t.Fatalf("Lookup(%v): transcoder %+v %v, library %+v %v", p, got, ok, want, wok)
			}
		}
	})
}
