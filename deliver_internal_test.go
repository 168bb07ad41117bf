package signalbox

import (
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/jsonl"
)

// TestRetryLogRateLimit: per sink, the first retry is logged, later ones
// at most once per interval, each line counting the retries left out
// since the previous one. The clock is an input.
func TestRetryLogRateLimit(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	now := time.Unix(1000, 0)
	if retryLogEvery != 10*time.Second {
		t.Fatalf("retryLogEvery = %v; docs/operations.md and docs/sinks.md say 10 s", retryLogEvery)
	}
	l := &retryLog{logger: zap.New(core), every: retryLogEvery, now: func() time.Time { return now }}
	a, b := l.hook("bulk"), l.hook("postgres")
	busy := errors.New("503")
	for i := 1; i <= 5; i++ { // within one interval: one line for bulk
		a(i, busy, time.Millisecond)
		now = now.Add(time.Second)
	}
	b(1, busy, time.Millisecond) // another sink has its own budget
	now = now.Add(retryLogEvery)
	a(6, busy, time.Millisecond)
	var got []string
	for _, e := range logs.All() {
		f := e.ContextMap()
		got = append(got, f["sink"].(string)+":"+strconv.FormatInt(f["attempt"].(int64), 10)+"/"+strconv.FormatInt(f["retries_not_logged"].(int64), 10))
	}
	want := []string{"bulk:1/0", "postgres:1/0", "bulk:6/4"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("logged %v, want %v", got, want)
	}
}

// TestWithout removes exactly the rejected records, by topic, partition
// and offset, keeping the order and leaving the batch untouched.
func TestWithout(t *testing.T) {
	batch := []record.Record{{Topic: "a", Partition: 0, Offset: 1}, {Topic: "a", Partition: 1, Offset: 1}, {Topic: "b", Partition: 0, Offset: 1}, {Topic: "a", Partition: 0, Offset: 2}}
	got := without(batch, []retry.Rejection{{Record: batch[1]}, {Record: record.Record{Topic: "b", Partition: 0, Offset: 9}}})
	if len(got) != 3 || got[0].Offset != 1 || got[1].Topic != "b" || got[2].Offset != 2 || len(batch) != 4 || batch[1].Partition != 1 {
		t.Fatalf("without = %+v (batch %+v)", got, batch)
	}
}

// TestSinkName: a sink is named by its description (SinkInfo.Name), also
// when a wrapper embeds it by its concrete type; a sink without one is
// "sink".
func TestSinkName(t *testing.T) {
	type wrapper struct{ Sink }
	type concrete struct{ *jsonl.Sink }
	js := jsonl.New(io.Discard, jsonl.Options{})
	if got := sinkName(js); got != "jsonl" {
		t.Fatalf("sinkName = %q", got)
	}
	if got := sinkName(concrete{js}); got != "jsonl" {
		t.Fatalf("sinkName(concrete) = %q", got)
	}
	if got := sinkName(wrapper{js}); got != "sink" {
		t.Fatalf("sinkName(wrapper) = %q, want sink (the interface hides Info)", got)
	}
}
