package workload

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/embedded"
)

// decoded is an event as an independent reader sees it.
type decoded struct {
	id                    int
	item, kind, pad, site string
	ts                    int64
}

// avroReader decodes Confluent-framed Avro values with hamba/avro, the
// writer schema fetched by id from the registry over HTTP: a reader that
// shares no code with the producer's encoder (twmb/avro).
type avroReader struct {
	t       *testing.T
	cl      *sr.Client
	schemas map[int]hamba.Schema
}

func (a *avroReader) decode(ctx context.Context, b []byte) decoded {
	a.t.Helper()
	var h sr.ConfluentHeader
	id, body, err := h.DecodeID(b)
	if err != nil {
		a.t.Fatalf("not in the wire format: %x: %v", b, err)
	}
	s, ok := a.schemas[id]
	if !ok {
		got, err := a.cl.SchemaByID(ctx, id)
		if err != nil {
			a.t.Fatalf("schema %d: %v", id, err)
		}
		if s, err = hamba.Parse(got.Schema); err != nil {
			a.t.Fatal(err)
		}
		a.schemas[id] = s
	}
	var m map[string]any
	if err := hamba.Unmarshal(s, body, &m); err != nil {
		a.t.Fatalf("schema %d: %v", id, err)
	}
	d := decoded{id: id, item: m["item"].(string), kind: m["kind"].(string), pad: m["pad"].(string), ts: m["ts"].(time.Time).UnixMilli()}
	if site, ok := m["site"].(string); ok {
		d.site = site
	}
	return d
}

// TestAvroHistory produces a small history with one Avro topic and the
// Avro twins, and reads it back with an independent decoder: every Avro
// record carries the same event as its JSON twin (item, time, kind, the
// same padding), the schema changes from v1 to v2 halfway through each
// partition, and v2 records carry a site.
func TestAvroHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 40
	w, err := New(Options{Topics: 2, Partitions: 1, RecordsPerPartition: n, Items: 10, ValueBytes: 100, AvroTopics: 1, AvroTwins: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(w.ClusterOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, err := w.ProduceHistory(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if h.Records != 2*n || h.Twins != 2*n {
		t.Fatalf("history %+v, want %d records and %d twins", h, 2*n, 2*n)
	}
	cl, err := sr.NewClient(sr.URLs(c.RegistryURL()))
	if err != nil {
		t.Fatal(err)
	}
	r := &avroReader{t: t, cl: cl, schemas: map[int]hamba.Schema{}}
	read := func(topic string) [][]byte {
		vs, err := c.ReadUpTo(ctx, topic, kgo.ReadCommitted())
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != n {
			t.Fatalf("%s holds %d records, want %d", topic, len(vs), n)
		}
		return vs
	}
	avroTopic, jsonTopic := read(Topic(0)), read(Topic(1))
	twin0, twin1 := read(AvroTopic(0)), read(AvroTopic(1))
	var sites int
	for i := range n {
		var j struct {
			Item string `json:"item"`
			TS   int64  `json:"ts"`
			Kind string `json:"kind"`
			Pad  string `json:"pad"`
		}
		if err := json.Unmarshal(jsonTopic[i], &j); err != nil {
			t.Fatalf("%s record %d is not JSON: %v", Topic(1), i, err)
		}
		got := r.decode(ctx, twin1[i])
		if got.item != j.Item || got.ts != j.TS || got.kind != j.Kind || got.pad != j.Pad || j.Pad == "" {
			t.Fatalf("record %d: twin %+v, JSON %+v", i, got, j)
		}
		a, b := r.decode(ctx, avroTopic[i]), r.decode(ctx, twin0[i])
		if a.item != b.item || a.ts != b.ts || a.kind != b.kind || a.site != b.site {
			t.Fatalf("record %d: %s %+v, its twin %+v", i, Topic(0), a, b)
		}
		for _, d := range []decoded{got, a} {
			v2 := i >= n/2
			if hasSite := d.site != ""; hasSite && !v2 {
				t.Fatalf("record %d of the first half has a site: %+v", i, d)
			}
			if d.site != "" {
				sites++
			}
			sch := r.schemas[d.id].(*hamba.RecordSchema)
			if len(sch.Fields()) != map[bool]int{false: 4, true: 5}[v2] {
				t.Fatalf("record %d written with schema %d of %d fields", i, d.id, len(sch.Fields()))
			}
		}
	}
	if sites == 0 {
		t.Fatal("no v2 record carries a site")
	}
}

// A scenario with Avro topics needs a schema registry beside the broker.
func TestAvroNeedsRegistry(t *testing.T) {
	w, err := New(Options{Topics: 1, Partitions: 1, RecordsPerPartition: 1, AvroTopics: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ProduceHistory(context.Background(), Remote{"127.0.0.1:1"}); err == nil {
		t.Fatal("produced Avro with no registry")
	}
	if _, err := New(Options{Topics: 2, AvroTopics: -1}); err == nil {
		t.Fatal("a negative count of Avro topics accepted")
	}
}
