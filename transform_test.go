package signalbox_test

import (
	"strings"
	"testing"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/envelope"
	"github.com/signalbox/signalbox/sources/script"
)

// TestTransformClearsValueJSON: the decoder marks a value it validated
// (record.Record.ValueJSON) so that sinks skip their own scan; a transform
// may rewrite Value, so the engine clears the mark before it runs, and a
// value the transform made invalid still reaches the envelope as a string.
func TestTransformClearsValueJSON(t *testing.T) {
	sp := script.Partition{TopicPartition: tp("ev", 0)}
	for i := range int64(20) {
		sp.Records = append(sp.Records, tsRecord("ev", 0, i, "k", 1_700_000_000_000+i))
	}
	for _, rewrite := range []bool{false, true} {
		out := &collect{}
		opts := []signalbox.Option{tsInputs("ev"), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
			signalbox.WithSink(out), signalbox.WithUntil(signalbox.UntilEndOffsets)}
		if rewrite {
			opts = append(opts, signalbox.WithTransform(func(r *record.Record) error {
				r.Value = []byte(`{"rewritten":`) // cut short: not JSON
				return nil
			}))
		}
		p, err := signalbox.New(script.New(1, 5, sp), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
		if len(out.records) != len(sp.Records) {
			t.Fatalf("rewrite=%v: %d records out, want %d", rewrite, len(out.records), len(sp.Records))
		}
		for i := range out.records {
			r := &out.records[i]
			if r.ValueJSON == rewrite {
				t.Fatalf("rewrite=%v: record %d has ValueJSON %v", rewrite, i, r.ValueJSON)
			}
			if line := string(envelope.Append(nil, r)); rewrite && !strings.Contains(line, `"value":"{\"rewritten\":"`) {
				t.Fatalf("a rewritten value is not quoted: %s", line)
			}
		}
	}
}
