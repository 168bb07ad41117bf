package signalbox_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
)

// markCounter is a Sink wrapper that counts the records handed to it marked
// record.Record.ValueJSON, but for those of topic fielded (time: field,
// whose decoding marks them for any sink); embedding the JSONL sink, it
// describes itself as it (SinkInfo.EmbedsValueJSON).
type markCounter struct {
	*jsonl.Sink
	marked int
}

func (m *markCounter) Write(ctx context.Context, batch []record.Record) error {
	for i := range batch {
		if batch[i].ValueJSON && batch[i].Topic != "fielded" {
			m.marked++
		}
	}
	return m.Sink.Write(ctx, batch)
}

// onlySink hides every method of the JSONL sink but Sink's: the engine
// then marks nothing, and the envelope validates each value itself.
type onlySink struct{ signalbox.Sink }

// valueJSONValues is a mix of payloads: one-line JSON of every kind,
// multiline JSON, almost-JSON, text, bytes that are not UTF-8, empty and
// nil values, and seeded truncations of JSON documents.
func valueJSONValues(n int) [][]byte {
	base := [][]byte{
		[]byte(`{"item":"i-001","qty":3}`), []byte(`[1,2,{"a":null}]`), []byte(`"text"`), []byte(`42`), []byte(`true`),
		[]byte(" {\"a\" : [ 1 , 2 ] } "), []byte("{\n  \"a\": 1\n}"), []byte("[1,\r\n2]"),
		[]byte(`{"a":1`), []byte(`{"a":1}}`), []byte(`{'a':1}`), []byte(`not json`), []byte(`{"s":"` + "\xff" + `"}`),
		{0x80, '{', 0xff}, {}, nil, []byte("\"tab\there\""), []byte(`{"u":"\u00e9\ud83d\ude00"}`),
	}
	rng := rand.New(rand.NewPCG(7, 11))
	out := make([][]byte, 0, n)
	for i := range n {
		v := base[i%len(base)]
		if i >= len(base) && len(v) > 1 && rng.IntN(3) == 0 {
			v = v[:rng.IntN(len(v))] // a truncated document
		}
		out = append(out, v)
	}
	return out
}

// TestValueJSONMarkKeepsBytes: with a sink that trusts record.Record.ValueJSON
// (the JSONL sink), the engine marks the valid one-line JSON values of
// inputs whose decoding did not scan them (time: timestamp, time: none),
// and the JSONL output is byte for byte what the sink writes when nothing
// is marked and it validates every value itself.
func TestValueJSONMarkKeepsBytes(t *testing.T) {
	vals := valueJSONValues(400)
	var parts []script.Partition
	wantMarked := 0
	for ti, topic := range []string{"stamped", "fielded", "timeless"} {
		for p := range int32(2) {
			sp := script.Partition{TopicPartition: tp(topic, p)}
			for i, v := range vals {
				ts := int64(1_000_000 + i*3 + int(p))
				r := record.Record{Topic: topic, Partition: p, Offset: int64(i), Key: []byte{byte('a' + i%5)}, Value: v, Timestamp: time.UnixMilli(ts)}
				if topic == "fielded" {
					r.Value = fmt.Appendf(nil, `{"ts":%d,"n":%d}`, ts, i)
				}
				if d := jsonfield.Scan(r.Value, nil); ti != 1 && r.Value != nil && d.Valid && !d.Multiline {
					wantMarked++
				}
				sp.Records = append(sp.Records, r)
			}
			parts = append(parts, sp)
		}
	}
	inputs := signalbox.WithInputs(
		signalbox.Input{Topic: "stamped", Time: signalbox.TimeFromTimestamp},
		signalbox.Input{Topic: "fielded", Time: signalbox.TimeFromField, TimeField: "ts"},
		signalbox.Input{Topic: "timeless", Time: signalbox.TimeNone})
	run := func(s signalbox.Sink) {
		t.Helper()
		p, err := signalbox.New(script.New(3, 64, parts...), inputs, signalbox.WithDelay(time.Second),
			signalbox.WithSink(s), signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
	}
	var marked, plain bytes.Buffer
	mc := &markCounter{Sink: jsonl.New(&marked, jsonl.Options{})}
	run(mc)
	pc := &markCounter{Sink: jsonl.New(&plain, jsonl.Options{})}
	run(onlySink{pc})
	if mc.marked != wantMarked || pc.marked != 0 {
		t.Fatalf("marked %d values for the JSONL sink (want %d), %d for a sink that does not trust the mark (want 0)", mc.marked, wantMarked, pc.marked)
	}
	if marked.Len() == 0 || !bytes.Equal(marked.Bytes(), plain.Bytes()) {
		t.Fatalf("output with marks differs from the output without:\n%s\n---\n%s", marked.Bytes(), plain.Bytes())
	}
}
