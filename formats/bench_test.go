package formats_test

import (
	"context"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/formats/value"
)

// BenchmarkDecode is the decode cost per record (ns/op) of the whole path a
// text sink's record takes: framing, the cached codec, the body, the JSON,
// and the event-time lookup.
func BenchmarkDecode(b *testing.B) {
	tsPath, _ := value.SplitPath("meta.ts")
	b.Run("avro", func(b *testing.B) {
		d, _ := formats.New(formats.Config{Format: formats.Avro, Registry: memReg{1: {ID: 1, Type: sr.TypeAvro, Text: invV2}}})
		site := "oslo"
		body, err := hamba.Marshal(hamba.MustParse(invV2), inv{Sku: "sku-000123", Meta: meta{Ts: time.Unix(1700000000, 0)}, Qty: 42, Site: &site})
		if err != nil {
			b.Fatal(err)
		}
		benchDecode(b, d, append([]byte{0, 0, 0, 0, 1}, body...), tsPath)
	})
	b.Run("protobuf", func(b *testing.B) {
		d, _ := formats.New(formats.Config{Format: formats.Protobuf, Registry: memReg{2: {ID: 2, Type: sr.TypeProtobuf, Text: saleProto}}})
		// Sale{sku: "sku-000123", at: {seconds: 1700000000}, cents: 1999}
		body := []byte{0x0a, 10, 's', 'k', 'u', '-', '0', '0', '0', '1', '2', '3', 0x12, 6, 0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06, 0x18, 0xcf, 0x0f}
		atPath, _ := value.SplitPath("at")
		benchDecode(b, d, append([]byte{0, 0, 0, 0, 2, 2, 2}, body...), atPath)
	})
}

func benchDecode(b *testing.B, d *formats.Decoder, payload []byte, path []string) {
	ctx := context.Background()
	if v, err := d.Decode(ctx, payload, nil); err != nil {
		b.Fatal(err)
	} else if f, ok := v.Lookup(path); !ok || f.Kind != value.KindTime {
		b.Fatalf("time field: %+v %s", f, v.JSON())
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		v, err := d.Decode(ctx, payload, nil)
		if err != nil {
			b.Fatal(err)
		}
		v.Lookup(path)
	}
}

var _ formats.Registry = (*registry.Client)(nil)
