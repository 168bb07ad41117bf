package signalbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/formats/formatstest"
)

// TestSchemadLaneProcessed runs the schema'd lane (Avro and Protobuf) through
// a job file's processing. With a Kafka sink only, which writes original
// bytes, a filter still reads the values' JSON (the engine renders them for
// it): the output topic holds exactly the filtered records' original bytes,
// in order. With a map, each value becomes plain JSON built from the
// decoded fields (Avro's long a number, Protobuf's int64 a string, both
// read with double()). The two bad records are dead-lettered as before.
func TestSchemadLaneProcessed(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("inv", 3), embedded.WithTopic("sales", 2), embedded.WithTopic("out", 1))
	r := formatstest.NewRegistry(t)
	l := produceLane(t, c, r, 60)
	dir := t.TempDir()
	run := func(doc string) {
		t.Helper()
		_, done := startLane(t, doc)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	jobHead := func(dead string) string {
		return laneJob(c, r, filepath.Join(dir, "unused-"+dead), filepath.Join(dir, dead), "")
	}
	// The Kafka sink alone, a filter on a decoded field.
	kafkaOnly := strings.Replace(jobHead("dead1.jsonl"), fmt.Sprintf("  - {type: jsonl, path: %q}\n", filepath.Join(dir, "unused-dead1.jsonl")),
		"  - {type: kafka, topic: out}\n", 1) + "process: {filter: 'value.sku == \"s3\"'}\n"
	run(kafkaOnly)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vals, err := c.ReadUpTo(ctx, "out", kgo.ReadUncommitted())
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for i := range l.n {
		if i%11 == 3 {
			want = append(want, l.encoded[i])
		}
	}
	if len(vals) != len(want) {
		t.Fatalf("out holds %d records, want the %d with sku s3", len(vals), len(want))
	}
	for i := range want {
		if !bytes.Equal(vals[i], want[i]) {
			t.Fatalf("out record %d is %q, want the original bytes %q", i, vals[i], want[i])
		}
	}
	dead, err := os.ReadFile(filepath.Join(dir, "dead1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	checkLaneDead(t, l, dead)

	// A JSONL sink, a map over the decoded fields.
	out := filepath.Join(dir, "mapped.jsonl")
	run(laneJob(c, r, out, filepath.Join(dir, "dead2.jsonl"), "") + `process: {map: '{"sku": value.sku, "n": double(value.seq)}'}` + "\n")
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(got), []byte("\n"))
	if len(lines) != l.n {
		t.Fatalf("%d records mapped, want %d", len(lines), l.n)
	}
	for i, line := range lines {
		var e struct {
			Value    json.RawMessage `json:"value"`
			SchemaID *int            `json:"schema_id"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		if w := fmt.Sprintf(`{"n":%d,"sku":"s%d"}`, i, i%11); string(e.Value) != w || e.SchemaID != nil {
			t.Fatalf("record %d: value %s, schema id %v; want %s and no schema id", i, e.Value, e.SchemaID, w)
		}
	}
}
