package signalbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	_ "google.golang.org/protobuf/types/known/timestamppb" // google/protobuf/timestamp.proto in the global registry

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/formats/formatstest"
	"github.com/signalbox/signalbox/sinks/envelope"
)

// The schemas of the schema'd lane: an Avro inventory topic whose writer
// schema changes in the middle (v2 adds an optional site), and a Protobuf
// sales topic.
const (
	invV1     = formatstest.InvV1
	invV2     = formatstest.InvV2
	saleProto = formatstest.SaleProto
)

type invMeta struct {
	Ts time.Time `avro:"ts"`
}
type invRec1 struct {
	Sku  string  `avro:"sku"`
	Meta invMeta `avro:"meta"`
	Seq  int64   `avro:"seq"`
}
type invRec2 struct {
	Sku  string  `avro:"sku"`
	Meta invMeta `avro:"meta"`
	Seq  int64   `avro:"seq"`
	Site *string `avro:"site"`
}

// lane is the produced data of the schema'd lane, and what every sink must
// receive for it.
type lane struct {
	n        int            // good records, seq 0..n-1 at event time base+seq
	base     int64          // event time of seq 0, ms
	want     map[int]string // seq → the value's JSON
	schemaOf map[int]int    // seq → writer schema id
	bad      map[int64][]byte
	v1, v2   int
	saleID   int
	encoded  map[int][]byte // seq → the produced value bytes
}

// produceLane writes n records over inv (Avro, partitions 0-2; seq i to
// partition i%5 when i%5 < 3) and sales (Protobuf, partitions 0-1), then an
// unknown-schema-id record and a record not in the wire format to inv/0.
// Event times rise with seq, so the release order is seq order.
func produceLane(t *testing.T, c *embedded.Cluster, r *formatstest.Registry, n int) *lane {
	t.Helper()
	l := &lane{n: n, base: time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli(), want: map[int]string{},
		schemaOf: map[int]int{}, bad: map[int64][]byte{}, encoded: map[int][]byte{}}
	l.v1 = r.Register(t, "inv-value", sr.Schema{Schema: invV1})
	l.v2 = r.Register(t, "inv-value", sr.Schema{Schema: invV2})
	l.saleID = r.Register(t, "sales-value", sr.Schema{Schema: saleProto, Type: sr.TypeProtobuf})
	sale := formatstest.SaleDescriptor(t)
	var recs []*kgo.Record
	invCount := 0
	for i := range n {
		ts := time.UnixMilli(l.base + int64(i)).UTC()
		tsText := ts.Format("2006-01-02T15:04:05.000Z")
		sku := fmt.Sprintf("s%d", i%11)
		var v []byte
		topic, part := "inv", int32(i%5)
		switch {
		case part >= 3:
			topic, part = "sales", part-3
			m := dynamicpb.NewMessage(sale)
			m.Set(sale.Fields().ByName("sku"), protoreflect.ValueOfString(sku))
			formatstest.SetTimestamp(m, "at", ts)
			m.Set(sale.Fields().ByName("seq"), protoreflect.ValueOfInt64(int64(i)))
			v = formatstest.ProtoRecord(t, l.saleID, formatstest.SaleIndex, m)
			if ts.Nanosecond() == 0 {
				tsText = ts.Format("2006-01-02T15:04:05Z") // protojson's fewest fraction digits
			}
			l.want[i] = fmt.Sprintf(`{"sku":%q,"at":%q,"seq":"%d"}`, sku, tsText, i)
			l.schemaOf[i] = l.saleID
		case invCount*2 < n*3/5: // the first half of inv: v1
			invCount++
			v = formatstest.AvroRecord(t, invV1, l.v1, invRec1{Sku: sku, Meta: invMeta{ts}, Seq: int64(i)})
			l.want[i] = fmt.Sprintf(`{"sku":%q,"meta":{"ts":%q},"seq":%d}`, sku, tsText, i)
			l.schemaOf[i] = l.v1
		default:
			site, siteJSON := "oslo", `"oslo"`
			rec := invRec2{Sku: sku, Meta: invMeta{ts}, Seq: int64(i), Site: &site}
			if i%2 == 0 {
				rec.Site, siteJSON = nil, "null"
			}
			v = formatstest.AvroRecord(t, invV2, l.v2, rec)
			l.want[i] = fmt.Sprintf(`{"sku":%q,"meta":{"ts":%q},"seq":%d,"site":%s}`, sku, tsText, i, siteJSON)
			l.schemaOf[i] = l.v2
		}
		l.encoded[i] = v
		recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprint("k", i%13)), Value: v})
	}
	unknown := append([]byte{0, 0, 0, 0x27, 0x0f}, 2, 'x') // schema id 9999
	notWire := []byte(`{"sku":"plain json, no magic byte"}`)
	recs = append(recs, &kgo.Record{Topic: "inv", Partition: 0, Value: unknown}, &kgo.Record{Topic: "inv", Partition: 0, Value: notWire})
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	l.bad[int64(n/5+boolInt(n%5 > 0))] = unknown
	l.bad[int64(n/5+boolInt(n%5 > 0))+1] = notWire
	return l
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// heldLane produces a lane of 2000 records and takes its registry down:
// every schema fetched from now on is refused, v1 and the Protobuf schema
// are let through once each, so a hold begins at v2, in the middle of the
// inv partitions.
func heldLane(t *testing.T) (*embedded.Cluster, *formatstest.Registry, *lane) {
	t.Helper()
	c := startCluster(t, embedded.WithTopic("inv", 3), embedded.WithTopic("sales", 2))
	r := formatstest.NewRegistry(t)
	l := produceLane(t, c, r, 2000)
	downForID(r, l.v2)
	r.Down.Store(true)
	return c, r, l
}

// downForID makes r, while Down, also refuse (and count) every lookup of
// schema id, by whichever path.
func downForID(r *formatstest.Registry, id int) {
	r.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
		if strings.HasSuffix(req.URL.Path, fmt.Sprintf("/ids/%d", id)) && r.Down.Load() {
			r.Refused.Add(1)
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
}

// laneJob is the job file of the lane: JSONL out and dead-letter files,
// plus extra sinks.
func laneJob(c *embedded.Cluster, r *formatstest.Registry, out, dead, extra string) string {
	return fmt.Sprintf(`brokers: [%s]
inputs:
  - {topic: inv, format: avro, time: field, time_field: meta.ts}
  - {topic: sales, format: protobuf, time: field, time_field: at}
schema_registry: {url: %q}
until: end-offsets
checkpoint_interval: 1h
sinks:
  - {type: jsonl, path: %q}
%sdead_letter: {type: jsonl, path: %q}
`, c.Addrs()[0], r.URL(), out, extra, dead)
}

// startLane builds the pipeline of doc and runs it in the background.
func startLane(t *testing.T, doc string) (*signalbox.Pipeline, <-chan error) {
	t.Helper()
	p, done, _ := startLaneCancel(t, doc)
	return p, done
}

// startLaneCancel is startLane that also returns the run's cancel.
func startLaneCancel(t *testing.T, doc string) (*signalbox.Pipeline, <-chan error, context.CancelFunc) {
	t.Helper()
	p, err := buildPlan(t, doc, zap.NewNop()).Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return p, done, cancel
}

// checkLaneOut fails unless out holds every good record once, in seq (event
// time) order, none late, each with its expected value JSON and schema id.
func checkLaneOut(t *testing.T, l *lane, out []byte) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) != l.n {
		t.Fatalf("the JSONL sink got %d records, want %d", len(lines), l.n)
	}
	for i, line := range lines {
		var e struct {
			Value    json.RawMessage `json:"value"`
			SchemaID int             `json:"schema_id"`
			Late     bool            `json:"late"`
			TimeMs   int64           `json:"event_time_ms"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		if e.TimeMs != l.base+int64(i) || e.Late {
			t.Fatalf("line %d: event time %d late %v, want seq %d at %d, not late (order broken, duplicated or lost): %s", i+1, e.TimeMs, e.Late, i, l.base+int64(i), line)
		}
		if string(e.Value) != l.want[i] || e.SchemaID != l.schemaOf[i] {
			t.Fatalf("seq %d: value %s schema_id %d, want %s schema_id %d", i, e.Value, e.SchemaID, l.want[i], l.schemaOf[i])
		}
	}
}

// checkLaneFiles checks the JSONL output and dead-letter files of a lane
// (checkLaneOut, checkLaneDead).
func checkLaneFiles(t *testing.T, l *lane, out, dead string) {
	t.Helper()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkLaneOut(t, l, b)
	d, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	checkLaneDead(t, l, d)
}

// checkLaneDead fails unless dead holds exactly the two bad records, with
// their reasons and original bytes.
func checkLaneDead(t *testing.T, l *lane, dead []byte) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(dead), []byte("\n"))
	if len(l.bad) != 2 || len(lines) != 2 {
		t.Fatalf("dead letters: %d, want 2:\n%s", len(lines), dead)
	}
	reasons := map[int64]string{}
	for _, line := range lines {
		var e struct {
			Offset int64  `json:"offset"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		orig, ok := l.bad[e.Offset]
		if !ok {
			t.Fatalf("dead letter at offset %d is not one of the bad records: %s", e.Offset, line)
		}
		d, err := envelope.Decode(line)
		if err != nil || !bytes.Equal(d.Value, orig) {
			t.Fatalf("dead letter at offset %d carries %q (%v), want the original bytes %q", e.Offset, d.Value, err, orig)
		}
		reasons[e.Offset] = e.Reason
	}
	for off, reason := range reasons {
		if !strings.Contains(reason, "9999") && !strings.Contains(reason, "magic") {
			t.Fatalf("dead letter at offset %d: reason %q names neither the unknown id nor the framing", off, reason)
		}
	}
}

// laneSize is the number of good records: SIGNALBOX_SCHEMAD_RECORDS, else
// a size for every run of go test.
func laneSize(t *testing.T) int {
	if s := os.Getenv("SIGNALBOX_SCHEMAD_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 5 {
			t.Fatalf("SIGNALBOX_SCHEMAD_RECORDS=%q: want a number ≥ 5", s)
		}
		return n
	}
	return 3000
}

// TestSchemadLaneEndToEnd: an Avro topic (3 partitions, its writer schema
// changing midway) and a Protobuf topic (2 partitions), read from Kafka over
// TCP with schemas from a registry over HTTP: every good record reaches the
// JSONL sink once, in event-time order, none late, as its decoded JSON with
// its schema id; the unknown-id and non-wire-format records are
// dead-lettered with the reason and their original bytes.
func TestSchemadLaneEndToEnd(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("inv", 3), embedded.WithTopic("sales", 2))
	r := formatstest.NewRegistry(t)
	n := laneSize(t)
	l := produceLane(t, c, r, n)
	dir := t.TempDir()
	out, dead := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")
	start := time.Now()
	p, done := startLane(t, laneJob(c, r, out, dead, ""))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var wire, decoded int
	for i := range n {
		wire, decoded = wire+len(l.encoded[i]), decoded+len(l.want[i])
	}
	t.Logf("%d schema'd records (+2 bad) over 5 partitions in %v: %.0f records/s; values %.1f bytes on the wire, %.1f as JSON",
		n, took, float64(n)/took.Seconds(), float64(wire)/float64(n), float64(decoded)/float64(n))
	checkLaneFiles(t, l, out, dead)
	if s := p.Stats(); s.LateTotal().Count != 0 || s.Dead != 2 {
		t.Fatalf("stats: %d late, %d dead-lettered; want 0 and 2", s.LateTotal().Count, s.Dead)
	}
}

// TestSchemadRegistryOutageHolds: the registry answers 503 when the second
// Avro schema is first needed, mid-replay: the partitions that reach it are
// held (reported in Stats.SchemaHolds) while the rest run on; once the
// registry is back, every record arrives once, in order, none late, none
// dead-lettered but the two bad ones.
func TestSchemadRegistryOutageHolds(t *testing.T) {
	t.Parallel()
	c, r, l := heldLane(t)
	dir := t.TempDir()
	out, dead := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")
	p, done := startLane(t, laneJob(c, r, out, dead, ""))
	deadline := time.Now().Add(time.Minute)
	var seen []signalbox.SchemaHold
	for len(seen) == 0 || r.Refused.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no hold reported within a minute (refused %d lookups)", r.Refused.Load())
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended while the registry was down: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if s := p.Stats().SchemaHolds; len(s) > 0 {
			seen = s
		}
	}
	if s := p.Stats(); s.Dead > 2 || s.LateTotal().Count != 0 {
		t.Fatalf("during the outage: %d dead-lettered, %d late", s.Dead, s.LateTotal().Count)
	}
	h := seen[0]
	if h.Topic != "inv" || h.Records == 0 || !strings.Contains(h.Err, "503") && !strings.Contains(h.Err, "unavailable") {
		t.Fatalf("hold %+v: want an inv partition, records waiting, the registry's error", h)
	}
	r.Down.Store(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkLaneFiles(t, l, out, dead)
	if s := p.Stats(); len(s.SchemaHolds) != 0 || s.LateTotal().Count != 0 {
		t.Fatalf("after the outage: holds %+v, %d late", s.SchemaHolds, s.LateTotal().Count)
	}
}

// TestSchemadLaneSinks: the same lane into PostgreSQL (real server), a
// _bulk endpoint and a Kafka topic. PostgreSQL and bulk receive the decoded
// JSON and the schema id; the Kafka sink forwards the original bytes, which
// franz-go's Confluent serde (registered with hamba/avro and dynamicpb,
// independent of signalbox's decoders) reads back.
func TestSchemadLaneSinks(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("inv", 3), embedded.WithTopic("sales", 2), embedded.WithTopic("out", 1))
	r := formatstest.NewRegistry(t)
	l := produceLane(t, c, r, 500)
	conn, table := pgTable(t)
	bulkURL, bulkDocs := bulkServer(t)
	dir := t.TempDir()
	out, dead := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")
	extra := fmt.Sprintf("  - {type: postgres, dsn_env: EXITPATH_PG_DSN, table: %s}\n  - {type: bulk, url: %q, index: out, doc_id: offset}\n  - {type: kafka, topic: out}\n", table, bulkURL)
	_, done := startLane(t, laneJob(c, r, out, dead, extra))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	seqOf := func(v []byte) int {
		var x struct {
			Seq json.Number `json:"seq"`
		}
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		n, err := strconv.Atoi(strings.Trim(string(x.Seq), `"`))
		if err != nil {
			t.Fatalf("%s: seq %q", v, x.Seq)
		}
		return n
	}
	sameJSON := func(a, b string) bool {
		var x, y any
		return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
	}

	rows, err := conn.Query(context.Background(), "SELECT value::text, schema_id FROM "+table+" ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for rows.Next() {
		var v string
		var id int
		if err := rows.Scan(&v, &id); err != nil {
			t.Fatal(err)
		}
		if s := seqOf([]byte(v)); s != got || !sameJSON(v, l.want[s]) || id != l.schemaOf[s] {
			t.Fatalf("postgres row %d: %s schema_id %d, want %s schema_id %d", got, v, id, l.want[got], l.schemaOf[got])
		}
		got++
	}
	if rows.Err() != nil || got != l.n {
		t.Fatalf("postgres: %d rows (%v), want %d", got, rows.Err(), l.n)
	}

	docs := bulkDocs()
	if len(docs) != l.n {
		t.Fatalf("bulk: %d documents, want %d", len(docs), l.n)
	}
	for id, body := range docs {
		var e struct {
			Value    json.RawMessage `json:"value"`
			SchemaID int             `json:"schema_id"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		if s := seqOf(e.Value); string(e.Value) != l.want[s] || e.SchemaID != l.schemaOf[s] {
			t.Fatalf("bulk document %s: %s", id, body)
		}
	}

	vals, err := c.ReadUpTo(context.Background(), "out", kgo.ReadCommitted())
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != l.n {
		t.Fatalf("kafka sink: %d records, want %d", len(vals), l.n)
	}
	s1, s2, sale := hamba.MustParse(invV1), hamba.MustParse(invV2), formatstest.SaleDescriptor(t)
	var serde sr.Serde
	serde.Register(l.v1, invRec1{}, sr.DecodeFn(func(b []byte, v any) error { return hamba.Unmarshal(s1, b, v) }))
	serde.Register(l.v2, invRec2{}, sr.DecodeFn(func(b []byte, v any) error { return hamba.Unmarshal(s2, b, v) }))
	serde.Register(l.saleID, &dynamicpb.Message{}, sr.Index(formatstest.SaleIndex...),
		sr.GenerateFn(func() any { return dynamicpb.NewMessage(sale) }),
		sr.DecodeFn(func(b []byte, v any) error { return proto.Unmarshal(b, v.(*dynamicpb.Message)) }))
	seen := map[int]bool{}
	for _, v := range vals {
		d, err := serde.DecodeNew(v)
		if err != nil {
			t.Fatalf("the Confluent serde cannot read %x: %v", v, err)
		}
		var seq int
		switch d := d.(type) {
		case *invRec1:
			seq = int(d.Seq)
		case *invRec2:
			seq = int(d.Seq)
		case *dynamicpb.Message:
			seq = int(d.Get(sale.Fields().ByName("seq")).Int())
		default:
			t.Fatalf("decoded %T", d)
		}
		if seen[seq] || !bytes.Equal(v, l.encoded[seq]) {
			t.Fatalf("kafka sink: seq %d twice or not byte for byte the produced value", seq)
		}
		seen[seq] = true
	}
}

// TestSchemadStopWhileHeld: a job stopped while the registry is down stops
// cleanly, and its commits never pass a held record: the restart, with the
// registry back, delivers every record the first run did not, so the two
// runs together have every good record (at least once), and the second has
// them in order, none late.
func TestSchemadStopWhileHeld(t *testing.T) {
	t.Parallel()
	c, r, l := heldLane(t)
	dir := t.TempDir()
	out1, out2, dead := filepath.Join(dir, "out1.jsonl"), filepath.Join(dir, "out2.jsonl"), filepath.Join(dir, "dead.jsonl")
	group := "group: stop-while-held\n"
	p, done, cancel := startLaneCancel(t, group+strings.Replace(laneJob(c, r, out1, dead, ""), "until: end-offsets\n", "", 1))
	waitFor(t, "every inv partition to reach v2 and hold", func() bool { return len(p.Stats().SchemaHolds) >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("stopping while held: %v", err)
	}
	r.Down.Store(false)
	_, done = startLane(t, group+laneJob(c, r, out2, filepath.Join(dir, "dead2.jsonl"), ""))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, f := range []string{out1, out2} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		last := int64(-1)
		for line := range bytes.Lines(b) {
			var e struct {
				TimeMs int64 `json:"event_time_ms"`
				Late   bool  `json:"late"`
			}
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatal(err)
			}
			if e.TimeMs < last || e.Late {
				t.Fatalf("%s: out of order or late at %s", f, line)
			}
			last = e.TimeMs
			seen[e.TimeMs-l.base] = true
		}
	}
	for i := range int64(l.n) {
		if !seen[i] {
			t.Fatalf("seq %d was never delivered: a commit passed a held record", i)
		}
	}
}
