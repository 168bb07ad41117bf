package signalbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// runLateTimeline runs lateTimeline to the end into sink with the late
// policy and opts.
func runLateTimeline(t *testing.T, policy signalbox.LatePolicy, sink signalbox.Sink, opts ...signalbox.Option) *signalbox.Pipeline {
	t.Helper()
	p, err := signalbox.New(lateTimeline(), append([]signalbox.Option{tsInputs("a", "b"),
		signalbox.WithDelay(time.Second), signalbox.WithClock(frozen), signalbox.WithLatePolicy(policy),
		signalbox.WithSink(sink), signalbox.WithUntil(signalbox.UntilEndOffsets)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOrderingAuditCountsOnlyLateEmissions: the audit at the sink boundary
// counts out-of-order records; without late records emitted (drop,
// dead-letter) it stays 0, with late: emit it counts the late one.
func TestOrderingAuditCountsOnlyLateEmissions(t *testing.T) {
	for _, tc := range []struct {
		policy signalbox.LatePolicy
		want   int64
	}{{signalbox.LateEmit, 1}, {signalbox.LateDeadLetter, 0}, {signalbox.LateDrop, 0}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			out, dead := &collect{}, &collect{}
			st := runLateTimeline(t, tc.policy, out, signalbox.WithDeadLetter(dead)).Stats()
			if len(st.Sinks) != 2 || st.Sinks[0].Name != "sink" || st.Sinks[1].Name != "dead_letter" {
				t.Fatalf("sinks %+v, want the test's sink and dead_letter", st.Sinks)
			}
			s := st.Sinks[0]
			if s.OutOfOrder != tc.want {
				t.Errorf("out of order = %d, want %d", s.OutOfOrder, tc.want)
			}
			if s.Records != int64(len(out.lines())) || s.BatchRecords.Count == 0 || s.WriteSeconds.Count != s.BatchRecords.Count {
				t.Errorf("sink counted %d records in %d batches (%d timed writes), the sink got %d",
					s.Records, s.BatchRecords.Count, s.WriteSeconds.Count, len(out.lines()))
			}
			if st.Sinks[1].OutOfOrder != 0 || st.Sinks[1].Records != int64(len(dead.lines())) {
				t.Errorf("dead-letter sink stats %+v, it got %d records", st.Sinks[1], len(dead.lines()))
			}
			if st.Rebalances != 1 {
				t.Errorf("rebalances = %d, want 1 (the first assignment)", st.Rebalances)
			}
			if st.SinksOpen {
				t.Error("SinksOpen after Run returned")
			}
		})
	}
}

// flaky fails its first Write with a retryable error.
type flaky struct {
	collect
	failed atomic.Bool
}

func (f *flaky) Write(ctx context.Context, b []record.Record) error {
	if !f.failed.Swap(true) {
		return retry.Retryable(errors.New("busy"))
	}
	return f.collect.Write(ctx, b)
}

// TestDeliveryStats: commits, the last committed offset per partition,
// checkpoint durations and sink retries are counted; a retried batch is
// audited once, so it is not out of order.
func TestDeliveryStats(t *testing.T) {
	out := &flaky{}
	st := runLateTimeline(t, signalbox.LateDrop, out).Stats()
	d := st.Delivery
	if d.Commits == 0 || d.CommitFailures != 0 {
		t.Errorf("commits %d, failures %d; want some commits, no failure", d.Commits, d.CommitFailures)
	}
	want := []signalbox.CommittedOffset{{TopicPartition: tp("a", 0), Offset: 2}, {TopicPartition: tp("b", 0), Offset: 2}}
	if len(d.Committed) != 2 || d.Committed[0] != want[0] || d.Committed[1] != want[1] {
		t.Errorf("committed %+v, want %+v", d.Committed, want)
	}
	if st.Checkpoints == 0 || uint64(st.Checkpoints) != d.CheckpointSeconds.Count {
		t.Errorf("%d checkpoints, %d durations", st.Checkpoints, d.CheckpointSeconds.Count)
	}
	s := st.Sinks[0]
	if s.Errors != 1 || s.Retries != 1 || s.OutOfOrder != 0 || s.Records != 3 {
		t.Errorf("sink stats: %d errors, %d retries, %d out of order, %d records; want 1, 1, 0, 3", s.Errors, s.Retries, s.OutOfOrder, s.Records)
	}
}

// rejecting refuses every record of partition b/0 at offset 0 as bad data.
type rejecting struct{ collect }

func (s *rejecting) Write(ctx context.Context, b []record.Record) error {
	var rs []retry.Rejection
	for _, r := range b {
		if r.Topic == "b" && r.Offset == 0 {
			rs = append(rs, retry.Rejection{Record: r, Reason: "bad"})
		}
	}
	if err := retry.Rejected(rs...); err != nil {
		return err
	}
	return s.collect.Write(ctx, b)
}

// TestRejectedRecordsCounted: a record the sink refuses as bad data counts
// as rejected, not as a sink error, and is not among its records written.
func TestRejectedRecordsCounted(t *testing.T) {
	out, dead := &rejecting{}, &collect{}
	s := runLateTimeline(t, signalbox.LateDrop, out, signalbox.WithDeadLetter(dead)).Stats().Sinks[0]
	if s.Rejected != 1 || s.Errors != 0 || s.Records != 2 || len(dead.lines()) != 1 {
		t.Errorf("sink stats %d rejected, %d errors, %d records; %d dead-lettered; want 1, 0, 2, 1", s.Rejected, s.Errors, s.Records, len(dead.lines()))
	}
}
