package envelope_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/envelope"
)

func TestAppendGolden(t *testing.T) {
	ms := time.Date(2026, 11, 30, 5, 13, 24, 123e6, time.UTC).UnixMilli()
	cases := []struct {
		name string
		rec  record.Record
		want string
	}{
		{"json value", record.Record{Topic: "orders", Partition: 3, Offset: 42, Key: []byte("sku-1"), EventTime: ms, Value: []byte(`{"a": [1, 2]}`)},
			`{"topic":"orders","partition":3,"offset":42,"key":"sku-1","event_time":"2026-11-30T05:13:24.123Z","event_time_ms":` + fmt.Sprint(ms) + `,"value":{"a": [1, 2]},"late":false}`},
		{"no key, string value", record.Record{Topic: "t", Offset: 0, EventTime: 0, Value: []byte("not json")},
			`{"topic":"t","partition":0,"offset":0,"key":null,"event_time":"1970-01-01T00:00:00.000Z","event_time_ms":0,"value":"not json","late":false}`},
		{"late", record.Record{Topic: "t", Key: []byte{}, EventTime: 1, Value: []byte(`7`), Late: true, LateBy: 250},
			`{"topic":"t","partition":0,"offset":0,"key":"","event_time":"1970-01-01T00:00:00.001Z","event_time_ms":1,"value":7,"late":true,"late_by_ms":250}`},
		{"timeless with reason", record.Record{Topic: "ref", Timeless: true, Value: []byte("{bad"),
			Headers: []record.Header{{Key: "x", Value: []byte("y")}, {Key: record.ReasonHeader, Value: []byte("malformed \"json\"")}}},
			`{"topic":"ref","partition":0,"offset":0,"key":null,"value":"{bad","late":false,"reason":"malformed \"json\""}`},
		{"multi-line json is compacted", record.Record{Topic: "t", Value: []byte("{\n  \"a\": 1\r\n}\n")},
			`{"topic":"t","partition":0,"offset":0,"key":null,"event_time":"1970-01-01T00:00:00.000Z","event_time_ms":0,"value":{"a":1},"late":false}`},
		{"escapes", record.Record{Topic: "t", Key: []byte("a\"b\\c\n\x01\x00\u2028é"), Value: []byte{}},
			`{"topic":"t","partition":0,"offset":0,"key":"a\"b\\c\n\u0001\u0000\u2028é","event_time":"1970-01-01T00:00:00.000Z","event_time_ms":0,"value":"","late":false}`},
		{"tombstone", record.Record{Topic: "t", Key: []byte("k"), Value: nil, Timeless: true},
			`{"topic":"t","partition":0,"offset":0,"key":"k","value":null,"late":false}`},
		{"binary key and value", record.Record{Topic: "t", Key: []byte{0, 0, 0, 0x80}, Value: []byte("a\xffb"), Timeless: true},
			`{"topic":"t","partition":0,"offset":0,"key_b64":"AAAAgA==","value_b64":"Yf9i","late":false}`},
		{"invalid UTF-8 after text", record.Record{Topic: "t", Key: []byte("sku-\"1\"\xc3"), Value: []byte("{\"a\":\"\xe9\"}"), Timeless: true},
			`{"topic":"t","partition":0,"offset":0,"key_b64":"c2t1LSIxIsM=","value_b64":"eyJhIjoi6SJ9","late":false}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(envelope.Append(nil, &c.rec))
			if got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("invalid JSON: %s", got)
			}
		})
	}
}

// TestAppendTimeMatchesTimeFormat checks the hand-written calendar arithmetic
// against package time over random instants, including negative ones.
func TestAppendTimeMatchesTimeFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	edges := []int64{0, -1, 1, 86_399_999, 86_400_000, -86_400_000, -86_400_001,
		951_782_400_000,         // 2000-02-29
		253_402_300_799_999,     // 9999-12-31T23:59:59.999
		-62_135_596_800_000,     // 0001-01-01
		-62_135_596_800_000 + 5, // just after
	}
	for i := 0; i < 20000; i++ {
		edges = append(edges, r.Int64N(253_402_300_800_000+62_135_596_800_000)-62_135_596_800_000)
	}
	for _, ms := range edges {
		want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
		if got := string(envelope.AppendTime(nil, ms)); got != want {
			t.Fatalf("AppendTime(%d) = %s, want %s", ms, got, want)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 5000; i++ {
		b := make([]byte, r.IntN(24))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		if i%3 == 0 {
			b = append(b, "\u2028x\u2029é"...)
		}
		got := envelope.AppendBytes(nil, b)
		var s string
		if err := json.Unmarshal(got, &s); err != nil {
			t.Fatalf("%q: %v", got, err)
		}
		want, _ := json.Marshal(string(b)) // encoding/json replaces invalid UTF-8 the same way
		var ws string
		_ = json.Unmarshal(want, &ws)
		if s != ws {
			t.Fatalf("input %q: decoded %q, encoding/json gives %q", b, s, ws)
		}
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	rec := benchRecord()
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = envelope.Append(buf[:0], &rec) }); n != 0 {
		t.Fatalf("Append allocates %.1f times per record", n)
	}
	rec.Key, rec.Value = []byte{0, 0, 0, 0x80}, []byte{0xff, 'a'} // key_b64, value_b64
	if n := testing.AllocsPerRun(100, func() { buf = envelope.Append(buf[:0], &rec) }); n != 0 {
		t.Fatalf("Append allocates %.1f times per binary record", n)
	}
}

func benchRecord() record.Record {
	return record.Record{
		Topic: "inventory", Partition: 7, Offset: 123456789, Key: []byte("sku-000042"),
		EventTime: 1_795_000_000_123,
		Value:     []byte(`{"sku":"sku-000042","event":"sold","qty":3,"store":"berlin-17","ts":"2026-11-19T01:46:40.123Z"}`),
	}
}

func BenchmarkAppend(b *testing.B) {
	rec := benchRecord()
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(envelope.Append(nil, &rec))))
	b.ReportAllocs()
	for b.Loop() {
		buf = envelope.Append(buf[:0], &rec)
	}
}

// BenchmarkEncoder is BenchmarkAppend through an Encoder, as a sink writes
// a batch: records of one topic in event-time order, a millisecond apart
// (so mostly of one second, whose date, time of day and leading digits of
// event_time_ms the Encoder formats once).
func BenchmarkEncoder(b *testing.B) {
	rec := benchRecord()
	buf := make([]byte, 0, 4096)
	var e envelope.Encoder
	b.SetBytes(int64(len(envelope.Append(nil, &rec))))
	b.ReportAllocs()
	for b.Loop() {
		rec.EventTime++
		buf = e.Append(buf[:0], &rec)
	}
}

// BenchmarkEncoderInterleaved is BenchmarkEncoder on what a replay's sink
// is handed: records of 8 topics × 3 partitions interleaved (one after the
// other in turn), each partition's offsets counting up, about 7 records to
// a second of event time, values validated before (the scaling
// benchmark's shape).
func BenchmarkEncoderInterleaved(b *testing.B) {
	recs := make([]record.Record, 24)
	for i := range recs {
		recs[i] = benchRecord()
		recs[i].Topic, recs[i].Partition = fmt.Sprintf("events-%02d", i/3), int32(i%3)
		recs[i].Offset = int64(i) * 1_000_003 // apart, so that not all share their thousands
		recs[i].EventTime += int64(i) * 150
		recs[i].ValueJSON = true // validated by the engine, as for the JSONL sink
	}
	benchEncode(b, recs, func(r *record.Record) {
		r.Offset++
		r.EventTime += 150 * int64(len(recs))
	})
}

// benchEncode writes recs in turn through one Encoder, one record an op,
// each moved on by next first when next is not nil.
func benchEncode(b *testing.B, recs []record.Record, next func(*record.Record)) {
	buf := make([]byte, 0, 4096)
	var e envelope.Encoder
	b.SetBytes(int64(len(envelope.Append(nil, &recs[0]))))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r := &recs[i%len(recs)]
		if next != nil {
			next(r)
		}
		buf = e.Append(buf[:0], r)
		i++
	}
}

// BenchmarkEncoderReplay is BenchmarkEncoderInterleaved with the event
// times of the scaling benchmark's history at 4M records (a week): gaps
// drawn as its workload draws them, half of them bursts of up to 200 ms
// and half exponential (mean 200 ms), about 6.6 records to a second but
// unevenly, so that the second changes every few records; keys and values
// as the workload's.
func BenchmarkEncoderReplay(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(7, 8))
	recs := make([]record.Record, n)
	topics := make([]string, 8) // a topic's records share its string, as the source's do
	for i := range topics {
		topics[i] = fmt.Sprintf("events-%02d", i)
	}
	t := int64(1_795_000_000_123)
	for i := range recs {
		if r.IntN(2) == 0 {
			t += r.Int64N(201)
		} else {
			t += int64(r.ExpFloat64() * 200)
		}
		p := r.IntN(24)
		key := fmt.Appendf(nil, "i-%03d", r.IntN(1000))
		recs[i] = record.Record{Topic: topics[p/3], Partition: int32(p % 3), Offset: int64(1_000_000 + i/24),
			Key: key, EventTime: t, ValueJSON: true,
			Value: fmt.Appendf(nil, `{"item":"%s","ts":%d,"kind":"sold","pad":"abcdefghijklmnopqrstuvwxyzabcdefghijkl"}`, key, t)}
	}
	benchEncode(b, recs, nil)
}

func BenchmarkAppendStringValue(b *testing.B) {
	rec := benchRecord()
	rec.Value = []byte(`sku-000042;sold;3;berlin-17;2026-11-19T01:46:40.123Z plain text payload`)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = envelope.Append(buf[:0], &rec)
	}
}

// BenchmarkAppendBinary: an IntegerSerializer key and a 100-byte value that
// are not UTF-8, written as key_b64 and value_b64.
func BenchmarkAppendBinary(b *testing.B) {
	rec := benchRecord()
	rec.Key = []byte{0, 0, 0, 0x80}
	rec.Value = bytes.Repeat([]byte{0x80, 'a', 'b', 'c'}, 25)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = envelope.Append(buf[:0], &rec)
	}
}

func ExampleAppend() {
	rec := record.Record{Topic: "orders", Partition: 1, Offset: 9, Key: []byte("k"),
		EventTime: 1_764_479_604_123, Value: []byte(`{"qty":2}`)}
	fmt.Println(string(envelope.Append(nil, &rec)))
	// Output:
	// {"topic":"orders","partition":1,"offset":9,"key":"k","event_time":"2025-11-30T05:13:24.123Z","event_time_ms":1764479604123,"value":{"qty":2},"late":false}
}

// BenchmarkAppendTime compares the calendar arithmetic of AppendTime with
// time.Time.AppendFormat, the library way; see the comment on AppendTime.
func BenchmarkAppendTime(b *testing.B) {
	dst := make([]byte, 0, 64)
	ms := int64(1_764_479_604_123)
	b.Run("AppendTime", func(b *testing.B) {
		for b.Loop() {
			dst = envelope.AppendTime(dst[:0], ms)
		}
	})
	b.Run("time.AppendFormat", func(b *testing.B) {
		for b.Loop() {
			dst = time.UnixMilli(ms).UTC().AppendFormat(dst[:0], "2006-01-02T15:04:05.000Z")
		}
	})
}

// TestEncoderManyPartitions holds invariant 5 when more topic-partitions
// interleave than an Encoder remembers, so that they share its slots: 3
// 100 topics (two spelled alike in distinct strings) × 100 partitions,
// offsets across thousands, each record written twice in a row, then at
// an offset a thousand on and again, in each of three rounds.
func TestEncoderManyPartitions(t *testing.T) {
	var e envelope.Encoder
	topics := []string{"orders", strings.Clone("orders")}
	for i := range 98 {
		topics = append(topics, fmt.Sprintf("events-%02d", i))
	}
	for round := range 3 {
		for p := range int32(100) {
			for i, topic := range topics {
				rec := record.Record{Topic: topic, Partition: p, Offset: int64(998+round) * int64(1+p+int32(i)), EventTime: int64(p) * 1001}
				for _, off := range []int64{rec.Offset, rec.Offset, rec.Offset + 1000, rec.Offset} {
					rec.Offset = off
					if got, want := e.Append(nil, &rec), envelope.Append(nil, &rec); !bytes.Equal(got, want) {
						t.Fatalf("Encoder wrote %s, Append %s", got, want)
					}
				}
			}
		}
	}
}

// TestEncoderTimesMatchAppend holds invariant 5 for event times: an
// Encoder's memory of the last second, and its path for seconds of fixed
// widths, never show in its output, over random walks of event time whose
// steps are of every scale a sink sees (a millisecond, a burst, a second,
// across minutes, days), backwards as well as forwards, from starts across
// the range: around the epoch (event_time_ms under 1000, negative times),
// today, where the second gains its 10th and 11th digits, a negative
// second as wide as today's, and years of one and of five digits.
func TestEncoderTimesMatchAppend(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	starts := []int64{0, -1, 99_999, 100_000, -60_000, 59_999, 1_795_000_000_123,
		1e12 - 200, 1e13 - 200, // across 2001-09-09 and 2286-11-20 (13 digits of ms)
		-150_000_000_000,      // 1965: a four-digit year, ten characters of a negative second
		-62_135_596_800_000,   // 0001-01-01
		253_402_300_799_000,   // 9999-12-31T23:59:59
		3_000_000_000_000_000, // a five-digit year
		-3_000_000_000_000_000}
	steps := []int64{1, 200, 2_000, 70_000, 150_000, 2 * 86_400_000}
	var e envelope.Encoder
	rec := record.Record{Topic: "t", Value: []byte("1"), ValueJSON: true}
	for _, start := range starts {
		for _, step := range steps {
			rec.EventTime = start
			for range 2000 {
				if got, want := e.Append(nil, &rec), envelope.Append(nil, &rec); !bytes.Equal(got, want) {
					t.Fatalf("event time %d: Encoder wrote %s, Append %s", rec.EventTime, got, want)
				}
				d := r.Int64N(step + 1)
				if r.IntN(4) == 0 { // disorder, or a jump back
					d = -d
				}
				rec.EventTime += d
			}
		}
	}
}

// FuzzAppend holds invariants 1–3 of the package doc: whatever the topic,
// key, value, reason and event time, Append writes one valid JSON object on
// one line, in valid UTF-8, that decodes to the record's fields.
func FuzzAppend(f *testing.F) {
	f.Add("orders", []byte("sku-1"), []byte(`{"a": [1, 2]}`), []byte(""), int64(1_764_479_604_123), false, false, int32(7), int64(123_456_789))
	f.Add("t\n", []byte("a\"b\\c\n\x01\xff\u2028é"), []byte("{\n  \"a\": 1\r\n}\n"), []byte("bad \"json\""), int64(-1), true, false, int32(7), int64(123_456_789))
	f.Add("", []byte(nil), []byte("not json\xff"), []byte("\x00"), int64(-62_135_596_800_001), false, true, int32(7), int64(123_456_789))
	f.Add("t", []byte("k"), []byte(`1`), []byte(""), int64(-86_400_000), false, false, int32(7), int64(123_456_789))                // a negative midnight
	f.Add("t", []byte("k"), []byte(`1`), []byte(""), int64(999), false, false, int32(7), int64(123_456_789))                        // the last millisecond whose event_time_ms has no second's digits
	f.Add("t", []byte{0, 0, 0, 0x80}, []byte("{\"a\":\"\xe9\"}"), []byte(""), int64(1), false, false, int32(7), int64(123_456_789)) // binary key, JSON-shaped value that is not UTF-8
	f.Add("t", []byte("~b64:AAAAgA"), []byte(nil), []byte("tombstone"), int64(1), false, false, int32(7), int64(123_456_789))
	f.Add("t", []byte("k"), []byte(`1`), []byte(""), int64(1), false, false, int32(-1), int64(999))
	f.Add("t", []byte("k"), []byte(`1`), []byte(""), int64(1), false, false, int32(2_000_000_000), int64(-5))
	f.Add("t", []byte("k"), []byte(`1`), []byte(""), int64(1), false, false, int32(0), int64(1000))
	f.Add("t", []byte("k"), []byte(`1`), []byte(""), int64(1), false, false, int32(3), int64(math.MaxInt64))
	f.Add("t", []byte("k"), []byte(`1`), []byte(""), int64(1e12), false, false, int32(3), int64(7))             // the first second of 10 digits (2001-09-09)
	f.Add("t", []byte("k"), []byte(`1`), []byte(""), int64(-150_000_000_001), false, false, int32(3), int64(7)) // a negative second of 10 characters (1965)
	f.Fuzz(func(t *testing.T, topic string, key, value, reason []byte, ms int64, late, timeless bool, partition int32, offset int64) {
		rec := record.Record{Topic: topic, Partition: partition, Offset: offset, Key: key, Value: value, EventTime: ms, Late: late, LateBy: 7, Timeless: timeless}
		if len(reason) > 0 {
			rec.Headers = []record.Header{{Key: record.ReasonHeader, Value: reason}}
		}
		out := envelope.Append(nil, &rec)
		// An Encoder writes the same bytes, whether its memory of the last
		// topic-partition and second is cold (another topic, ten days
		// before), warm (the same record again, or the first millisecond of
		// its second), a millisecond away (across a second, or a midnight,
		// when ms is one, negative times included), of a long topic, of
		// another partition of the topic, or of an offset nearby (across a
		// thousand, or zero, when offset is one, negative offsets included)
		// or far (another count of thousands, or under a thousand).
		var e envelope.Encoder
		other := record.Record{Topic: topic + "-other", Partition: partition, Offset: offset, EventTime: ms - 10*86_400_000}
		long := record.Record{Topic: strings.Repeat("t", 70), EventTime: ms}
		before := record.Record{Topic: topic, Partition: partition, Offset: offset - 1, EventTime: ms - 1}
		after := record.Record{Topic: topic, Partition: partition, Offset: offset + 1, EventTime: ms + 1}
		second := record.Record{Topic: topic, Partition: partition, Offset: offset, EventTime: ms - ((ms%1000)+1000)%1000}
		sibling := record.Record{Topic: topic, Partition: partition ^ 1, Offset: offset, EventTime: ms}
		far := record.Record{Topic: topic, Partition: partition, Offset: offset + 1_000_000, EventTime: ms}
		small := record.Record{Topic: topic, Partition: partition, Offset: offset % 1000, EventTime: ms}
		thousands := record.Record{Topic: topic, Partition: partition, Offset: offset - offset%1000 - 1, EventTime: ms}
		for i, prev := range []*record.Record{&other, &rec, &before, &after, &second, &long, &sibling, &far, &small, &thousands} {
			if enc := e.Append(nil, prev); !bytes.Equal(enc, envelope.Append(nil, prev)) {
				t.Fatalf("Encoder wrote %q for record %d, Append %q", enc, i, envelope.Append(nil, prev))
			}
			if enc := e.Append(nil, &rec); !bytes.Equal(enc, out) {
				t.Fatalf("Encoder after record %d wrote %q, Append %q", i, enc, out)
			}
		}
		if !json.Valid(out) || !utf8.Valid(out) || bytes.ContainsAny(out, "\r\n") {
			t.Fatalf("not one valid JSON line: %q", out)
		}
		var got struct {
			Topic       string          `json:"topic"`
			Key         *string         `json:"key"`
			EventTimeMs *int64          `json:"event_time_ms"`
			Value       json.RawMessage `json:"value"`
			Late        bool            `json:"late"`
			Reason      *string         `json:"reason"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(topic) && got.Topic != topic {
			t.Fatalf("topic %q, want %q", got.Topic, topic)
		}
		// Keys round-trip byte for byte (key, or key_b64 when not UTF-8);
		// so do values that are not JSON (value, or value_b64).
		dec, err := envelope.Decode(out)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if dec.Partition != partition || dec.Offset != offset {
			t.Fatalf("partition %d offset %d, want %d %d", dec.Partition, dec.Offset, partition, offset)
		}
		if (dec.Key == nil) != (key == nil) || !bytes.Equal(dec.Key, key) {
			t.Fatalf("key decodes to %q, want %q", dec.Key, key)
		}
		if !envelope.IsJSON(value) && ((dec.Value == nil) != (value == nil) || !bytes.Equal(dec.Value, value)) {
			t.Fatalf("value decodes to %q, want %q", dec.Value, value)
		}
		if got.Key != nil && !utf8.Valid(key) {
			t.Fatalf("key %q written as text: %s", key, out)
		}
		if timeless != (got.EventTimeMs == nil) || !timeless && *got.EventTimeMs != ms {
			t.Fatalf("event_time_ms %v, want %d (timeless %v)", got.EventTimeMs, ms, timeless)
		}
		if got.Late != late || (got.Reason != nil) != (len(reason) > 0) {
			t.Fatalf("late %v reason %v, want %v %q", got.Late, got.Reason, late, reason)
		}
		if json.Valid(value) && utf8.Valid(value) {
			var want, have bytes.Buffer
			if json.Compact(&want, value) != nil || json.Compact(&have, got.Value) != nil || want.String() != have.String() {
				t.Fatalf("value %s, want %s", got.Value, value)
			}
		}
	})
}

// FuzzID holds invariant 6: ID is injective and ParseID inverts it, over
// any two byte strings (text keys, binary keys, and text keys that look like
// encoded ones), and a text key without the prefix is its own id.
func FuzzID(f *testing.F) {
	f.Add([]byte("sku-1"), []byte{0, 0, 0, 0x80})
	f.Add([]byte("~b64:AAAAgA"), []byte{0, 0, 0, 0x80})
	f.Add([]byte{0, 0, 0, 0xff}, []byte{0, 0, 0, 0xfe})
	f.Add([]byte("~b64:"), []byte(""))
	f.Add([]byte("~b64:fn5iNjQ6"), []byte("~b64:"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ida, idb := envelope.ID(string(a)), envelope.ID(string(b))
		if got := envelope.IDBytes(a); got != ida {
			t.Fatalf("IDBytes(%q) = %q, ID gives %q", a, got, ida)
		}
		if !bytes.Equal(a, b) && ida == idb {
			t.Fatalf("keys %q and %q share the id %q", a, b, ida)
		}
		if !utf8.ValidString(ida) {
			t.Fatalf("ID(%q) = %q, not UTF-8", a, ida)
		}
		if utf8.Valid(a) && !strings.HasPrefix(string(a), envelope.IDPrefix) && ida != string(a) {
			t.Fatalf("text key %q has the id %q, not itself", a, ida)
		}
		back, err := envelope.ParseID(ida)
		if err != nil || !bytes.Equal(back, a) {
			t.Fatalf("ParseID(ID(%q)) = %q, %v", a, back, err)
		}
		// ParseID accepts only ids that ID writes.
		if k, err := envelope.ParseID(string(b)); err == nil && envelope.ID(string(k)) != string(b) {
			t.Fatalf("ParseID(%q) = %q, whose id is %q", b, k, envelope.ID(string(k)))
		}
	})
}

// idSink keeps the ids of TestIDBytesAllocatesOnce, as a caller would.
var idSink string

// TestIDBytesAllocatesOnce: the bulk sink's id of a record's key costs
// one allocation, the id itself, for a text and a binary key alike.
func TestIDBytesAllocatesOnce(t *testing.T) {
	for _, key := range [][]byte{[]byte("sku-1"), {0, 0, 0, 0xc8}, []byte("~b64:AAAAgA")} {
		if n := testing.AllocsPerRun(100, func() { idSink = envelope.IDBytes(key) }); n > 1 {
			t.Errorf("IDBytes(%q): %v allocations, want 1", key, n)
		}
	}
}

// TestIntegerKeysDistinct: the keys Kafka's IntegerSerializer writes
// (4-byte big-endian) for 0..255 round-trip through the envelope and get
// 256 distinct ids; keys 128..255 are not valid UTF-8.
func TestIntegerKeysDistinct(t *testing.T) {
	ids := map[string]bool{}
	keys := map[string]bool{}
	for i := range 256 {
		key := []byte{0, 0, 0, byte(i)}
		rec := record.Record{Topic: "t", Key: key, Value: []byte{byte(i), 0xff}, Timeless: true}
		dec, err := envelope.Decode(envelope.Append(nil, &rec))
		if err != nil || !bytes.Equal(dec.Key, key) || !bytes.Equal(dec.Value, rec.Value) {
			t.Fatalf("key %d: decoded %q %q, %v", i, dec.Key, dec.Value, err)
		}
		keys[string(dec.Key)] = true
		ids[envelope.ID(string(key))] = true
	}
	if len(ids) != 256 || len(keys) != 256 {
		t.Fatalf("%d distinct ids, %d distinct keys, want 256", len(ids), len(keys))
	}
}

// TestDecodedKeyAndValue: a record with decoded JSON (a schema'd input) has
// it embedded as key and value, with its schema ids; Encoder agrees.
func TestDecodedKeyAndValue(t *testing.T) {
	r := record.Record{Topic: "inv", Partition: 1, Offset: 7, Key: []byte{0, 0, 0, 0, 3, 2, 'k'}, Value: []byte{0, 0, 0, 0, 4, 0xff},
		EventTime: 1000, DecodedKey: []byte(`"k"`), DecodedValue: []byte(`{"sku":"s1","n":1}`), KeySchemaID: 3, ValueSchemaID: 4}
	want := `{"topic":"inv","partition":1,"offset":7,"key":"k","event_time":"1970-01-01T00:00:01.000Z","event_time_ms":1000,` +
		`"value":{"sku":"s1","n":1},"schema_id":4,"key_schema_id":3,"late":false}`
	var e envelope.Encoder
	if got := envelope.Append(nil, &r); string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := e.Append(nil, &r); string(got) != want {
		t.Fatalf("Encoder: %s", got)
	}
	r.DecodedKey, r.KeySchemaID, r.ValueSchemaID = nil, 0, 0 // a tombstone's JSON null has no schema
	r.DecodedValue = []byte("null")
	if got := envelope.Append(nil, &r); !bytes.Contains(got, []byte(`"key":"\u0000\u0000\u0000\u0000\u0003\u0002k","event_time"`)) ||
		!bytes.Contains(got, []byte(`"value":null,"late":false}`)) {
		t.Fatalf("raw key, null value: %s", got)
	}
}

// TestEncoderEmptyTopicFirst: a zero Encoder's empty slots hold no
// topic-partition, not the empty topic's partition 0.
func TestEncoderEmptyTopicFirst(t *testing.T) {
	var e envelope.Encoder
	rec := record.Record{Topic: "", Partition: 0, Offset: 12_345}
	if got, want := e.Append(nil, &rec), envelope.Append(nil, &rec); !bytes.Equal(got, want) {
		t.Fatalf("Encoder wrote %s, Append %s", got, want)
	}
}
