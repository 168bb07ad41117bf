package formats_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	_ "google.golang.org/protobuf/types/known/timestamppb" // registers google/protobuf/timestamp.proto for the producer

	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/formatstest"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/formats/wire"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

const (
	invV1     = formatstest.InvV1
	invV2     = formatstest.InvV2
	saleProto = formatstest.SaleProto
)

// client is a registry client of r that gives up on an outage within
// 20ms.
func client(t *testing.T, r *formatstest.Registry) *registry.Client {
	cl, err := registry.New(registry.Config{URLs: []string{r.URL()},
		Retry: retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, NoJitter: true, MaxElapsed: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func newDecoder(t *testing.T, f formats.Format, r formats.Registry) *formats.Decoder {
	t.Helper()
	d, err := formats.New(formats.Config{Format: f, Registry: r})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type inv struct {
	Sku  string  `avro:"sku"`
	Meta meta    `avro:"meta"`
	Seq  int64   `avro:"seq"`
	Site *string `avro:"site"`
}
type meta struct {
	Ts time.Time `avro:"ts"`
}

func TestAvroSchemaChangeMidTopic(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id1 := r.Register(t, "inventory-value", sr.Schema{Schema: invV1})
	id2 := r.Register(t, "inventory-value", sr.Schema{Schema: invV2})
	d := newDecoder(t, formats.Avro, client(t, r))
	site := "oslo"
	t0 := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	type rec struct {
		payload []byte
		id      int
		json    string
	}
	var topic []rec
	for i := range 6 {
		ts := t0.Add(time.Duration(i) * time.Second)
		v := inv{Sku: "sku-" + string(rune('a'+i)), Meta: meta{Ts: ts}, Seq: int64(i)}
		want := `{"sku":"sku-` + string(rune('a'+i)) + `","meta":{"ts":"` + ts.Format("2006-01-02T15:04:05.000Z") + `"},"seq":` + string(rune('0'+i))
		if i%2 == 0 { // the old writer, still producing
			topic = append(topic, rec{formatstest.AvroRecord(t, invV1, id1, v), id1, want + `}`})
		} else {
			v.Site = &site
			topic = append(topic, rec{formatstest.AvroRecord(t, invV2, id2, v), id2, want + `,"site":"oslo"}`})
		}
	}
	tsPath, _ := value.SplitPath("meta.ts")
	for i, rc := range topic {
		v, err := d.Decode(context.Background(), rc.payload, nil)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if string(v.JSON()) != rc.json || v.SchemaID() != rc.id {
			t.Fatalf("record %d: schema %d %s, want %d %s", i, v.SchemaID(), v.JSON(), rc.id, rc.json)
		}
		f, ok := v.Lookup(tsPath)
		if !ok || f.Kind != value.KindTime || !f.Time.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("record %d: meta.ts = %+v %v", i, f, ok)
		}
	}
}

func TestProtobufAndHeaderFraming(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "sales-value", sr.Schema{Schema: saleProto, Type: sr.TypeProtobuf})
	d := newDecoder(t, formats.Protobuf, client(t, r))

	// The producer builds its descriptor by hand (protodesc), not with the
	// decoder's compiler.
	sale := formatstest.SaleDescriptor(t)
	at := time.Date(2024, 3, 1, 12, 0, 0, 5000000, time.UTC)
	m := dynamicpb.NewMessage(sale)
	m.Set(m.Descriptor().Fields().ByName("sku"), protoreflect.ValueOfString("s1"))
	formatstest.SetTimestamp(m, "at", at)
	m.Set(m.Descriptor().Fields().ByName("seq"), protoreflect.ValueOfInt64(1<<55))
	payload := formatstest.ProtoRecord(t, id, formatstest.SaleIndex, m)
	const want = `{"sku":"s1","at":"2024-03-01T12:00:00.005Z","seq":"36028797018963968"}`
	v, err := d.Decode(context.Background(), payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(v.JSON()) != want || v.SchemaID() != id {
		t.Fatalf("got %d %s", v.SchemaID(), v.JSON())
	}
	atPath, _ := value.SplitPath("at")
	if f, ok := v.Lookup(atPath); !ok || f.Kind != value.KindTime || !f.Time.Equal(at) {
		t.Fatalf("at = %+v %v", f, ok)
	}

	// The same message with its id as a GUID in the header, and no prefix.
	ss, ok := r.GetSchema("sales-value", 1)
	if !ok || ss.GUID == "" {
		t.Fatal("no GUID from srfake")
	}
	guid, _ := hex.DecodeString(strings.ReplaceAll(ss.GUID, "-", ""))
	hdr := append(append([]byte{wire.MagicGUID}, guid...), 2, 2) // message index [1]
	body, _ := proto.Marshal(m)
	v, err = d.Decode(context.Background(), body, []record.Header{{Key: wire.ValueHeader, Value: hdr}})
	if err != nil {
		t.Fatal(err)
	}
	if string(v.JSON()) != want || v.SchemaGUID() != ss.GUID || v.SchemaID() != id {
		t.Fatalf("header framing: %d %q %s", v.SchemaID(), v.SchemaGUID(), v.JSON())
	}
	// A key decoder reads the key header, not the value header.
	kd, _ := formats.New(formats.Config{Format: formats.Protobuf, Registry: client(t, r), Key: true})
	if _, err := kd.Decode(context.Background(), body, []record.Header{{Key: wire.ValueHeader, Value: hdr}}); !errors.Is(err, formats.ErrBadRecord) {
		t.Fatalf("key decoder used the value header: %v", err)
	}
	if v, err := kd.Decode(context.Background(), body, []record.Header{{Key: wire.KeyHeader, Value: hdr}}); err != nil || string(v.JSON()) != want {
		t.Fatalf("key decoder: %v %v", v, err)
	}
}

func TestJSONSchema(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "ev-value", sr.Schema{Schema: `{"type":"object","properties":{"ts":{"type":"integer"}}}`, Type: sr.TypeJSON})
	d := newDecoder(t, formats.JSONSchema, client(t, r))
	payload, _ := sr.Encode(nil, new(sr.ConfluentHeader), id, nil, func(any) ([]byte, error) { return []byte("{\n  \"ts\": 1700000000000,\n  \"k\": \"a\"\n}"), nil })
	v, err := d.Decode(context.Background(), payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(v.JSON()) != `{"ts":1700000000000,"k":"a"}` || v.SchemaID() != id {
		t.Fatalf("got %d %s", v.SchemaID(), v.JSON())
	}
	p, _ := value.SplitPath("ts")
	if f, ok := v.Lookup(p); !ok || f.Kind != value.KindNumber || f.Text != "1700000000000" {
		t.Fatalf("ts = %+v", f)
	}
	p, _ = value.SplitPath("k")
	if f, ok := v.Lookup(p); !ok || f.Kind != value.KindString || f.Text != "a" {
		t.Fatalf("k = %+v", f)
	}
	for _, body := range []string{"{not json", "{\"a\":\"\xff\"}"} {
		bad, _ := sr.Encode(nil, new(sr.ConfluentHeader), id, nil, func(any) ([]byte, error) { return []byte(body), nil })
		if _, err := d.Decode(context.Background(), bad, nil); !errors.Is(err, formats.ErrBadRecord) {
			t.Fatalf("body %q: %v", body, err)
		}
	}
}

func TestErrorsAndOutage(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "inventory-value", sr.Schema{Schema: invV1})
	pid := r.Register(t, "sales-value", sr.Schema{Schema: saleProto, Type: sr.TypeProtobuf})
	d := newDecoder(t, formats.Avro, client(t, r))
	good := formatstest.AvroRecord(t, invV1, id, inv{Sku: "x", Meta: meta{Ts: time.Unix(1, 0)}, Seq: 1})
	ctx := context.Background()

	for name, c := range map[string]struct {
		payload []byte
		reason  string
	}{
		"plain JSON":       {[]byte(`{"sku":"x"}`), "not in the schema registry wire format"},
		"empty":            {[]byte{}, "payload is empty"},
		"unknown id":       {formatstest.AvroRecord(t, invV1, 999, inv{}), "schema id 999"},
		"truncated body":   {good[:len(good)-2], "schema id"},
		"protobuf id":      {append([]byte{0, 0, 0, 0, byte(pid)}, 0, 2), "the input's format is avro"},
		"garbage after id": {append([]byte{0, 0, 0, 0, byte(id)}, 0xff, 0xff, 0xff), "avro:"},
	} {
		_, err := d.DecodeValue(ctx, c.payload, nil)
		if !errors.Is(err, formats.ErrBadRecord) || errors.Is(err, formats.ErrUnavailable) || retry.IsRetryable(err) {
			t.Errorf("%s: err %v is not a bad record", name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: reason %q does not say %q", name, err, c.reason)
		}
	}
	if v, err := d.Decode(ctx, nil, nil); err != nil || string(v.JSON()) != "null" {
		t.Fatalf("tombstone: %v %v", v, err)
	}

	// Outage: a record of a new id is held (unavailable), not bad; after
	// the registry recovers it decodes, and ids already seen never waited.
	id2 := r.Register(t, "inventory-value", sr.Schema{Schema: invV2})
	rec2 := formatstest.AvroRecord(t, invV2, id2, inv{Sku: "y", Meta: meta{Ts: time.Unix(2, 0)}, Seq: 2})
	r.Down.Store(true)
	_, err := d.Decode(ctx, rec2, nil)
	if !errors.Is(err, formats.ErrUnavailable) || errors.Is(err, formats.ErrBadRecord) || !retry.IsRetryable(err) {
		t.Fatalf("during the outage: %v", err)
	}
	if _, err := d.Decode(ctx, good, nil); err != nil {
		t.Fatalf("a cached id during the outage: %v", err)
	}
	r.Down.Store(false)
	v, err := d.Decode(ctx, rec2, nil)
	if err != nil || v.SchemaID() != id2 || !strings.Contains(string(v.JSON()), `"sku":"y"`) {
		t.Fatalf("after recovery: %v %v", v, err)
	}

	if _, err := formats.New(formats.Config{Format: "xml", Registry: client(t, r)}); err == nil || !strings.Contains(err.Error(), "format") {
		t.Fatalf("bad format: %v", err)
	}
	if _, err := formats.New(formats.Config{Format: formats.Avro}); err == nil || !strings.Contains(err.Error(), "registry") {
		t.Fatalf("no registry: %v", err)
	}
}

func TestConcurrentDecode(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "inventory-value", sr.Schema{Schema: invV1})
	d := newDecoder(t, formats.Avro, client(t, r))
	payload := formatstest.AvroRecord(t, invV1, id, inv{Sku: "x", Meta: meta{Ts: time.Unix(1, 0)}, Seq: 1})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				v, err := d.Decode(context.Background(), payload, nil)
				if err != nil || !json.Valid(v.JSON()) {
					t.Error(v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// countingReg counts lookups, to show what a Decoder caches.
type countingReg struct {
	formatstest.MemRegistry
	n int
}

func (c *countingReg) ByID(ctx context.Context, id int) (*registry.Schema, error) {
	c.n++
	return c.MemRegistry.ByID(ctx, id)
}

func TestBrokenSchemaIsABadRecordOnce(t *testing.T) {
	r := &countingReg{MemRegistry: formatstest.MemRegistry{5: {ID: 5, Type: sr.TypeAvro, Text: `{"type":"record","name":"R","fields":[{"name":"a","type":"Nope"}]}`}}}
	d := newDecoder(t, formats.Avro, r)
	for range 3 {
		_, err := d.Decode(context.Background(), []byte{0, 0, 0, 0, 5, 0}, nil)
		var bad *formats.BadRecordError
		if !errors.As(err, &bad) || bad.SchemaID != 5 || !strings.Contains(err.Error(), "schema id 5") {
			t.Fatalf("err = %v", err)
		}
	}
	if r.n != 1 {
		t.Fatalf("a schema that does not compile was fetched %d times, want 1", r.n)
	}
}

func TestCancelledWhileRegistryDown(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "inventory-value", sr.Schema{Schema: invV1})
	cl, err := registry.New(registry.Config{URLs: []string{r.URL()}, Retry: retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxElapsed: -1}})
	if err != nil {
		t.Fatal(err)
	}
	d := newDecoder(t, formats.Avro, cl)
	r.Down.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = d.Decode(ctx, formatstest.AvroRecord(t, invV1, id, inv{Sku: "x"}), nil)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, formats.ErrBadRecord) {
		t.Fatalf("a decode waiting on a down registry ended with %v, want the context's error", err)
	}
	r.Down.Store(false)
	if _, err := d.Decode(context.Background(), formatstest.AvroRecord(t, invV1, id, inv{Sku: "x"}), nil); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
}

func TestAvroReferenceThroughTheRegistry(t *testing.T) {
	r := formatstest.NewRegistry(t)
	addr := `{"type":"record","name":"Address","namespace":"geo","fields":[{"name":"city","type":"string"}]}`
	r.Register(t, "geo.Address", sr.Schema{Schema: addr})
	id := r.Register(t, "users-value", sr.Schema{
		Schema:     `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"home","type":"geo.Address"}]}`,
		References: []sr.SchemaReference{{Name: "geo.Address", Subject: "geo.Address", Version: 1}},
	})
	// The producer writes with the reference inlined: the same binary.
	full := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"home","type":` + addr + `}]}`
	payload := formatstest.AvroRecord(t, full, id, map[string]any{"name": "ann", "home": map[string]any{"city": "Oslo"}})
	v, err := newDecoder(t, formats.Avro, client(t, r)).Decode(context.Background(), payload, nil)
	if err != nil || string(v.JSON()) != `{"name":"ann","home":{"city":"Oslo"}}` {
		t.Fatalf("got %v %v", v, err)
	}
}

func TestProtobufImportThroughTheRegistry(t *testing.T) {
	r := formatstest.NewRegistry(t)
	r.Register(t, "money.proto", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3"; package m; message Money { int64 cents = 1; }`})
	id := r.Register(t, "orders-value", sr.Schema{Type: sr.TypeProtobuf,
		Schema:     `syntax = "proto3"; package o; import "money.proto"; import "google/type/date.proto"; message Order { m.Money total = 1; google.type.Date day = 2; }`,
		References: []sr.SchemaReference{{Name: "money.proto", Subject: "money.proto", Version: 1}},
	})
	// Order{total: {cents: 5}, day: {year: 2024}}
	body := []byte{0x0a, 0x02, 0x08, 0x05, 0x12, 0x03, 0x08, 0xe8, 0x0f}
	v, err := newDecoder(t, formats.Protobuf, client(t, r)).Decode(context.Background(), append([]byte{0, 0, 0, 0, byte(id), 0}, body...), nil)
	if err != nil || string(v.JSON()) != `{"total":{"cents":"5"},"day":{"year":2024,"month":0,"day":0}}` {
		t.Fatalf("got %v %v", v, err)
	}
}

// TestReleasedValuesAreReused: values handed back (ReleaseValue) are
// reused by later decodes, from many goroutines, and the JSON and Fields
// taken from a value before it was handed back stay as they were.
func TestReleasedValuesAreReused(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "inventory-value", sr.Schema{Schema: invV1})
	d := newDecoder(t, formats.Avro, client(t, r))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type kept struct {
				json, sku string
				js        []byte
			}
			var all []kept
			for i := range 200 {
				sku := fmt.Sprintf("sku-%d-%d", g, i)
				payload := formatstest.AvroRecord(t, invV1, id, inv{Sku: sku, Meta: meta{Ts: time.Unix(int64(i), 0)}, Seq: int64(i)})
				decode := d.DecodeValue
				if i%2 == 1 {
					decode = d.CheckValue
				}
				v, err := decode(context.Background(), payload, nil)
				if err != nil {
					t.Error(err)
					return
				}
				f, ok := v.Lookup([]string{"sku"})
				js := v.JSON()
				if !ok || f.Text != sku {
					t.Errorf("sku %+v, want %s", f, sku)
				}
				all = append(all, kept{string(js), f.Text, js})
				d.ReleaseValue(v)
			}
			for _, k := range all {
				if string(k.js) != k.json || !strings.Contains(k.json, `"sku":"`+k.sku+`"`) {
					t.Errorf("JSON %s changed to %s after its value was handed back (sku %s)", k.json, k.js, k.sku)
				}
			}
		}()
	}
	wg.Wait()
	payload := formatstest.AvroRecord(t, invV1, id, inv{Sku: "x", Meta: meta{Ts: time.Unix(1, 0)}, Seq: 1})
	allocs := testing.AllocsPerRun(200, func() {
		v, err := d.DecodeValue(context.Background(), payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		d.ReleaseValue(v)
	})
	if allocs > 1.5 { // the JSON; the race detector's pool drops a quarter of what it is given
		t.Errorf("%.2f allocations per decode and release, want 1 (the JSON)", allocs)
	}
}

// TestJSONSchemaCheck: Check validates a JSON body without compacting it,
// fails where Decode fails with the same error, and its value looks up and
// renders as Decode's (an object found compacted alike).
func TestJSONSchemaCheck(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "ev-value", sr.Schema{Schema: `{"type":"object"}`, Type: sr.TypeJSON})
	d := newDecoder(t, formats.JSONSchema, client(t, r))
	for _, body := range []string{
		"{\n  \"ts\": 1700000000000,\n  \"k\": \"a\\u00e9\",\n  \"o\": { \"x\" : [1, 2,\t3] },\n  \"n\": null, \"b\": true\n}",
		`{"ts":1,"ts":2}`, `[1, {"k": 2}]`, `"s"`, "{not json", "{\"a\":\"\xff\"}", `{"a":1} x`, ``,
	} {
		payload, _ := sr.Encode(nil, new(sr.ConfluentHeader), id, nil, func(any) ([]byte, error) { return []byte(body), nil })
		v, err := d.Decode(context.Background(), payload, nil)
		cv, cerr := d.Check(context.Background(), payload, nil)
		if fmt.Sprint(err) != fmt.Sprint(cerr) {
			t.Fatalf("%q: Decode %v, Check %v", body, err, cerr)
		}
		if err != nil {
			continue
		}
		for _, path := range []string{"ts", "k", "o", "o.x", "n", "b", "missing"} {
			p, _ := value.SplitPath(path)
			got, ok := cv.Lookup(p)
			want, wok := v.Lookup(p)
			if got != want || ok != wok {
				t.Fatalf("%q: Lookup(%s): Check %+v %v, Decode %+v %v", body, path, got, ok, want, wok)
			}
		}
		if !bytes.Equal(cv.JSON(), v.JSON()) {
			t.Fatalf("%q: Check renders %s, Decode %s", body, cv.JSON(), v.JSON())
		}
	}
}

// TestHeaderWinsOverACachedPrefix: a record whose header names a schema is
// read with that schema, the whole payload its body, even when the payload
// also starts like a prefix naming a schema id already compiled.
func TestHeaderWinsOverACachedPrefix(t *testing.T) {
	payload := formatstest.AvroRecord(t, invV1, 1, inv{Sku: "x", Meta: meta{Ts: time.Unix(1, 0)}})
	fixed := fmt.Sprintf(`{"type":"fixed","name":"Whole","size":%d}`, len(payload))
	d := newDecoder(t, formats.Avro, formatstest.MemRegistry{1: {ID: 1, Type: sr.TypeAvro, Text: invV1}, 2: {ID: 2, Type: sr.TypeAvro, Text: fixed}})
	if v, err := d.Check(context.Background(), payload, nil); err != nil || v.SchemaID() != 1 {
		t.Fatalf("prefixed: %v, %v", v, err)
	}
	headers := []record.Header{{Key: wire.ValueHeader, Value: []byte{0, 0, 0, 0, 2}}}
	want, _ := json.Marshal(payload) // a fixed renders as base64
	for name, read := range map[string]func(context.Context, []byte, []record.Header) (*formats.Value, error){"Check": d.Check, "Decode": d.Decode} {
		for range 2 { // the second time with schema 2 compiled too
			v, err := read(context.Background(), payload, headers)
			if err != nil || v.SchemaID() != 2 || string(v.JSON()) != string(want) {
				t.Fatalf("%s with the header: %v, %v", name, v, err)
			}
		}
	}
}

// TestFormatNames: Names lists every format once, the default first (the
// job file's one list, raw included), and a Decoder is made for exactly
// the schema'd ones; fields are read from every format but raw.
func TestFormatNames(t *testing.T) {
	cl, err := registry.New(registry.Config{URLs: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	names := formats.Names()
	if strings.Join(names, ",") != "json,avro,protobuf,json_schema,raw" || names[0] != string(formats.DefaultFormat) {
		t.Fatalf("Names() = %q", names)
	}
	for _, n := range names {
		f := formats.Format(n)
		_, err := formats.New(formats.Config{Format: f, Registry: cl})
		if (err == nil) != f.Schemad() {
			t.Errorf("%s: New: %v, Schemad %v", f, err, f.Schemad())
		}
		if f.HasFields() != (f != formats.Raw) {
			t.Errorf("%s: HasFields %v", f, f.HasFields())
		}
	}
}
