package signalbox

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/signalbox/signalbox/record"
)

func TestDecodeTimeSources(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123)
	cases := []struct {
		in      Input
		rec     record.Record
		want    int64
		wantKey string
		wantErr bool
	}{
		{in: Input{Topic: "t"}, rec: record.Record{Key: []byte("k"), Timestamp: ts}, want: ts.UnixMilli(), wantKey: "k"},
		{in: Input{Topic: "t"}, rec: record.Record{}, wantErr: true},
		{in: Input{Topic: "t", Time: TimeFromField, TimeField: "m.ts"}, rec: record.Record{Value: []byte(`{"m":{"ts":1500}}`)}, want: 1500},
		{in: Input{Topic: "t", Time: TimeFromField, TimeField: "ts", TimeFormat: FormatUnixS}, rec: record.Record{Value: []byte(`{"ts":1.5}`)}, want: 1500},
		{in: Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}, rec: record.Record{Value: []byte(`{"ts":"2026-11-30T05:13:24.5Z"}`)}, want: time.Date(2026, 11, 30, 5, 13, 24, 5e8, time.UTC).UnixMilli()},
		{in: Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}, rec: record.Record{Value: []byte(`{"ts":"1500"}`)}, want: 1500},
		{in: Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}, rec: record.Record{Value: []byte(`{"ts":"yesterday"}`)}, wantErr: true},
		{in: Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}, rec: record.Record{Value: []byte(`not json`)}, wantErr: true},
		{in: Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}, rec: record.Record{Value: []byte(`{"other":1}`)}, wantErr: true},
		{in: Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}, rec: record.Record{Value: []byte(`{"ts":true}`)}, wantErr: true},
		{in: Input{Topic: "t", Time: TimeFromHeader, TimeField: "et", TimeFormat: FormatUnixUs}, rec: record.Record{Headers: []record.Header{{Key: "et", Value: []byte("2000000")}}}, want: 2000},
		{in: Input{Topic: "t", Time: TimeFromHeader, TimeField: "et"}, rec: record.Record{}, wantErr: true},
		{in: Input{Topic: "t", Key: KeyFromField, KeyField: "id", Time: TimeNone}, rec: record.Record{Value: []byte(`{"id":"a\u00e9"}`)}, wantKey: "aé"},
		{in: Input{Topic: "t", Key: KeyFromField, KeyField: "id", Time: TimeNone}, rec: record.Record{Value: []byte(`{"id":42}`)}, wantKey: "42"},
		{in: Input{Topic: "t", Key: KeyFromField, KeyField: "id", Time: TimeNone}, rec: record.Record{Value: []byte(`{}`)}, wantErr: true},
	}
	for i, c := range cases {
		r, err := decodeCase(t, c.in, c.rec)
		if (err != nil) != c.wantErr {
			t.Errorf("case %d: err = %v, want error %v", i, err, c.wantErr)
			continue
		}
		if err == nil && (r.EventTime != c.want || r.OrderKey != c.wantKey) {
			t.Errorf("case %d: got (%d, %q), want (%d, %q)", i, r.EventTime, r.OrderKey, c.want, c.wantKey)
		}
	}
}

// TestDecodeMarksValidJSON: finding a JSON field validates the whole value
// on the way; a valid one-line value is marked record.Record.ValueJSON so
// that a sink does not validate it again, and an invalid value still
// decodes as far as its field (jsonfield.Get) without the mark.
func TestDecodeMarksValidJSON(t *testing.T) {
	field := Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}
	for _, c := range []struct {
		name  string
		in    Input
		value string
		mark  bool
		ms    int64 // 0: no event time expected
	}{
		{"valid", field, `{"ts":1500,"v":"é"}`, true, 1500},
		{"multi-line", field, "{\"ts\":1500,\n\"v\":1}", false, 1500},
		{"broken after the field", field, `{"ts":1500,"v":`, false, 1500},
		{"bad UTF-8 after the field", field, "{\"ts\":1500,\"v\":\"\xff\"}", false, 1500},
		{"timestamp time: not scanned", Input{Topic: "t"}, `{"ts":1500}`, false, 0},
		{"key field with timestamp time", Input{Topic: "t", Key: KeyFromField, KeyField: "id"}, `{"id":"a","x":[1]}`, true, 0},
	} {
		r, err := decodeCase(t, c.in, record.Record{Value: []byte(c.value), Timestamp: time.UnixMilli(1)})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.ValueJSON != c.mark || c.ms != 0 && r.EventTime != c.ms {
			t.Errorf("%s: ValueJSON %v, event time %d; want %v, %d", c.name, r.ValueJSON, r.EventTime, c.mark, c.ms)
		}
	}
}

// FuzzDecode feeds arbitrary payloads to the JSONL decoding path: it must
// never panic, and whenever encoding/json reads "ts" as an integer and "id"
// as a string, the decoder must agree.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"ts":9223372036854775807,"id":"a"}`, `{"ts":1,"id":"a"}`, `{"id":"x","ts":"2026-01-01T00:00:00Z"}`, `{"ts":-5,"id":"\"q\""}`, `[1,2]`, `{"ts":1e3,"id":"b"}`, `{`, ``} {
		f.Add([]byte(s))
	}
	d, err := compileInput(Input{Topic: "t", Time: TimeFromField, TimeField: "ts", Key: KeyFromField, KeyField: "id"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		r := record.Record{Value: value}
		derr := d.Decode(context.Background(), &r)
		if r.ValueJSON && !(json.Valid(value) && utf8.Valid(value) && !bytes.ContainsAny(value, "\r\n")) {
			t.Fatalf("decode(%q) marked the value as one line of valid JSON", value)
		}
		var doc struct {
			TS *json.Number `json:"ts"`
			ID *string      `json:"id"`
		}
		dec := json.NewDecoder(bytes.NewReader(value))
		dec.UseNumber()
		if dec.Decode(&doc) != nil || dec.More() || doc.TS == nil || doc.ID == nil || bytes.Count(value, []byte(`"ts"`)) != 1 || bytes.Count(value, []byte(`"id"`)) != 1 {
			return
		}
		n, err := doc.TS.Int64()
		if err != nil || bytes.ContainsAny(value, "\\") {
			return
		}
		if n < MinEventTime || n > MaxEventTime {
			if derr == nil || !r.Timeless {
				t.Fatalf("decode(%q) accepted ts=%d, outside the accepted range", value, n)
			}
			return
		}
		if derr != nil {
			t.Fatalf("decode(%q) = %v; encoding/json reads ts=%d id=%q", value, derr, n, *doc.ID)
		}
		if r.EventTime != n || r.OrderKey != *doc.ID {
			t.Fatalf("decode(%q) = (%d, %q); encoding/json reads (%d, %q)", value, r.EventTime, r.OrderKey, n, *doc.ID)
		}
	})
}

// TestInputValidate: the one copy of the input rules (the job file's config
// package maps these errors onto YAML paths). Every problem is reported,
// each naming its field.
func TestInputValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want []string // every problem, in order; none: valid
	}{
		{"minimal", Input{Topic: "t"}, nil},
		{"field", Input{Topic: "t", Time: TimeFromField, TimeField: "meta.ts", TimeFormat: FormatRFC3339, Key: KeyFromField, KeyField: "id"}, nil},
		{"header", Input{Topic: "t", Time: TimeFromHeader, TimeField: "event-time", TimeFormat: FormatUnixMs}, nil},
		{"no topic", Input{}, []string{"topic: required (or topic_pattern)"}},
		// time_format with time: timestamp is refused: the Kafka timestamp
		// has no format, so the setting would silently do nothing.
		{"format with timestamp", Input{Topic: "t", TimeFormat: FormatUnixS}, []string{"time_format: only used when time is field or header"}},
		{"format with none", Input{Topic: "t", Time: TimeNone, TimeFormat: FormatAuto}, []string{"time_format: only used when time is field or header"}},
		{"time_field with timestamp", Input{Topic: "t", Time: TimeFromTimestamp, TimeField: "ts"}, []string{"time_field: only used when time is field or header"}},
		{"field without path", Input{Topic: "t", Time: TimeFromField}, []string{"time_field: required when time is field"}},
		{"bad path", Input{Topic: "t", Time: TimeFromField, TimeField: "a..b"}, []string{`time_field: "a..b" is not a dotted JSON path such as meta.ts`}},
		{"header without name", Input{Topic: "t", Time: TimeFromHeader}, []string{"time_field: required when time is header (the header name)"}},
		{"bad time", Input{Topic: "t", Time: "clock"}, []string{`time: "clock" is not one of timestamp, field, header, none`}},
		{"bad format", Input{Topic: "t", Time: TimeFromField, TimeField: "ts", TimeFormat: "iso"}, []string{`time_format: "iso" is not one of auto, unix_ms, unix_s, unix_us, unix_ns, rfc3339`}},
		{"key_field unused", Input{Topic: "t", KeyField: "id"}, []string{"key_field: only used when key is field"}},
		{"key field missing", Input{Topic: "t", Key: KeyFromField}, []string{"key_field: required when key is field"}},
		{"bad key", Input{Topic: "t", Key: "value"}, []string{`key: "value" is not one of key, field`}},
		{"every problem", Input{Time: "clock", Key: KeyFromField}, []string{"topic: required (or topic_pattern)", `time: "clock" is not one of timestamp, field, header, none`, "key_field: required when key is field"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if err := tc.in.Validate(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEventTimeRange: every event-time path (integer, float, string,
// header, Kafka timestamp, each format) rejects a time outside
// [MinEventTime, MaxEventTime] with a reason, leaving the record without an
// event time, and accepts the bounds themselves.
func TestEventTimeRange(t *testing.T) {
	field := func(f TimeFormat) Input {
		return Input{Topic: "t", Time: TimeFromField, TimeField: "ts", TimeFormat: f}
	}
	value := func(v string) record.Record { return record.Record{Value: []byte(`{"ts":` + v + `}`)} }
	header := Input{Topic: "t", Time: TimeFromHeader, TimeField: "et"}
	hdr := func(v string) record.Record {
		return record.Record{Headers: []record.Header{{Key: "et", Value: []byte(v)}}}
	}
	cases := []struct {
		in   Input
		rec  record.Record
		want int64 // 0: rejected
	}{
		{field(""), value("9300000000000000"), 0},
		{field(""), value("9223372036854775807"), 0},
		{field(""), value("-9223372036854775808"), 0},
		{field(""), value("99999999999999999999"), 0},
		{field(""), value("9.3e15"), 0},
		{field(""), value(`"9300000000000000"`), 0},
		{field(FormatUnixS), value("9300000000000"), 0},
		{field(FormatUnixS), value("9223372036854775807"), 0},
		{field(FormatUnixUs), value("9223372036854775807"), 0},
		{field(FormatUnixNs), value("9223372036854775807"), 9223372036854},
		{field(FormatRFC3339), value(`"0000-12-31T23:59:59Z"`), 0},
		{field(""), value("253402300799999"), MaxEventTime},
		{field(""), value("253402300800000"), 0},
		{field(""), value("-62135596800000"), MinEventTime},
		{field(""), value("-62135596800001"), 0},
		{field(""), value(`"9999-12-31T23:59:59.999Z"`), MaxEventTime},
		{header, hdr("9300000000000000"), 0},
		{header, hdr("9223372036854775807"), 0},
		{header, hdr("1700000000000"), 1700000000000},
		{Input{Topic: "t"}, record.Record{Timestamp: time.UnixMilli(9300000000000000)}, 0},
		{Input{Topic: "t"}, record.Record{Timestamp: time.UnixMilli(1700000000000)}, 1700000000000},
	}
	for i, c := range cases {
		r, err := decodeCase(t, c.in, c.rec)
		switch {
		case c.want == 0 && (err == nil || !r.Timeless || r.EventTime != 0):
			t.Errorf("case %d: accepted %d (err %v, timeless %v)", i, r.EventTime, err, r.Timeless)
		case c.want != 0 && (err != nil || r.EventTime != c.want):
			t.Errorf("case %d: got %d, %v; want %d", i, r.EventTime, err, c.want)
		}
	}
}

// decodeCase decodes a copy of rec with in's decoder.
func decodeCase(t *testing.T, in Input, rec record.Record) (record.Record, error) {
	t.Helper()
	d, err := compileInput(in)
	if err != nil {
		t.Fatal(err)
	}
	return rec, d.Decode(context.Background(), &rec)
}

// TestDecodeTombstone: a record without a value (a tombstone) under a time
// or key field is refused with a reason that says so, not as malformed JSON;
// an empty value is still malformed.
func TestDecodeTombstone(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123)
	for _, c := range []struct {
		in   Input
		rec  record.Record
		want string
	}{
		{Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}, record.Record{}, `tombstone: no value to read the event time field "ts" from`},
		{Input{Topic: "t", Key: KeyFromField, KeyField: "id"}, record.Record{Timestamp: ts}, `tombstone: no value to read the key field "id" from`},
		{Input{Topic: "t", Time: TimeFromField, TimeField: "ts"}, record.Record{Value: []byte{}}, `event time field "ts": malformed JSON`},
	} {
		if _, err := decodeCase(t, c.in, c.rec); err == nil || err.Error() != c.want {
			t.Errorf("%+v: err %v, want %q", c.in, err, c.want)
		}
	}
	// Without a field to read, a tombstone decodes.
	if r, err := decodeCase(t, Input{Topic: "t"}, record.Record{Key: []byte("k"), Timestamp: ts}); err != nil || r.EventTime != ts.UnixMilli() {
		t.Fatalf("tombstone with a timestamp: %v %+v", err, r)
	}
}
