package process_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/formatstest"
	"github.com/signalbox/signalbox/record"
)

// schemadRecords are an Avro and a Protobuf record as the engine hands
// them to a Process: the original bytes in Value, the sinks' JSON in
// DecodedValue (decoded by the formats package, as at ingest).
func schemadRecords(t *testing.T) (avro, proto *record.Record) {
	ctx := context.Background()
	d, err := formats.New(formats.Config{Format: formats.Avro, Registry: formatstest.MemRegistry{1: {ID: 1, Type: sr.TypeAvro, Text: formatstest.InvV2}}})
	if err != nil {
		t.Fatal(err)
	}
	site := "oslo"
	b := formatstest.AvroRecord(t, formatstest.InvV2, 1, map[string]any{"sku": "sku-1", "meta": map[string]any{"ts": time.UnixMilli(1700000000123)}, "seq": int64(42), "site": &site})
	v, err := d.DecodeValue(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	avro = &record.Record{Topic: "inv", Value: b, DecodedValue: v.JSON(), ValueSchemaID: 1}
	pd, err := formats.New(formats.Config{Format: formats.Protobuf, Registry: formatstest.MemRegistry{2: {ID: 2, Type: sr.TypeProtobuf, Text: formatstest.SaleProto}}})
	if err != nil {
		t.Fatal(err)
	}
	// Sale{sku: "sku-000123", at: {seconds: 1700000000}, seq: 1999}
	body := append([]byte{0, 0, 0, 0, 2, 2, 2}, 0x0a, 10, 's', 'k', 'u', '-', '0', '0', '0', '1', '2', '3', 0x12, 6, 0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06, 0x18, 0xcf, 0x0f)
	if v, err = pd.DecodeValue(ctx, body, nil); err != nil {
		t.Fatal(err)
	}
	proto = &record.Record{Topic: "sales", Value: body, DecodedValue: v.JSON(), ValueSchemaID: 2}
	return avro, proto
}
