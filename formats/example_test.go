package formats_test

import (
	"context"
	"fmt"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/formats/value"
)

// A Decoder per input: the payload's framing names the writer schema, the
// registry client fetches it once, and the value comes out as JSON with its
// event time read from a logical timestamp.
func Example() {
	reg := srfake.New()
	defer reg.Close()
	schema := `{"type":"record","name":"Stock","fields":[
		{"name":"sku","type":"string"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"site","type":["null","string"]}]}`
	id, _, _ := reg.RegisterSchema("stock-value", sr.Schema{Schema: schema})

	// A producer's record: Confluent framing around an Avro body.
	payload, _ := sr.Encode(map[string]any{"sku": "a-1", "ts": time.UnixMilli(1700000000123), "site": map[string]any{"string": "oslo"}},
		new(sr.ConfluentHeader), id, nil, func(v any) ([]byte, error) { return hamba.Marshal(hamba.MustParse(schema), v) })

	client, _ := registry.New(registry.Config{URLs: []string{reg.URL()}})
	dec, _ := formats.New(formats.Config{Format: formats.Avro, Registry: client})
	v, err := dec.Decode(context.Background(), payload, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	path, _ := value.SplitPath("ts")
	ts, _ := v.Lookup(path)
	fmt.Println(string(v.JSON()))
	fmt.Println(v.SchemaID() == id, ts.Kind == value.KindTime, ts.Time.UnixMilli())
	// Output:
	// {"sku":"a-1","ts":"2023-11-14T22:13:20.123Z","site":"oslo"}
	// true true 1700000000123
}
