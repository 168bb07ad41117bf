package signalbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/sinks/envelope"
)

// TestIntegerSerializerKeysEndToEnd: 256 records keyed as Kafka's
// IntegerSerializer writes 0..255 (keys 128..255 are not valid UTF-8), read
// from Kafka over TCP, reach a JSONL file, a _bulk endpoint (doc_id: key)
// and PostgreSQL as 256 distinct keys, each read back byte for byte; a
// tombstone under time: field is dead-lettered as a tombstone, its binary
// key and null value kept.
func TestIntegerSerializerKeysEndToEnd(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("in", 3))
	conn, table := pgTable(t)
	const n = 256
	key := func(i int) []byte { return []byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)} }
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "in", Partition: int32(i % 3), Key: key(i),
			Value: fmt.Appendf(nil, `{"seq":%d,"ts":%d}`, i, exitBase+int64(i))})
	}
	recs = append(recs, &kgo.Record{Topic: "in", Partition: 0, Key: key(1000)}) // a tombstone
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	bulkURL, bulkDocs := bulkServer(t)
	dir := t.TempDir()
	out, dl := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")
	sinks := fmt.Sprintf("  - {type: jsonl, path: %q}\n  - {type: bulk, url: %q, index: out}\n  - {type: postgres, dsn_env: EXITPATH_PG_DSN, table: %s}\n",
		out, bulkURL, table)
	if err := runExitJob(t, exitJob(c, sinks, fmt.Sprintf("{type: jsonl, path: %q}", dl)), zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := range n {
		want[string(key(i))] = true
	}
	check := func(where string, got map[string]bool) {
		t.Helper()
		if len(got) != n {
			t.Fatalf("%s: %d distinct keys, want %d", where, len(got), n)
		}
		for k := range got {
			if !want[k] {
				t.Fatalf("%s: key %q was never written", where, k)
			}
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	jsonKeys := map[string]bool{}
	for line := range bytes.Lines(b) {
		d, err := envelope.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		jsonKeys[string(d.Key)] = true
	}
	check("jsonl", jsonKeys)
	bulkKeys := map[string]bool{}
	for id, body := range bulkDocs() {
		k, err := envelope.ParseID(id)
		d, derr := envelope.Decode(body)
		if err != nil || derr != nil || !bytes.Equal(k, d.Key) {
			t.Fatalf("document %q: key %q (%v), body %s (%v)", id, k, err, body, derr)
		}
		bulkKeys[string(k)] = true
	}
	check("bulk", bulkKeys)
	rows, err := conn.Query(context.Background(), "SELECT coalesce(key_bytes, convert_to(key, 'UTF8')) FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	pgKeys := map[string]bool{}
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		pgKeys[string(k)] = true
	}
	check("postgres", pgKeys)
	dead, err := os.ReadFile(dl)
	if err != nil {
		t.Fatal(err)
	}
	d, err := envelope.Decode(bytes.TrimSpace(dead))
	if err != nil || !bytes.Equal(d.Key, key(1000)) || d.Value != nil || !bytes.Contains(dead, []byte(`"value":null`)) ||
		!bytes.Contains(dead, []byte(`tombstone: no value to read the event time field \"ts\" from`)) {
		t.Fatalf("dead letters %s (%v), want the tombstone with its key", dead, err)
	}
}
