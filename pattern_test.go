package signalbox

import (
	"context"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/record"
)

type nopSource struct{}

func (nopSource) Open(context.Context) error { return nil }
func (nopSource) Poll(ctx context.Context) (record.Fetch, error) {
	<-ctx.Done()
	return record.Fetch{}, ctx.Err()
}
func (nopSource) Commit(context.Context, map[record.TopicPartition]int64) error { return nil }
func (nopSource) Close() error                                                  { return nil }

type nopSink struct{}

func (nopSink) Open(context.Context) error                   { return nil }
func (nopSink) Write(context.Context, []record.Record) error { return nil }
func (nopSink) Flush(context.Context) error                  { return nil }
func (nopSink) Close() error                                 { return nil }

// A TopicPattern input decodes every matching topic that no Topic input
// names; other topics get the default decoder.
func TestTopicPatternInput(t *testing.T) {
	p, err := New(nopSource{},
		WithInputs(
			Input{Topic: "ev-fixed", Time: TimeFromTimestamp},
			Input{TopicPattern: "ev-.*", Time: TimeNone},
		), WithSink(nopSink{}))
	if err != nil {
		t.Fatal(err)
	}
	if !p.decoders.For("ev-new").Timeless() {
		t.Error("ev-new did not get the pattern's settings")
	}
	if p.decoders.For("ev-fixed").Timeless() {
		t.Error("a Topic input lost to a pattern")
	}
	if p.decoders.For("xev-new") != p.decoders.For("") {
		t.Error("the pattern matched part of a name: patterns match whole names")
	}
	for _, in := range []Input{{Topic: "a", TopicPattern: "a"}, {TopicPattern: "("}} {
		if err := in.Validate(); err == nil || !strings.Contains(err.Error(), "topic_pattern") {
			t.Errorf("%+v: error %v does not name topic_pattern", in, err)
		}
	}
}
