package signalbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/kafka"
)

// rangeBase is minute 0 of the ranged history: a week ago, so that every
// record is well behind the clock.
var rangeBase = time.Now().Add(-7 * 24 * time.Hour).Truncate(time.Minute)

// produceRange writes 40 records to each of topics a and b (one partition
// each, so one task): a's record i is stamped minute i, b's minute i + 30s.
// Each record is a batch of its own.
func produceRange(t *testing.T, c *embedded.Cluster) {
	t.Helper()
	// One client, each record acknowledged before the next is sent (a
	// client per record, c.Produce, made it 2 s).
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"a", "b"} {
		var half time.Duration
		if topic == "b" {
			half = 30 * time.Second
		}
		for i := range 40 {
			r := embedded.Record(topic, 0, fmt.Sprintf("%s%d", topic, i), fmt.Sprintf(`{"i":%d}`, i))
			r.Timestamp = rangeBase.Add(time.Duration(i)*time.Minute + half)
			if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// expectRange is the keys produceRange stamped in [from, to], in event-time
// order (a's minute i before b's minute i + 30s).
func expectRange(from, to time.Time) []string {
	var out []string
	for i := range 40 {
		for _, topic := range []string{"a", "b"} {
			ts := rangeBase.Add(time.Duration(i) * time.Minute)
			if topic == "b" {
				ts = ts.Add(30 * time.Second)
			}
			if !ts.Before(from) && !ts.After(to) {
				out = append(out, fmt.Sprintf("%s%d", topic, i))
			}
		}
	}
	return out
}

// keys returns the keys of the JSON lines written to b so far, in order.
func keys(t *testing.T, b *lockedBuffer) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var r struct{ Key string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		out = append(out, r.Key)
	}
	return out
}

// runRange runs one job over topics a and b with start and until, in group
// range, writing to sink. It returns Run's error; ctx bounds it. tune, if
// not nil, adjusts the source's configuration.
func runRange(ctx context.Context, t *testing.T, c *embedded.Cluster, start string, until time.Time, sink signalbox.Sink, tune func(*kafka.Config), opts ...signalbox.Option) error {
	t.Helper()
	cfg := kafka.Config{Brokers: c.Addrs(), Topics: []string{"a", "b"}, Group: "range", Start: start, FetchMaxWait: 20 * time.Millisecond}
	if tune != nil {
		tune(&cfg)
	}
	src, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := signalbox.New(src, append([]signalbox.Option{
		signalbox.WithSink(sink),
		signalbox.WithUntil(signalbox.UntilTime(until)),
		signalbox.WithCheckpointInterval(20 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p.Run(ctx)
}

// out is a JSONL sink writing to b.
func out(b *lockedBuffer) signalbox.Sink { return jsonl.New(b, jsonl.Options{}) }

// rangeSetup starts a cluster holding produceRange's history and returns
// it, the range [minute 10, minute 20], and a context bounding the test.
func rangeSetup(t *testing.T) (*embedded.Cluster, time.Time, time.Time, context.Context) {
	t.Helper()
	c := startCluster(t, embedded.WithTopic("a", 1), embedded.WithTopic("b", 1))
	produceRange(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c, rangeBase.Add(10 * time.Minute), rangeBase.Add(20 * time.Minute), ctx
}

// A job with start and until emits exactly the records stamped in the
// range, in event-time order, and returns nil by itself. A restart resumes
// at the checkpoint rather than at start: with the same until it emits
// nothing more, with a later one exactly the records after the first until.
func TestReplayTimeRange(t *testing.T) {
	c, from, to, ctx := rangeSetup(t)

	var first lockedBuffer
	if err := runRange(ctx, t, c, from.Format(time.RFC3339), to, out(&first), nil); err != nil {
		t.Fatalf("first run: %v, want nil once the watermark reaches until", err)
	}
	if got, want := keys(t, &first), expectRange(from, to); !slices.Equal(got, want) {
		t.Fatalf("first run emitted\n%q\nwant\n%q", got, want)
	}

	var again lockedBuffer
	if err := runRange(ctx, t, c, from.Format(time.RFC3339), to, out(&again), nil); err != nil {
		t.Fatalf("restart, same range: %v", err)
	}
	if got := keys(t, &again); len(got) != 0 {
		t.Errorf("restart with the same until emitted %q, want nothing", got)
	}

	later := rangeBase.Add(30 * time.Minute)
	var next lockedBuffer
	if err := runRange(ctx, t, c, from.Format(time.RFC3339), later, out(&next), nil); err != nil {
		t.Fatalf("restart, later until: %v", err)
	}
	if got, want := keys(t, &next), expectRange(to.Add(time.Millisecond), later); !slices.Equal(got, want) {
		t.Errorf("restart with until %s emitted\n%q\nwant\n%q", later.Format(time.TimeOnly), got, want)
	}
}

// A job stopped in the middle of the range and restarted emits, over both
// runs, every record of the range once, each run in event-time order.
func TestReplayTimeRangeRestartInTheMiddle(t *testing.T) {
	c, from, to, ctx := rangeSetup(t)

	// The first run is cancelled once it has handed over a few records:
	// one record batch per fetch answer, released one at a time, at most
	// one batch ahead of a sink that cancels after its second write.
	var first lockedBuffer
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	writes := 0
	cancelling := &cancelSink{Sink: out(&first), after: 2, stop: stop, n: &writes}
	onePerFetch := func(cfg *kafka.Config) { cfg.PartitionMaxBytes = 1 }
	if err := runRange(stopCtx, t, c, from.Format(time.RFC3339), to, cancelling, onePerFetch,
		signalbox.WithCheckpointInterval(time.Hour), signalbox.WithBatchSize(1), signalbox.WithMaxInflightBatches(1)); err != nil {
		t.Fatalf("first run, cancelled: %v", err)
	}
	want := expectRange(from, to)
	got1 := keys(t, &first)
	t.Logf("the first run emitted %d of the range's %d records", len(got1), len(want))
	if len(got1) == 0 || len(got1) >= len(want) {
		t.Fatalf("first run emitted %d of %d records: the stop did not fall in the middle (%q)", len(got1), len(want), got1)
	}

	var second lockedBuffer
	if err := runRange(ctx, t, c, from.Format(time.RFC3339), to, out(&second), nil); err != nil {
		t.Fatalf("second run: %v", err)
	}
	got := append(got1, keys(t, &second)...)
	if !slices.Equal(got, want) {
		t.Errorf("two runs emitted\n%q\nwant each record of the range once, in order\n%q", got, want)
	}
}

// cancelSink cancels the run after its after-th Write.
type cancelSink struct {
	signalbox.Sink
	after int
	stop  func()
	n     *int
}

func (s *cancelSink) Write(ctx context.Context, recs []record.Record) error {
	err := s.Sink.Write(ctx, recs)
	if *s.n++; *s.n == s.after {
		s.stop()
	}
	return err
}

// A partition of the range that has not delivered holds the stop: while
// topic b's fetches go unanswered nothing is emitted and the job runs on;
// once they are answered it emits the range and stops.
func TestReplayTimeRangeHeldByTheGate(t *testing.T) {
	t.Parallel()
	c, from, to, ctx := rangeSetup(t)
	release := c.DelayFetches("b", time.Hour)
	defer release()

	var buf lockedBuffer
	done := make(chan error, 1)
	go func() { done <- runRange(ctx, t, c, from.Format(time.RFC3339), to, out(&buf), nil) }()
	select {
	case err := <-done:
		t.Fatalf("the job stopped (%v) while partition b had delivered nothing", err)
	case <-time.After(time.Second):
	}
	if got := keys(t, &buf); len(got) != 0 {
		t.Fatalf("emitted %q while partition b had delivered nothing", got)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("after b's fetches are answered: %v, want nil", err)
	}
	if got, want := keys(t, &buf), expectRange(from, to); !slices.Equal(got, want) {
		t.Errorf("emitted\n%q\nwant\n%q", got, want)
	}
}

// UntilTime's value is the job file's until: an RFC 3339 event time that
// Time gives back to the nanosecond and Validate accepts; other values are
// refused naming until.
func TestUntilTimeValue(t *testing.T) {
	at := time.Date(2026, 3, 8, 1, 2, 3, 4, time.FixedZone("CET", 3600))
	u := signalbox.UntilTime(at)
	if got, ok := u.Time(); !ok || !got.Equal(at) {
		t.Errorf("UntilTime(%v).Time() = %v, %v", at, got, ok)
	}
	if err := u.Validate(); err != nil {
		t.Errorf("UntilTime(%v).Validate(): %v", at, err)
	}
	for _, bad := range []signalbox.Until{"2026-03-08", "tomorrow", "-1h"} {
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "until: ") {
			t.Errorf("Until(%q).Validate() = %v, want an error naming until", bad, err)
		}
		if _, ok := bad.Time(); ok {
			t.Errorf("Until(%q).Time() reports an event time", bad)
		}
	}
	for _, mode := range []signalbox.Until{signalbox.UntilLive, signalbox.UntilEndOffsets} {
		if _, ok := mode.Time(); ok {
			t.Errorf("%s reports an event time", mode)
		}
	}
}
