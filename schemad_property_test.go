package signalbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/formatstest"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers/durable"
)

// flakyRegistry answers like the registry it wraps, except that its first
// fail lookups say the registry is unavailable.
type flakyRegistry struct {
	formats.Registry
	fail atomic.Int64
}

func (f *flakyRegistry) ByID(ctx context.Context, id int) (*registry.Schema, error) {
	if f.fail.Add(-1) >= 0 {
		return nil, &registry.UnavailableError{What: fmt.Sprint("schema ", id), Err: retry.Retryable(errors.New("503"))}
	}
	return f.Registry.ByID(ctx, id)
}

// avroSet draws partitions over two topics of Avro records (writer schema
// v1 or v2 at random, so ids change anywhere in a partition) whose event
// times rise with bounded disorder, and returns them with the records as
// the sinks must receive them: decoded JSON written independently of the
// decoder, and the schema id.
func avroSet(t *testing.T, seed uint64, v1, v2 int) ([]script.Partition, []record.Record) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var parts []script.Partition
	var all []record.Record
	for _, topic := range []string{"inv", "stock"} {
		for p := range int32(1 + rng.IntN(3)) {
			sp := script.Partition{TopicPartition: tp(topic, p)}
			off := rng.Int64N(50)
			for i := range rng.IntN(50) {
				ts := time.UnixMilli(1_700_000_000_000 + int64(i/2)*10 + 10*rng.Int64N(4)).UTC()
				key, sku := fmt.Sprintf("k%d", rng.IntN(4)), fmt.Sprintf("s%d", rng.IntN(9))
				tsText := ts.Format("2006-01-02T15:04:05.000Z")
				var v []byte
				r := record.Record{Topic: topic, Partition: p, Offset: off, Key: []byte(key), EventTime: ts.UnixMilli(), OrderKey: key}
				if rng.IntN(2) == 0 {
					v = formatstest.AvroRecord(t, invV1, v1, invRec1{Sku: sku, Meta: invMeta{ts}, Seq: off})
					r.DecodedValue, r.ValueSchemaID = fmt.Appendf(nil, `{"sku":%q,"meta":{"ts":%q},"seq":%d}`, sku, tsText, off), int32(v1)
				} else {
					v = formatstest.AvroRecord(t, invV2, v2, invRec2{Sku: sku, Meta: invMeta{ts}, Seq: off})
					r.DecodedValue, r.ValueSchemaID = fmt.Appendf(nil, `{"sku":%q,"meta":{"ts":%q},"seq":%d,"site":null}`, sku, tsText, off), int32(v2)
				}
				r.Value = v
				raw := r
				raw.DecodedValue, raw.ValueSchemaID, raw.EventTime, raw.OrderKey = nil, 0, 0, ""
				sp.Records = append(sp.Records, raw)
				all = append(all, r)
				off += 1 + rng.Int64N(2)
			}
			if len(sp.Records) == 0 {
				sp.Start, sp.End = off, off
			}
			parts = append(parts, sp)
		}
	}
	return parts, all
}

// TestSchemadInterleavingsGiveIdenticalOutput: Avro records delivered under
// many interleavings and fetch sizes, with the registry unavailable for a
// random number of first lookups (holding whichever partitions meet them),
// give byte-identical JSONL output: the decoded records sorted by the total
// order; none late, none dead-lettered.
func TestSchemadInterleavingsGiveIdenticalOutput(t *testing.T) {
	t.Parallel()
	r := formatstest.NewRegistry(t)
	v1 := r.Register(t, "inv-value", sr.Schema{Schema: invV1})
	v2 := r.Register(t, "inv-value", sr.Schema{Schema: invV2})
	cl, err := registry.New(registry.Config{URLs: []string{r.URL()}, Retry: retry.Policy{MaxElapsed: time.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	for dataSeed := range uint64(4) {
		parts, all := avroSet(t, dataSeed, v1, v2)
		expected := want(t, all)
		for seed := range uint64(6) {
			flaky := &flakyRegistry{Registry: cl}
			flaky.fail.Store(int64(seed % 3))
			dec, err := formats.New(formats.Config{Format: formats.Avro, Registry: flaky})
			if err != nil {
				t.Fatal(err)
			}
			var in []signalbox.Input
			for _, topic := range []string{"inv", "stock"} {
				in = append(in, signalbox.Input{Topic: topic, Time: signalbox.TimeFromField, TimeField: "meta.ts", Decoder: dec})
			}
			p, buf := runInterleaving(t, parts, dataSeed, seed, signalbox.WithInputs(in...))
			if s := p.Stats(); s.LateTotal().Count != 0 || s.Dead != 0 {
				t.Fatalf("data %d, interleaving %d: %d late, %d dead-lettered; want none", dataSeed, seed, s.LateTotal().Count, s.Dead)
			}
			if flaky.fail.Load() > 0 {
				t.Fatalf("data %d, interleaving %d: the registry's outage was never met", dataSeed, seed)
			}
			if !bytes.Equal(buf.Bytes(), expected) {
				t.Fatalf("data %d, interleaving %d: output differs from the decoded records sorted by the total order\n%s",
					dataSeed, seed, firstDiff(buf.Bytes(), expected))
			}
		}
	}
}

// TestSchemadKeys: with a key decoder the ordering key is the decoded key's
// text, not its wire bytes (Avro writes "zz" before "aaa": the length
// comes first), and the JSONL sink writes the decoded key and its schema id.
func TestSchemadKeys(t *testing.T) {
	r := formatstest.NewRegistry(t)
	v1 := r.Register(t, "inv-value", sr.Schema{Schema: invV1})
	kid := r.Register(t, "inv-key", sr.Schema{Schema: `"string"`})
	cl, err := registry.New(registry.Config{URLs: []string{r.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	vdec, _ := formats.New(formats.Config{Format: formats.Avro, Registry: cl})
	kdec, _ := formats.New(formats.Config{Format: formats.Avro, Registry: cl, Key: true})
	ts := time.UnixMilli(1_700_000_000_000).UTC()
	var recs []record.Record
	for i, k := range []string{"zz", "aaa"} {
		key := formatstest.AvroRecord(t, `"string"`, kid, k)
		val := formatstest.AvroRecord(t, invV1, v1, invRec1{Sku: k, Meta: invMeta{ts}, Seq: int64(i)})
		recs = append(recs, record.Record{Topic: "inv", Offset: int64(i), Key: key, Value: val})
	}
	var buf bytes.Buffer
	p, err := signalbox.New(script.New(1, 2, script.Partition{TopicPartition: tp("inv", 0), Records: recs}),
		signalbox.WithInputs(signalbox.Input{Topic: "inv", Time: signalbox.TimeFromField, TimeField: "meta.ts", Decoder: vdec, KeyDecoder: kdec}),
		signalbox.WithClock(frozen), signalbox.WithMaxFuture(0), signalbox.WithUntil(signalbox.UntilEndOffsets),
		signalbox.WithDelay(time.Second), signalbox.WithSink(jsonl.New(&buf, jsonl.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 || !bytes.Contains(lines[0], []byte(`"key":"aaa"`)) || !bytes.Contains(lines[1], []byte(`"key":"zz"`)) ||
		!bytes.Contains(lines[0], []byte(fmt.Sprintf(`"schema_id":%d,"key_schema_id":%d`, v1, kid))) {
		t.Fatalf("want aaa then zz, decoded, with both schema ids:\n%s", buf.Bytes())
	}
}

// bytesSink keeps what it is written; bytesOnly is what it says in its
// description (signalbox.SinkInfo.BytesOnly).
type bytesSink struct {
	bytesOnly bool
	got       []record.Record
}

func (s *bytesSink) Open(context.Context) error { return nil }
func (s *bytesSink) Write(_ context.Context, b []record.Record) error {
	s.got = append(s.got, b...)
	return nil
}
func (s *bytesSink) Flush(context.Context) error { return nil }
func (s *bytesSink) Close() error                { return nil }
func (s *bytesSink) Info() signalbox.SinkInfo {
	return signalbox.SinkInfo{Name: "bytes", BytesOnly: s.bytesOnly}
}

// TestSchemadBytesOnlySinks: a schema'd record is decoded once. When every
// sink writes original bytes only (SinkInfo.BytesOnly, as the Kafka sink)
// it is only checked at ingest (ValueChecker), never rendered; when one
// sink wants JSON, it is decoded and rendered at ingest, once, and every
// sink gets that JSON; with a Transform (which may change the value after
// ingest) it is checked at ingest and rendered at release.
func TestSchemadBytesOnlySinks(t *testing.T) {
	r := formatstest.NewRegistry(t)
	v1 := r.Register(t, "inv-value", sr.Schema{Schema: invV1})
	cl, err := registry.New(registry.Config{URLs: []string{r.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := formats.New(formats.Config{Format: formats.Avro, Registry: cl})
	val := formatstest.AvroRecord(t, invV1, v1, invRec1{Sku: "a", Meta: invMeta{time.UnixMilli(1_700_000_000_000)}})
	for _, tc := range []struct {
		sinks     []*bytesSink
		transform bool
		decoded   bool
		checks    int64 // CheckValue calls (at ingest)
		decodes   int64 // DecodeValue calls (at ingest, or at release after a check)
	}{
		{[]*bytesSink{{bytesOnly: true}}, false, false, 1, 0},
		{[]*bytesSink{{bytesOnly: true}, {bytesOnly: true}}, false, false, 1, 0},
		{[]*bytesSink{{bytesOnly: true}}, true, false, 1, 0},
		{[]*bytesSink{{bytesOnly: true}, {}}, false, true, 0, 1},
		{[]*bytesSink{{}}, false, true, 0, 1},
		{[]*bytesSink{{}}, true, true, 1, 1},
	} {
		counted := &countingDecoder{Decoder: dec}
		opts := []signalbox.Option{
			signalbox.WithInputs(signalbox.Input{Topic: "inv", Time: signalbox.TimeFromField, TimeField: "meta.ts", Decoder: counted}),
			signalbox.WithClock(frozen), signalbox.WithMaxFuture(0), signalbox.WithUntil(signalbox.UntilEndOffsets)}
		for _, s := range tc.sinks {
			opts = append(opts, signalbox.WithSink(s))
		}
		if tc.transform {
			opts = append(opts, signalbox.WithTransform(func(*record.Record) error { return nil }))
		}
		p, err := signalbox.New(script.New(1, 1, script.Partition{TopicPartition: tp("inv", 0),
			Records: []record.Record{{Topic: "inv", Value: val}}}), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
		for i, s := range tc.sinks {
			if len(s.got) != 1 || !bytes.Equal(s.got[0].Value, val) || (s.got[0].DecodedValue != nil) != tc.decoded {
				t.Fatalf("sinks %+v: sink %d got %d records, decoded %q; want the original bytes, decoded %v", tc.sinks, i, len(s.got), s.got[0].DecodedValue, tc.decoded)
			}
		}
		if got := s0(counted); counted.checks.Load() != tc.checks || counted.decodes.Load() != tc.decodes || counted.releases.Load() != tc.checks+tc.decodes {
			t.Fatalf("sinks %+v, transform %v: %s, want %d checks and %d decodes", tc.sinks, tc.transform, got, tc.checks, tc.decodes)
		}
		if tc.decoded && string(tc.sinks[len(tc.sinks)-1].got[0].DecodedValue) != `{"sku":"a","meta":{"ts":"2023-11-14T22:13:20.000Z"},"seq":0}` {
			t.Fatalf("sinks %+v, transform %v: rendered %s", tc.sinks, tc.transform, tc.sinks[len(tc.sinks)-1].got[0].DecodedValue)
		}
	}
}

func s0(c *countingDecoder) string {
	return fmt.Sprintf("%d checks and %d decodes, %d values handed back", c.checks.Load(), c.decodes.Load(), c.releases.Load())
}

// countingDecoder counts the calls to its decoder's CheckValue,
// DecodeValue and ReleaseValue.
type countingDecoder struct {
	*formats.Decoder
	checks, decodes, releases atomic.Int64
}

func (c *countingDecoder) ReleaseValue(v value.Decoded) {
	c.releases.Add(1)
	c.Decoder.ReleaseValue(v)
}

var _ signalbox.ValueChecker = (*formats.Decoder)(nil)

func (c *countingDecoder) CheckValue(ctx context.Context, payload []byte, headers []record.Header) (value.Decoded, error) {
	c.checks.Add(1)
	return c.Decoder.CheckValue(ctx, payload, headers)
}

func (c *countingDecoder) DecodeValue(ctx context.Context, payload []byte, headers []record.Header) (value.Decoded, error) {
	c.decodes.Add(1)
	return c.Decoder.DecodeValue(ctx, payload, headers)
}

// scriptedDecoder decodes a payload as JSON with its "ts" field, except
// that calls listed in answers (by 1-based call number) fail with that
// error.
type scriptedDecoder struct {
	calls   atomic.Int64
	answers map[int64]error
}

type jsonDecoded struct{ json []byte }

func (j jsonDecoded) JSON() []byte  { return j.json }
func (j jsonDecoded) SchemaID() int { return 5 }
func (j jsonDecoded) Lookup(path []string) (value.Field, bool) {
	if len(path) == 1 && path[0] == "ts" {
		return value.Field{Kind: value.KindNumber, Text: "1700000000000"}, true
	}
	return value.Field{}, false
}

func (d *scriptedDecoder) DecodeValue(_ context.Context, payload []byte, _ []record.Header) (value.Decoded, error) {
	if err := d.answers[d.calls.Add(1)]; err != nil {
		return nil, err
	}
	return jsonDecoded{payload}, nil
}

// TestSchemadRenderAtRelease: with a Transform, which may change the value
// after ingest, the decode for the sinks happens at release; it waits out
// a decoder that cannot answer, with backoff, and then delivers the record
// decoded; a record that no longer decodes there is dead-lettered with the
// reason, its original bytes kept. Without a Transform the record's JSON is
// the one decoded at ingest: the decoder is called once, and a failure it
// would give later changes nothing.
func TestSchemadRenderAtRelease(t *testing.T) {
	unavailable := retry.Retryable(errors.New("registry down"))
	for _, tc := range []struct {
		name      string
		answers   map[int64]error
		transform bool
		dead      bool
		calls     int64
	}{
		{"unavailable twice at release", map[int64]error{2: unavailable, 3: unavailable}, true, false, 4},
		{"bad at release", map[int64]error{2: errors.New("schema id 5: gone")}, true, true, 2},
		{"rendered at ingest", map[int64]error{2: errors.New("schema id 5: gone")}, false, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := &scriptedDecoder{answers: tc.answers}
			out, dl := &bytesSink{}, &bytesSink{}
			core, logs := observer.New(zapcore.WarnLevel)
			opts := []signalbox.Option{
				signalbox.WithInputs(signalbox.Input{Topic: "in", Time: signalbox.TimeFromField, TimeField: "ts", Decoder: dec}),
				signalbox.WithClock(frozen), signalbox.WithMaxFuture(0), signalbox.WithUntil(signalbox.UntilEndOffsets),
				signalbox.WithSink(out), signalbox.WithDeadLetter(dl), signalbox.WithLogger(zap.New(core))}
			if tc.transform {
				opts = append(opts, signalbox.WithTransform(func(*record.Record) error { return nil }))
			}
			p, err := signalbox.New(script.New(1, 1, script.Partition{TopicPartition: tp("in", 0),
				Records: []record.Record{{Topic: "in", Value: []byte(`{"ts":1700000000000}`)}}}), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := runBounded(t, p); err != nil {
				t.Fatal(err)
			}
			got := out
			if tc.dead {
				got = dl
			}
			if len(out.got)+len(dl.got) != 1 || len(got.got) != 1 {
				t.Fatalf("%d out, %d dead-lettered; want the record %s", len(out.got), len(dl.got), map[bool]string{true: "dead-lettered", false: "out"}[tc.dead])
			}
			r := got.got[0]
			switch {
			case !tc.dead && (string(r.DecodedValue) != `{"ts":1700000000000}` || r.ValueSchemaID != 5):
				t.Fatalf("released %q schema %d", r.DecodedValue, r.ValueSchemaID)
			case tc.dead && (r.DecodedValue != nil || string(r.Value) != `{"ts":1700000000000}` || !hasReason(r, "schema id 5: gone")):
				t.Fatalf("dead letter %+v", r)
			}
			if waited, want := logs.FilterMessageSnippet("release waits").Len() > 0, tc.transform && !tc.dead; waited != want {
				t.Fatalf("logged a wait at release: %v, want %v (the engine waits on the decoder only while it cannot answer): %v", waited, want, logs.All())
			}
			if n := dec.calls.Load(); n != tc.calls {
				t.Fatalf("decoder called %d times, want %d", n, tc.calls)
			}
		})
	}
}

func hasReason(r record.Record, reason string) bool {
	for _, h := range r.Headers {
		if h.Key == record.ReasonHeader && string(h.Value) == reason {
			return true
		}
	}
	return false
}

// downDecoder decodes {"ts":N} payloads, and says it cannot answer (a
// registry down) for the payloads that contain "held" while down is set.
type downDecoder struct{ down atomic.Bool }

type tsDecoded struct{ json []byte }

func (d tsDecoded) JSON() []byte  { return d.json }
func (d tsDecoded) SchemaID() int { return 5 }
func (d tsDecoded) Lookup(path []string) (value.Field, bool) {
	var v struct{ Ts json.Number }
	if len(path) != 1 || path[0] != "ts" || json.Unmarshal(d.json, &v) != nil || v.Ts == "" {
		return value.Field{}, false
	}
	return value.Field{Kind: value.KindNumber, Text: v.Ts.String()}, true
}

func (d *downDecoder) DecodeValue(_ context.Context, payload []byte, _ []record.Header) (value.Decoded, error) {
	if d.down.Load() && bytes.Contains(payload, []byte("held")) {
		return nil, retry.Retryable(errors.New("registry down"))
	}
	return tsDecoded{payload}, nil
}

// TestSchemadRevokeWhileHeld: a partition revoked while its records are
// held commits no offset past the held record, and the partition assigned
// again delivers the held records and the rest once each, in order, none
// late or dead-lettered. (The partition holds the watermark below its
// newest record, 1@2000, which is still parked at the revoke: the commit
// is its offset.)
func TestSchemadRevokeWhileHeld(t *testing.T) {
	a := tp("in", 0)
	rec := func(off, ts int64, extra string) record.Record {
		return record.Record{Topic: "in", Offset: off, Key: []byte("k"), Value: fmt.Appendf(nil, `{"ts":%d%s}`, ts, extra)}
	}
	dec := &downDecoder{}
	dec.down.Store(true)
	src := &committingTimeline{commitLog: newCommitLog()}
	src.fetches = []record.Fetch{
		{Assigned: []record.PartitionInfo{{TopicPartition: a, End: 10}}},
		fetched(a, 4, 10, rec(0, 1000, ""), rec(1, 2000, ""), rec(2, 3000, `,"held":1`), rec(3, 4000, "")),
		{Revoked: []record.TopicPartition{a}, Assigned: []record.PartitionInfo{{TopicPartition: a, Start: 1, End: 4}}},
		fetched(a, 4, 4, rec(1, 2000, ""), rec(2, 3000, `,"held":1`), rec(3, 4000, "")),
	}
	var atRevoke int64 = -1
	out, dl := &collect{}, &collect{}
	p, err := signalbox.New(src,
		signalbox.WithInputs(signalbox.Input{Topic: "in", Time: signalbox.TimeFromField, TimeField: "ts", Decoder: dec}),
		signalbox.WithDelay(0), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0), signalbox.WithUntil(signalbox.UntilEndOffsets),
		signalbox.WithSink(out), signalbox.WithDeadLetter(dl), signalbox.WithObserver(func(e signalbox.Event) {
			if e.Kind == signalbox.EventRevoked {
				src.mu.Lock()
				if off, ok := src.committed[a]; ok {
					atRevoke = off
				}
				src.mu.Unlock()
				dec.down.Store(false) // the registry is back for the next owner
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	if atRevoke != 1 {
		t.Errorf("committed %d at the revoke, want 1: the parked record's offset (not past it nor the held record, and past what was emitted)", atRevoke)
	}
	if got, want := out.lines(), []string{"in/0@0 t=1000", "in/0@1 t=2000", "in/0@2 t=3000", "in/0@3 t=4000"}; !slices.Equal(got, want) {
		t.Errorf("out %q, want %q: each record once, in order, none late", got, want)
	}
	if got := dl.lines(); len(got) != 0 {
		t.Errorf("dead-lettered %q, want none", got)
	}
}

// TestSchemadSpilledRecordsRenderAtRelease: records rendered at ingest
// lose their JSON when the durable store spills them (it keeps the wire
// bytes only); they are rendered again at release, so the output is the
// same as with everything in memory.
func TestSchemadSpilledRecordsRenderAtRelease(t *testing.T) {
	r := formatstest.NewRegistry(t)
	v1 := r.Register(t, "inv-value", sr.Schema{Schema: invV1})
	v2 := r.Register(t, "inv-value", sr.Schema{Schema: invV2})
	cl, err := registry.New(registry.Config{URLs: []string{r.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	for dataSeed := range uint64(3) {
		parts, all := avroSet(t, dataSeed, v1, v2)
		expected := want(t, all)
		counted := &countingDecoder{Decoder: func() *formats.Decoder {
			d, err := formats.New(formats.Config{Format: formats.Avro, Registry: cl})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}()}
		store, err := durable.OpenStore(t.TempDir(), durable.StoreOptions{MemoryBudget: 2 << 10})
		if err != nil {
			t.Fatal(err)
		}
		var in []signalbox.Input
		for _, topic := range []string{"inv", "stock"} {
			in = append(in, signalbox.Input{Topic: topic, Time: signalbox.TimeFromField, TimeField: "meta.ts", Decoder: counted})
		}
		var buf bytes.Buffer
		p, err := signalbox.New(script.New(dataSeed, 64, parts...), signalbox.WithInputs(in...),
			signalbox.WithDelay(disorder*time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
			signalbox.WithParkedStore(store), signalbox.WithSink(jsonl.New(&buf, jsonl.Options{})),
			signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
		store.Close()
		if !bytes.Equal(buf.Bytes(), expected) {
			t.Fatalf("data %d: output differs from the decoded records sorted by the total order\n%s", dataSeed, firstDiff(buf.Bytes(), expected))
		}
		if counted.checks.Load() != 0 || counted.decodes.Load() <= int64(len(all)) {
			t.Fatalf("data %d: %d records, %s: want each decoded at ingest and the spilled ones again at release", dataSeed, len(all), s0(counted))
		}
	}
}
