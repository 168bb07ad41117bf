package signalbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
)

// poisoned is a replay of two partitions over the last minute of event
// time, one record every 10 ms each, in which a/0's 100th record claims the
// year 3000: a clock or parsing bug upstream.
func poisoned(now time.Time) ([]script.Partition, int) {
	const n = 3000
	base := now.Add(-time.Minute).UnixMilli()
	var parts []script.Partition
	for p := range int32(2) {
		sp := script.Partition{TopicPartition: tp("a", p)}
		for i := range int64(n) {
			ts := base + i*10 + int64(p)
			if p == 0 && i == 100 {
				ts = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
			}
			sp.Records = append(sp.Records, tsRecord("a", p, i, "k", ts))
		}
		parts = append(parts, sp)
	}
	return parts, 2 * n
}

// TestFutureRecordDoesNotPoisonTheWatermark: the record from the year 3000
// goes to the dead-letter sink with its reason and is counted; it does not
// move its partition's contribution, so no other record is late and the
// output is complete and ordered. Without the guard (WithMaxFuture(0)) the
// same replay makes most records late: the scenario does exercise it.
func TestFutureRecordDoesNotPoisonTheWatermark(t *testing.T) {
	run := func(opts ...signalbox.Option) (*signalbox.Pipeline, *collect, *collect) {
		parts, _ := poisoned(time.Now())
		out, dead := &collect{}, &collect{}
		p, err := signalbox.New(script.New(3, 50, parts...), append([]signalbox.Option{tsInputs("a"),
			signalbox.WithDelay(100 * time.Millisecond), signalbox.WithSink(out), signalbox.WithDeadLetter(dead),
			signalbox.WithUntil(signalbox.UntilEndOffsets)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
		return p, out, dead
	}
	p, out, dead := run()
	st := p.Stats()
	if st.Future != 1 || st.Dead != 1 || len(dead.records) != 1 {
		t.Fatalf("future %d, dead %d (%d dead-lettered), want 1", st.Future, st.Dead, len(dead.records))
	}
	if reason := dead.lines()[0]; !strings.Contains(reason, "a/0@100") || !strings.Contains(reason, "max_future") {
		t.Errorf("dead letter %q: want a/0@100 with a reason naming max_future", reason)
	}
	if late := st.LateTotal().Count; late != 0 {
		t.Errorf("%d late records with the guard", late)
	}
	if len(out.records) != 5999 {
		t.Errorf("%d records out, want 5999", len(out.records))
	}
	for i := 1; i < len(out.records); i++ {
		if out.records[i].EventTime < out.records[i-1].EventTime {
			t.Fatalf("out of order at %d", i)
		}
	}
	if st.Watermark > time.Now().UnixMilli() {
		t.Errorf("watermark %d is in the future", st.Watermark)
	}

	p, _, _ = run(signalbox.WithMaxFuture(0))
	if late := p.Stats().LateTotal().Count; late < 1000 {
		t.Errorf("without the guard only %d records were late: the scenario does not exercise it", late)
	}
}

// futureCheckpointSink is a CheckpointSink whose stored checkpoint was
// poisoned before the guard existed.
type futureCheckpointSink struct {
	collect
	wm int64
}

func (s *futureCheckpointSink) Restore(context.Context) (*record.Checkpoint, error) {
	return &record.Checkpoint{Watermark: s.wm, Partitions: []record.PartitionCheckpoint{
		{TopicPartition: tp("a", 0), Low: 5, Position: 5, Watermark: s.wm}}}, nil
}

func (s *futureCheckpointSink) FlushCheckpoint(ctx context.Context, _ record.Checkpoint) error {
	return nil
}

// TestFutureCheckpointIsRefused: a checkpoint whose watermark is beyond the
// clock + max_future is refused with a clear error, never restored; one
// within the bound is accepted.
func TestFutureCheckpointIsRefused(t *testing.T) {
	parts, _ := poisoned(time.Now())
	for _, c := range []struct {
		wm   time.Time
		fail bool
	}{{time.Now().Add(24 * time.Hour), true}, {time.Now().Add(-time.Hour), false}} {
		sink := &futureCheckpointSink{wm: c.wm.UnixMilli()}
		p, err := signalbox.New(script.New(3, 50, parts...), tsInputs("a"), signalbox.WithSink(sink),
			signalbox.WithDeadLetter(&collect{}), signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			t.Fatal(err)
		}
		err = runBounded(t, p)
		if got := errors.Is(err, signalbox.ErrFutureCheckpoint); got != c.fail {
			t.Fatalf("checkpoint at %v: Run = %v", c.wm, err)
		}
		if c.fail && !strings.Contains(err.Error(), "max_future") {
			t.Errorf("error %q does not name max_future", err)
		}
	}
}
