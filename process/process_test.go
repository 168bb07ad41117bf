package process_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
)

func order() *record.Record {
	return &record.Record{
		Topic: "orders", Partition: 3, Offset: 77, Key: []byte("sku-1"),
		Value:     []byte(`{"id":"o1","sku":"sku-1","qty":3,"price":7.5,"status":"ok","tags":["a","b"],"ship":{"city":"Oslo","zip":null},"dup":1,"dup":2}`),
		Headers:   []record.Header{{Key: "source", Value: []byte("web")}, {Key: "trace", Value: []byte{0xff, 0x00}}, {Key: "source", Value: []byte("app")}},
		Timestamp: time.UnixMilli(1700000001000), EventTime: 1700000000123,
	}
}

// TestEval is the expression table over JSON, Avro and Protobuf values:
// each result is exact, and each error names the expression.
func TestEval(t *testing.T) {
	avro, proto := schemadRecords(t)
	late := order()
	late.Late = true
	binKey := order()
	binKey.Key = []byte{0xff, 'k'}
	tomb := order()
	tomb.Value = nil
	notJSON := order()
	notJSON.Value = []byte(`{"id":`)
	timeless := order()
	timeless.Timeless = true
	avroKey := order() // a schema'd key: its bytes are the wire format's, its decoded value a string
	avroKey.Key, avroKey.DecodedKey = []byte{0, 0, 0, 0, 7, 10, 's', 'k', 'u', '-', '9'}, []byte(`"sku-9"`)
	recordKey := order() // a schema'd key whose decoded value is a record
	recordKey.Key, recordKey.DecodedKey = []byte{0, 0, 0, 0, 8, 14}, []byte(`{"id":7}`)
	escapedKey := order() // a schema'd string key with an escape: unquoted
	escapedKey.Key, escapedKey.DecodedKey = []byte{0, 0, 0, 0, 7, 6, 'a', '"', 'b'}, []byte(`"a\"b"`)
	big := order()
	big.Value = []byte(`{"big":"` + strings.Repeat("x", process.MaxValueBytes) + `"}`)
	for _, tc := range []struct {
		name string
		rec  *record.Record
		src  string
		want string // the map's JSON, or "error: <part of the message>"
	}{
		// JSON: numbers are doubles, compared with ints too
		{"multiply", order(), `value.qty * value.price`, `22.5`},
		{"compare int literal", order(), `value.qty > 2`, `true`},
		{"compare double", order(), `value.qty >= 3.5`, `false`},
		{"project", order(), `{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`, `{"id":"o1","sku":"sku-1","total":22.5}`},
		{"rename, sorted keys", order(), `{"z": value.id, "a": value.ship.city}`, `{"a":"Oslo","z":"o1"}`},
		{"nested object passes through", order(), `value.ship`, `{"city":"Oslo","zip":null}`},
		{"list", order(), `value.tags.map(t, t.upperAscii())`, `["A","B"]`},
		{"has default", order(), `has(value.discount) ? value.discount : 0.0`, `0`},
		{"has present", order(), `has(value.ship.city)`, `true`},
		{"null field", order(), `value.ship.zip == null`, `true`},
		{"first member wins", order(), `value.dup`, `1`},
		{"whole value", order(), `value.size()`, `8`},
		{"converted value keeps its members' order", order(), `{"n": value.size(), "v": value, "s": value.ship}`,
			`{"n":8,"s":{"city":"Oslo","zip":null},"v":{"id":"o1","sku":"sku-1","qty":3,"price":7.5,"status":"ok","tags":["a","b"],"ship":{"city":"Oslo","zip":null},"dup":1,"dup":2}}`},
		{"unconverted value keeps its members' order", order(), `{"v": value}`,
			`{"v":{"id":"o1","sku":"sku-1","qty":3,"price":7.5,"status":"ok","tags":["a","b"],"ship":{"city":"Oslo","zip":null},"dup":1,"dup":2}}`},
		{"int stays int", order(), `{"p": partition, "o": offset}`, `{"o":77,"p":3}`},
		{"topic", order(), `topic == "orders"`, `true`},
		{"key", order(), `key`, `"sku-1"`},
		{"schema'd key", avroKey, `key == "sku-9" ? key : "raw"`, `"sku-9"`},
		{"schema'd record key", recordKey, `key`, `"{\"id\":7}"`},
		{"schema'd key's bytes", avroKey, `key_bytes.size()`, `11`},
		{"schema'd key with an escape", escapedKey, `key == "a\"b"`, `true`},
		{"key bytes", binKey, `key_bytes`, `"/2s="`},
		{"header, last wins", order(), `string(headers["source"])`, `"app"`},
		{"binary header", order(), `headers["trace"] == b"\xff\x00"`, `true`},
		{"event time", order(), `event_time`, `"2023-11-14T22:13:20.123Z"`},
		{"format a timestamp", order(), `event_time.getHours("Europe/Oslo")`, `23`},
		{"kafka timestamp", order(), `kafka_timestamp - event_time`, `"0.877s"`},
		{"late", late, `late`, `true`},
		{"not late", order(), `late`, `false`},
		{"tombstone", tomb, `value == null`, `true`},
		{"math ext", order(), `math.greatest(value.qty, value.price)`, `7.5`},
		{"strings ext", order(), `value.sku.split("-")[1]`, `"1"`},
		{"encoders ext", order(), `base64.encode(b"hi")`, `"aGk="`},
		// Avro: the JSON the sinks render (long → number, timestamp → RFC 3339)
		{"avro field", avro, `{"sku": value.sku, "n": value.seq * 2.0}`, `{"n":84,"sku":"sku-1"}`},
		{"avro int compare", avro, `value.seq > 41`, `true`},
		{"avro optional", avro, `has(value.site) && value.site == "oslo"`, `true`},
		{"avro timestamp", avro, `timestamp(value.meta.ts) > timestamp("2023-01-01T00:00:00Z")`, `true`},
		// Protobuf: proto3 JSON (int64 → string)
		{"proto string int64", proto, `int(value.seq) + 1`, `2000`},
		{"proto field", proto, `value.sku`, `"sku-000123"`},
		// errors never become results
		{"missing key", order(), `value.nope`, `error: no such key: nope`},
		{"type mismatch", order(), `value.status * 2.0`, `error: no such overload`},
		{"division by zero", order(), `1 / (partition - 3)`, `error: division by zero`},
		{"proto int64 is a string", proto, `value.seq > 3`, `error: no such overload`},
		{"value not JSON", notJSON, `value.id`, `error: value is not JSON`},
		{"key not UTF-8", binKey, `key`, `error: key is not valid UTF-8`},
		{"timeless event time", timeless, `event_time`, `error: event_time: the record's input has time: none`},
		{"infinity", order(), `value.qty / 0.0`, `error: +Inf is not a JSON number`},
		{"non-string key", order(), `{1: "a"}`, `error: keys are strings`},
		{"too large", big, `{"b": value.big}`, `error: more than 4194304`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := process.Compile("process.map", tc.src, process.Map)
			if err != nil {
				t.Fatal(err)
			}
			before := *tc.rec
			got, err := x.Apply(nil, tc.rec)
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				var pe *process.Error
				if !errors.As(err, &pe) || pe.Expr != "process.map" || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %s, %v; want an error naming process.map with %q", got, err, want)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
			if again, _ := x.Apply(nil, tc.rec); string(again) != string(got) {
				t.Fatalf("not deterministic: %s then %s", got, again)
			}
			if string(before.Value) != string(tc.rec.Value) || before.DecodedValue == nil != (tc.rec.DecodedValue == nil) {
				t.Fatal("Apply changed the record")
			}
		})
	}
}

// TestStepsFilterThenMap: a filter drops, a map replaces the value with
// plain JSON (a schema'd value's rendering and id cleared), and a where
// reads the mapped value; an error leaves the record unchanged.
func TestStepsFilterThenMap(t *testing.T) {
	filter, _ := process.Compile("process.filter", `value.status != "test"`, process.Filter)
	mapx, _ := process.Compile("process.map", `{"total": value.qty * value.price}`, process.Map)
	where, _ := process.Compile("sinks[1].where", `value.total >= 20.0`, process.Where)
	s := process.Steps{Filter: filter, Map: mapx}
	r := order()
	if keep, err := s.Run(r); !keep || err != nil || string(r.Value) != `{"total":22.5}` || !r.ValueJSON {
		t.Fatalf("keep %v, err %v, value %s", keep, err, r.Value)
	}
	if ok, err := where.Bool(r); !ok || err != nil {
		t.Fatalf("where on the mapped value: %v %v", ok, err)
	}
	test := order()
	test.Value = []byte(`{"status":"test","qty":1,"price":1}`)
	if keep, err := s.Run(test); keep || err != nil {
		t.Fatalf("a test record: keep %v, err %v", keep, err)
	}
	bad := order()
	bad.Value = []byte(`{"status":"ok","qty":"3","price":1}`)
	orig := string(bad.Value)
	if keep, err := s.Run(bad); keep || err == nil || !strings.Contains(err.Error(), "process.map") || string(bad.Value) != orig {
		t.Fatalf("qty a string: keep %v, err %v, value %s", keep, err, bad.Value)
	}
	avro, _ := schemadRecords(t)
	m2, _ := process.Compile("process.map", `{"sku": value.sku}`, process.Map)
	if keep, err := (process.Steps{Map: m2}).Run(avro); !keep || err != nil || string(avro.Value) != `{"sku":"sku-1"}` || avro.DecodedValue != nil || avro.ValueSchemaID != 0 {
		t.Fatalf("avro mapped: %v %v %s %s %d", keep, err, avro.Value, avro.DecodedValue, avro.ValueSchemaID)
	}
}

// TestCompileRefuses: compile errors carry the name, line and column.
func TestCompileRefuses(t *testing.T) {
	for _, tc := range []struct {
		src  string
		kind process.Kind
		want string
	}{
		{`value.qty >`, process.Filter, `f: line 1, column 12: Syntax error`},
		{"value.a &&\n  vlue.b", process.Filter, `f: line 2, column 3: undeclared reference to 'vlue'`},
		{`now()`, process.Map, `undeclared reference to 'now'`},
		{`1 + 2`, process.Filter, `a filter must be a bool, not int`},
		{`"s"`, process.Where, `a where must be a bool, not string`},
		{`value.l.map(a, value.l.map(b, value.l.map(c, c)))`, process.Map, `its cost cannot be bounded`},
		{` `, process.Map, `empty expression`},
	} {
		_, err := process.Compile("f", tc.src, tc.kind)
		var ce *process.CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a CompileError with %q", tc.src, err, tc.want)
		}
	}
	if _, err := process.Compile("f", `value.active`, process.Filter); err != nil {
		t.Errorf("a dyn filter is checked when it runs: %v", err)
	}
	x, _ := process.Compile("f", `value.active`, process.Filter)
	if _, err := x.Bool(&record.Record{Value: []byte(`{"active":"yes"}`)}); err == nil || !strings.Contains(err.Error(), `f: result string "yes" is not a bool`) {
		t.Errorf("a filter that is not a bool at run time: %v", err)
	}
	if _, err := x.Bool(&record.Record{Value: []byte(`{"active":{}}`)}); err == nil || !strings.Contains(err.Error(), `f: result map {} is not a bool`) {
		t.Errorf("a filter whose result is an object: %v", err)
	}
}
