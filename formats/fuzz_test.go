package formats_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/record"
)

// memReg is an in-memory Registry for fuzzing and benchmarks, where HTTP
// would only add noise (the HTTP path is tested against srfake).
type memReg map[int]*registry.Schema

func (m memReg) ByID(_ context.Context, id int) (*registry.Schema, error) {
	if s, ok := m[id]; ok {
		return s, nil
	}
	return nil, &registry.NotFoundError{What: "schema id " + strconv.Itoa(id), Reason: "404"}
}

func (m memReg) ByGUID(_ context.Context, guid string) (*registry.Schema, error) {
	return nil, &registry.NotFoundError{What: "schema guid " + guid, Reason: "404"}
}

// fuzzAvro has every container and the logical types whose decoding
// allocates: arrays, maps, unions, decimals, strings, bytes.
const fuzzAvro = `{"type":"record","name":"F","fields":[
	{"name":"s","type":"string"},
	{"name":"b","type":"bytes"},
	{"name":"a","type":{"type":"array","items":["null","long",{"type":"record","name":"E","fields":[]}]}},
	{"name":"m","type":{"type":"map","values":{"type":"array","items":"F"}}},
	{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":9}},
	{"name":"bd","type":["null",{"type":"bytes","logicalType":"big-decimal"}]},
	{"name":"t","type":{"type":"long","logicalType":"timestamp-micros"}},
	{"name":"e","type":{"type":"enum","name":"En","symbols":["A","B"]}},
	{"name":"x","type":{"type":"fixed","name":"X","size":3}}]}`

func fuzzRegistry() memReg {
	return memReg{
		1: {ID: 1, Type: sr.TypeAvro, Text: fuzzAvro},
		2: {ID: 2, Type: sr.TypeProtobuf, Text: saleProto},
		3: {ID: 3, Type: sr.TypeJSON, Text: `{}`},
	}
}

// FuzzDecode: a hostile payload never panics, fails only as a bad record
// (the registry here is always up), and a decoded value is valid JSON no
// larger than a constant times the payload (no unbounded allocation).
func FuzzDecode(f *testing.F) {
	s := hamba.MustParse(fuzzAvro)
	body, err := hamba.Marshal(s, map[string]any{"s": "x", "b": []byte{1}, "a": []any{nil, map[string]any{"long": int64(3)}},
		"m": map[string]any{"k": []any{}}, "d": big.NewRat(5, 4), "bd": nil, "t": time.Unix(1, 0), "e": "B", "x": [3]byte{1, 2, 3}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte{0, 0, 0, 0, 1}, body...), uint8(0))
	f.Add([]byte{0, 0, 0, 0, 2, 2, 2, 0x0a, 0x01, 'x', 0x18, 0x05}, uint8(1))
	f.Add([]byte{0, 0, 0, 0, 3, '{', '}'}, uint8(2))
	f.Add([]byte{0, 0, 0, 0, 1, 0xfe, 0xff, 0xff, 0xff, 0x0f}, uint8(0))
	decoders := map[uint8]*formats.Decoder{}
	for i, fm := range []formats.Format{formats.Avro, formats.Protobuf, formats.JSONSchema} {
		d, err := formats.New(formats.Config{Format: fm, Registry: fuzzRegistry()})
		if err != nil {
			f.Fatal(err)
		}
		decoders[uint8(i)] = d
	}
	if v, err := decoders[0].Decode(context.Background(), append([]byte{0, 0, 0, 0, 1}, body...), nil); err != nil || !json.Valid(v.JSON()) {
		f.Fatalf("the Avro seed does not decode: %v", err)
	}
	f.Fuzz(func(t *testing.T, payload []byte, which uint8) {
		d := decoders[which%3]
		v, err := d.Decode(context.Background(), payload, []record.Header(nil))
		if err != nil {
			if !errors.Is(err, formats.ErrBadRecord) {
				t.Fatalf("error %v is not a bad record", err)
			}
			return
		}
		if !json.Valid(v.JSON()) {
			t.Fatalf("invalid JSON %q", v.JSON())
		}
		if len(v.JSON()) > 64*len(payload)+1<<20 {
			t.Fatalf("%d-byte payload rendered to %d bytes", len(payload), len(v.JSON()))
		}
	})
}
