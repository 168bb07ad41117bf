package signalbox

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/envelope"
)

// jsonSink is a Sink that trusts record.Record.ValueJSON.
type jsonSink struct{ nopSink }

func (jsonSink) Info() SinkInfo { return SinkInfo{EmbedsValueJSON: true} }

// FuzzPrepareMarksValueJSON: for a sink that trusts the mark, prepare marks
// a time: timestamp record's value exactly when it is one line of valid
// JSON (encoding/json's and utf8's verdict), and the envelope of the
// marked record is byte for byte the envelope of the same record unmarked.
func FuzzPrepareMarksValueJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,2]`, `"x"`, `1e5`, "{\n\"a\":1}", `{"a":1,}`, "\xff", `not json`, ``, ` 7 `, `{"s":"\u2028"}`} {
		f.Add([]byte(s))
	}
	p, err := New(nopSource{}, WithInputs(Input{Topic: "t"}), WithSink(jsonSink{}))
	if err != nil {
		f.Fatal(err)
	}
	dec := p.decoders.For("t")
	f.Fuzz(func(t *testing.T, value []byte) {
		value = append([]byte{}, value...) // a payload, never a tombstone
		r := record.Record{Topic: "t", Offset: 3, Key: []byte("k"), Value: value, Timestamp: time.UnixMilli(1_700_000_000_123)}
		if err := p.prepareRecord(context.Background(), dec, nil, nil, &r); err != nil {
			t.Fatal(err)
		}
		want := utf8.Valid(value) && json.Valid(value) && !bytes.ContainsAny(value, "\r\n")
		if r.ValueJSON != want {
			t.Fatalf("prepare marked %q ValueJSON=%v, want %v", value, r.ValueJSON, want)
		}
		plain := r
		plain.ValueJSON = false
		if got, exp := envelope.Append(nil, &r), envelope.Append(nil, &plain); !bytes.Equal(got, exp) {
			t.Fatalf("envelope of %q: %s marked, %s unmarked", value, got, exp)
		}
	})
}
