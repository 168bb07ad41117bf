package signalbox_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/envelope"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
)

// TestDeadLetterKeepsBytes: records dead-lettered under time: field reach a
// JSONL dead-letter sink with their key and value byte for byte (key_b64,
// value_b64 where they are not UTF-8); a tombstone's value is null and its
// reason says it is a tombstone, not malformed JSON.
func TestDeadLetterKeepsBytes(t *testing.T) {
	binKey := []byte{0, 0, 0, 0x80} // IntegerSerializer's 128
	recs := []record.Record{
		tsRecord("orders", 0, 0, "k", 2000),
		{Topic: "orders", Offset: 1, Key: binKey, Value: nil},
		{Topic: "orders", Offset: 2, Key: []byte{0, 0, 0, 0xff}, Value: []byte{0x80, '{', 0xff}},
		{Topic: "orders", Offset: 3, Key: []byte("k"), Value: []byte{}},
		tsRecord("orders", 0, 4, "k", 3000),
	}
	var buf bytes.Buffer
	dead := jsonl.New(&buf, jsonl.Options{})
	out := &collect{}
	p, err := signalbox.New(script.New(1, 2, script.Partition{TopicPartition: tp("orders", 0), Records: recs}),
		tsInputs("orders"), signalbox.WithDelay(5*time.Second), signalbox.WithClock(frozen),
		signalbox.WithSink(out), signalbox.WithDeadLetter(dead), signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	if got, want := out.lines(), []string{"orders/0@0 t=2000", "orders/0@4 t=3000"}; !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("dead letters:\n%s", buf.Bytes())
	}
	wantReason := []string{
		`tombstone: no value to read the event time field "ts" from`,
		`event time field "ts": malformed JSON`,
		`event time field "ts": malformed JSON`,
	}
	for i, line := range lines {
		want := recs[i+1]
		d, err := envelope.Decode(line)
		if err != nil || d.Offset != want.Offset || !bytes.Equal(d.Key, want.Key) || !bytes.Equal(d.Value, want.Value) || (d.Value == nil) != (want.Value == nil) {
			t.Fatalf("dead letter %s: decodes to %+v (%v), want key %q value %q", line, d, err, want.Key, want.Value)
		}
		if !bytes.Contains(line, []byte(`"reason":"`+jsonEscape(wantReason[i])+`"`)) {
			t.Fatalf("dead letter %s: want reason %q", line, wantReason[i])
		}
	}
	if !bytes.Contains(lines[0], []byte(`"value":null`)) {
		t.Fatalf("tombstone's dead letter %s: want value null", lines[0])
	}
}

func jsonEscape(s string) string { return string(bytes.Trim(envelope.AppendString(nil, s), `"`)) }
