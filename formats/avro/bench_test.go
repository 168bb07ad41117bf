package avro_test

import (
	"math/big"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	twmb "github.com/twmb/avro"

	"github.com/signalbox/signalbox/formats/avro"
)

// benchSchema is a typical inventory event.
const benchSchema = `{"type":"record","name":"Inventory","namespace":"shop","fields":[
	{"name":"sku","type":"string"},
	{"name":"meta","type":{"type":"record","name":"Meta","fields":[
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"source","type":"string"}]}},
	{"name":"qty","type":"int"},
	{"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},
	{"name":"site","type":["null","string"]},
	{"name":"tags","type":{"type":"map","values":"string"}},
	{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
		{"name":"n","type":"long"},{"name":"code","type":"string"}]}}}]}`

func benchBody(b *testing.B) []byte {
	body, err := hamba.Marshal(hamba.MustParse(benchSchema), map[string]any{
		"sku": "sku-000123", "meta": map[string]any{"ts": time.Unix(1700000000, 0), "source": "warehouse-7"},
		"qty": int32(42), "price": big.NewRat(1999, 100), "site": map[string]any{"string": "oslo"},
		"tags":  map[string]any{"color": "red", "size": "xl"},
		"lines": []any{map[string]any{"n": int64(1), "code": "a"}, map[string]any{"n": int64(2), "code": "b"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkAvroLibraries compares the decode path of the two libraries
// (body into a generic any), the library path to JSON (twmb/avro plus the
// renderer), and the program's render the decoder runs (binary to JSON in
// one pass).
func BenchmarkAvroLibraries(b *testing.B) {
	body := benchBody(b)
	b.Run("twmb-any", func(b *testing.B) {
		s := twmb.MustParse(benchSchema)
		benchDecode(b, body, func() error {
			var v any
			_, err := s.Decode(body, &v, twmb.TaggedUnions(), twmb.TagLogicalTypes())
			return err
		})
	})
	b.Run("hamba-any", func(b *testing.B) {
		s := hamba.MustParse(benchSchema)
		benchDecode(b, body, func() error {
			var v any
			return hamba.Unmarshal(s, body, &v)
		})
	})
	c, err := avro.Compile(benchSchema, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("twmb-json", func(b *testing.B) {
		benchDecode(b, body, func() error { _, err := c.DecodeReference(body); return err })
	})
	b.Run("transcode-json", func(b *testing.B) {
		benchDecode(b, body, func() error { _, err := c.Decode(body); return err })
	})
}

func benchDecode(b *testing.B, body []byte, decode func() error) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := decode(); err != nil {
			b.Fatal(err)
		}
	}
}

// eventSchema is the scaling benchmark's event (internal/workload, v2).
const eventSchema = `{"type":"record","name":"Event","fields":[
	{"name":"item","type":"string"},
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"kind","type":"string"},
	{"name":"pad","type":"string"},
	{"name":"site","type":["null","string"]}]}`

// BenchmarkCheck is what ingest does with a body when no sink wants its
// JSON: check it, then read the event time.
func BenchmarkCheck(b *testing.B) {
	event, err := hamba.Marshal(hamba.MustParse(eventSchema), map[string]any{
		"item": "i-042", "ts": time.UnixMilli(1_700_000_000_123), "kind": "sold",
		"pad": "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrs", "site": map[string]any{"string": "oslo"},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, schema string
		body         []byte
		path         []string
	}{
		{"event", eventSchema, event, []string{"ts"}},
		{"inventory", benchSchema, benchBody(b), []string{"meta", "ts"}},
	} {
		c, err := avro.Compile(bc.schema, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			benchDecode(b, bc.body, func() error {
				v, err := c.Check(bc.body)
				if err != nil {
					return err
				}
				if _, ok := v.Lookup(bc.path); !ok {
					b.Fatal("no time field")
				}
				return nil
			})
		})
	}
}
