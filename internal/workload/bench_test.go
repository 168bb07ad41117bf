package workload

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/formatstest"
	fvalue "github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
)

// BenchmarkDecodeEvent is the CPU per record of reading the event time of
// one workload event (the scaling benchmark's ~100-byte value): the Avro
// value through formats.Decoder (framing, the cached codec, the JSON, the
// lookup of ts, the value handed back as the engine does; -check: Check,
// what ingest does for a Kafka sink, without the JSON), and the
// JSON value through the lookup the engine uses for `time: field` on JSON.
//
//	go test -run x -bench DecodeEvent ./internal/workload
func BenchmarkDecodeEvent(b *testing.B) {
	ctx := context.Background()
	js, pad := value("i-042", 1_700_000_000_123, "sold", 100)
	reg := formatstest.MemRegistry{1: {ID: 1, Type: sr.TypeAvro, Text: AvroSchemaV1}, 2: {ID: 2, Type: sr.TypeAvro, Text: AvroSchemaV2}}
	d, err := formats.New(formats.Config{Format: formats.Avro, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	ts, _ := fvalue.SplitPath(TimeField)
	for _, v := range []struct {
		name    string
		evolved bool
	}{{"avro-v1", false}, {"avro-v2", true}} {
		payload, err := avroValue(avroIDs{1, 2}, v.evolved, 0, "i-042", 1_700_000_000_123, "sold", pad)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range []struct {
			name   string
			decode func(context.Context, []byte, []record.Header) (*formats.Value, error)
		}{{"", d.Decode}, {"-check", d.Check}} {
			b.Run(v.name+m.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					got, err := m.decode(ctx, payload, nil)
					if err != nil {
						b.Fatal(err)
					}
					if f, ok := got.Lookup(ts); !ok || f.Kind != fvalue.KindTime || f.Time.UnixMilli() != 1_700_000_000_123 {
						b.Fatalf("ts: %+v in %s", f, got.JSON())
					}
					d.ReleaseValue(got) // as the engine does, once it has the fields and the JSON
				}
			})
		}
	}
	b.Run("json", func(b *testing.B) {
		path, _ := jsonfield.ParsePath(TimeField)
		b.ReportAllocs()
		for b.Loop() {
			if f, err := jsonfield.Get(js, path); err != nil || string(f.Raw) != "1700000000123" {
				b.Fatalf("ts: %+v, %v", f, err)
			}
		}
	})
}
