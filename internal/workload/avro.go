package workload

import (
	"context"
	"fmt"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
)

// The Avro schemas of the event values: v1, and v2, which adds the nullable
// field site with a default (a backward-compatible evolution). The event
// time ts is a timestamp-millis, so a reader needs no time format.
const (
	AvroSchemaV1 = `{"type":"record","name":"Event","namespace":"signalbox.workload","fields":[
		{"name":"item","type":"string"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"kind","type":"string"},
		{"name":"pad","type":"string"}]}`
	AvroSchemaV2 = `{"type":"record","name":"Event","namespace":"signalbox.workload","fields":[
		{"name":"item","type":"string"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"kind","type":"string"},
		{"name":"pad","type":"string"},
		{"name":"site","type":["null","string"],"default":null}]}`
)

var (
	avroV1 = avro.MustParse(AvroSchemaV1)
	avroV2 = avro.MustParse(AvroSchemaV2)
)

type eventV1 struct {
	Item string `avro:"item"`
	TS   int64  `avro:"ts"`
	Kind string `avro:"kind"`
	Pad  string `avro:"pad"`
}

type eventV2 struct {
	Item string  `avro:"item"`
	TS   int64   `avro:"ts"`
	Kind string  `avro:"kind"`
	Pad  string  `avro:"pad"`
	Site *string `avro:"site"`
}

// sites are the values of v2's site; every third v2 record has none.
var sites = []string{"oslo", "lima"}

// AvroTopic names the Avro twin of event topic i (Options.AvroTwins).
func AvroTopic(i int) string { return "avro-" + Topic(i) }

// Subject is the registry subject of topic's values (Confluent's
// TopicNameStrategy).
func Subject(topic string) string { return topic + "-value" }

// SchemaRegistry is a Broker with a schema registry beside it, where the
// Avro topics' schemas are registered.
type SchemaRegistry interface {
	RegistryURL() string
}

// avroIDs are the registered ids of one topic's v1 and v2 schemas.
type avroIDs struct{ v1, v2 int }

// registerAvro registers v1 then v2 under the subject of every topic and
// returns their ids by topic. Registering again returns the same ids.
func registerAvro(ctx context.Context, url string, topics []string) (map[string]avroIDs, error) {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return nil, err
	}
	ids := make(map[string]avroIDs, len(topics))
	for _, t := range topics {
		var got avroIDs
		for _, v := range []struct {
			schema string
			id     *int
		}{{AvroSchemaV1, &got.v1}, {AvroSchemaV2, &got.v2}} {
			ss, err := cl.CreateSchema(ctx, Subject(t), sr.Schema{Schema: v.schema, Type: sr.TypeAvro})
			if err != nil {
				return nil, fmt.Errorf("workload: registering the Avro schema of %s at %s: %w", t, url, err)
			}
			*v.id = ss.ID
		}
		ids[t] = got
	}
	return ids, nil
}

// avroValue is an event's value in the Confluent wire format (magic byte,
// schema id, Avro body), encoded by twmb/avro with franz-go's sr framing:
// v1 when !evolved, else v2 with a site chosen by n. pad is the padding
// the JSON value of the same event carries.
func avroValue(ids avroIDs, evolved bool, n int, it string, ts int64, kind, pad string) ([]byte, error) {
	b := make([]byte, 0, 40+len(it)+len(kind)+len(pad))
	if !evolved {
		return sr.AppendEncode(b, &eventV1{Item: it, TS: ts, Kind: kind, Pad: pad}, &sr.ConfluentHeader{}, ids.v1, nil, appendEncode(avroV1))
	}
	v := &eventV2{Item: it, TS: ts, Kind: kind, Pad: pad}
	if k := n % (len(sites) + 1); k < len(sites) {
		v.Site = &sites[k]
	}
	return sr.AppendEncode(b, v, &sr.ConfluentHeader{}, ids.v2, nil, appendEncode(avroV2))
}

func appendEncode(s *avro.Schema) func([]byte, any) ([]byte, error) {
	return func(b []byte, v any) ([]byte, error) { return s.AppendEncode(b, v) }
}
