package signalbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/formats/formatstest"
)

// TestSchemadShortNameAvro: an Avro record type that refers to itself by
// its short name inside a namespace (as Java's Avro writes it), read from
// Kafka with its schema from the registry: every record reaches the sink,
// decoded, and none is dead-lettered.
func TestSchemadShortNameAvro(t *testing.T) {
	const schema = `{"type":"record","name":"Ev","namespace":"audit","fields":[
		{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"actor","type":"string"},
		{"name":"cause","type":["null","Ev"]}]}`
	c := startCluster(t, embedded.WithTopic("audit", 1))
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "audit-value", sr.Schema{Schema: schema})
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	const n = 121
	var recs []*kgo.Record
	var want bytes.Buffer
	for i := range n {
		at := base.Add(time.Duration(i) * time.Millisecond).UTC()
		v := map[string]any{"at": at, "actor": fmt.Sprint("u", i), "cause": nil}
		wantCause := "null"
		if i%2 == 1 {
			v["cause"] = map[string]any{"audit.Ev": map[string]any{"at": at, "actor": "root", "cause": nil}}
			wantCause = fmt.Sprintf(`{"at":%q,"actor":"root","cause":null}`, at.Format("2006-01-02T15:04:05.000Z"))
		}
		recs = append(recs, &kgo.Record{Topic: "audit", Value: formatstest.AvroRecord(t, schema, id, v)})
		fmt.Fprintf(&want, `{"at":%q,"actor":"u%d","cause":%s}`+"\n", at.Format("2006-01-02T15:04:05.000Z"), i, wantCause)
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, dead := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")
	p, done := startLane(t, fmt.Sprintf(`brokers: [%s]
inputs: [{topic: audit, format: avro, time: field, time_field: at}]
schema_registry: {url: %q}
until: end-offsets
sinks: [{type: jsonl, path: %q}]
dead_letter: {type: jsonl, path: %q}
`, c.Addrs()[0], r.URL(), out, dead))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Dead != 0 || s.Out != n {
		d, _ := os.ReadFile(dead)
		t.Fatalf("%d out, %d dead-lettered; want %d and 0:\n%.500s", s.Out, s.Dead, n, d)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for line := range bytes.Lines(b) {
		var e struct {
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		got.Write(e.Value)
		got.WriteByte('\n')
	}
	if got.String() != want.String() {
		t.Fatalf("values:\n%.600s\nwant\n%.600s", got.String(), want.String())
	}
}
