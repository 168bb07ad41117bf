package kafka_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/sinktest"
	source "github.com/signalbox/signalbox/sources/kafka"
)

// TestOffsetsOnlyTransaction: a checkpoint with no record written since
// the last one commits its offsets, before, between and after transactions
// that carry records, and the transactions with records still commit.
func TestOffsetsOnlyTransaction(t *testing.T) {
	brokers := cluster(t, "out", "in")
	cfg := kafka.Config{Brokers: brokers, Topic: "out", TransactionalID: "offsets-only", GroupID: "offsets-only"}
	s := kafka.New(cfg)
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	recs := sinktest.Records(0, 20, 4)
	steps := []struct {
		write []record.Record
		low   int64
	}{{nil, 3}, {recs[:10], 13}, {nil, 14}, {nil, 15}, {recs[10:], 25}, {nil, 26}}
	for i, st := range steps {
		if st.write != nil {
			if err := s.Write(ctx, st.write); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.FlushCheckpoint(ctx, cpAt(st.low)); err != nil {
			t.Fatalf("step %d: FlushCheckpoint(%d): %v", i, st.low, err)
		}
		if got := committedOffset(t, brokers, cfg.GroupID, in); got != st.low {
			t.Fatalf("step %d: committed offset %d, want %d", i, got, st.low)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	seen := seqCounts(read(t, brokers, "out", kgo.ReadCommitted()))
	for i := range 20 {
		if seen[i] != 1 {
			t.Fatalf("seq %d seen %d times under read_committed, want once", i, seen[i])
		}
	}
	s2 := kafka.New(cfg)
	if err := s2.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if cp, err := s2.Restore(ctx); err != nil || cp == nil || !reflect.DeepEqual(*cp, cpAt(26)) {
		t.Fatalf("Restore = %+v, %v; want %+v", cp, err, cpAt(26))
	}
}

// TestStaleGenerationFencedWithoutRecords (invariant 9): a checkpoint with
// no records, sent under a generation that is over, is refused and commits
// nothing; the sink commits again after a Claim under the new generation.
func TestStaleGenerationFencedWithoutRecords(t *testing.T) {
	const group = "fenced-empty"
	brokers, s, m1, gen1 := claimedSink(t, group)
	defer s.Close()
	if err := s.FlushCheckpoint(ctx, cpAt(5)); err != nil {
		t.Fatalf("FlushCheckpoint under the current generation: %v", err)
	}
	gen2 := membership(t, m1, group, gen1.Generation, joined(t, brokers, group, "in"))
	fe := retry.AsFenced(s.FlushCheckpoint(ctx, cpAt(9)))
	if fe == nil || !reflect.DeepEqual(fe.Partitions, []record.TopicPartition{in}) {
		t.Fatalf("FlushCheckpoint under an old generation: %v, want fenced [%v]", fe, in)
	}
	if got := committedOffset(t, brokers, group, in); got != 5 {
		t.Fatalf("committed offset %d after the fence, want 5", got)
	}
	if err := s.Claim(ctx, gen2, []record.TopicPartition{in}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushCheckpoint(ctx, cpAt(9)); err != nil {
		t.Fatalf("FlushCheckpoint after the new Claim: %v", err)
	}
	if got := committedOffset(t, brokers, group, in); got != 9 {
		t.Fatalf("committed offset %d, want 9", got)
	}
}

// TestSCRAMSHA256: the sink authenticates with the source's connection
// options (SASL/SCRAM-SHA-256), in both modes; a wrong password fails Open
// at once, naming the cause.
func TestSCRAMSHA256(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("out", 3), embedded.WithTopic("in", 1),
		embedded.WithUser(embedded.MechanismScramSHA256, "signalbox", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	conn := func(password string) []kgo.Opt {
		opts, err := source.Config{Brokers: c.Addrs(), Topics: []string{"in"},
			SASL: source.SASL{Mechanism: source.SASLScramSHA256, User: "signalbox", Password: password}}.ConnOpts()
		if err != nil {
			t.Fatal(err)
		}
		return opts
	}
	recs := sinktest.Records(0, 30, 3)
	for _, txn := range []string{"", "scram-txn"} {
		t.Run("transactional_id="+txn, func(t *testing.T) {
			s := kafka.New(kafka.Config{Brokers: c.Addrs(), Topic: "out", TransactionalID: txn, GroupID: "scram", Conn: conn("s3cret")})
			if err := s.Open(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(ctx, recs[:15]); err != nil {
				t.Fatal(err)
			}
			if err := s.FlushCheckpoint(ctx, cpAt(15)); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(ctx, recs[15:]); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	seen := seqCounts(readWith(t, c.ClientOptions(), "out", kgo.ReadCommitted()))
	for i := range 30 {
		if seen[i] != 2 {
			t.Fatalf("seq %d seen %d times, want twice (once per mode)", i, seen[i])
		}
	}

	s := kafka.New(kafka.Config{Brokers: c.Addrs(), Topic: "out", Conn: conn("wrong"), StartupTimeout: time.Minute})
	start := time.Now()
	err = s.Open(ctx)
	if err == nil {
		_ = s.Close()
		t.Fatal("Open with a wrong password succeeded")
	}
	t.Logf("Open failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if errors.Is(err, kafka.ErrStartupTimeout) || !strings.Contains(strings.ToLower(err.Error()), "sasl") {
		t.Fatalf("Open with a wrong password: %v, want the SASL refusal", err)
	}
}

// TestAbortableFailureReproduces (invariant 6): the coordinator refuses a
// transaction's offsets with an error that is not a fence. The
// transaction is aborted and FlushCheckpoint returns a retryable error; the
// next FlushCheckpoint re-produces the aborted records, in order, and
// commits them with the offsets, once each for read_committed readers.
func TestAbortableFailureReproduces(t *testing.T) {
	for _, records := range []int{0, 12} {
		t.Run(fmt.Sprintf("records=%d", records), func(t *testing.T) {
			c := newCluster(t, "out", "in")
			brokers := c.ListenAddrs()
			refused := refuseOneOffsetCommit(c)
			cfg := kafka.Config{Brokers: brokers, Topic: "out", TransactionalID: "abortable", GroupID: "abortable"}
			s := kafka.New(cfg)
			if err := s.Open(ctx); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			recs := sinktest.Records(0, records, 3)
			if err := s.Write(ctx, recs); err != nil {
				t.Fatal(err)
			}
			err := s.FlushCheckpoint(ctx, cpAt(7))
			if !refused.Load() || err == nil || !retry.IsRetryable(err) {
				t.Fatalf("FlushCheckpoint with its offsets refused: %v (refused %v), want a retryable error", err, refused.Load())
			}
			if got := committedOffset(t, brokers, cfg.GroupID, in); got != -1 {
				t.Fatalf("committed offset %d after the abort, want none", got)
			}
			if err := s.FlushCheckpoint(ctx, cpAt(7)); err != nil {
				t.Fatalf("FlushCheckpoint after the abort: %v", err)
			}
			if got := committedOffset(t, brokers, cfg.GroupID, in); got != 7 {
				t.Fatalf("committed offset %d, want 7", got)
			}
			onceInOrder(t, read(t, brokers, "out", kgo.ReadCommitted()), records)
			if n := len(read(t, brokers, "out", kgo.ReadUncommitted())); n != 2*records {
				t.Fatalf("read_uncommitted sees %d records, want %d (the aborted copies too)", n, 2*records)
			}
		})
	}
}

// TestReplacedStaticMemberIsFenced (invariant 9): a static member (group
// instance id) replaced by a new member with the same instance id has its
// checkpoint refused (FENCED_INSTANCE_ID), and nothing is committed.
func TestReplacedStaticMemberIsFenced(t *testing.T) {
	const group = "static-group"
	brokers := cluster(t, "out", "in")
	static := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics("in"),
			kgo.InstanceID("instance-1"), kgo.HeartbeatInterval(100e6))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	m1 := static()
	old := membership(t, m1, group, 0)
	old.InstanceID = "instance-1"
	s := kafka.New(kafka.Config{Brokers: brokers, Topic: "out", TransactionalID: group, GroupID: group})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Claim(ctx, old, []record.TopicPartition{in}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, sinktest.Records(0, 5, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushCheckpoint(ctx, cpAt(5)); err != nil {
		t.Fatalf("FlushCheckpoint as the current static member: %v", err)
	}
	m1.CloseAllowingRebalance() // a static member leaves without a LeaveGroup
	m2 := static()
	t.Cleanup(m2.Close)
	if now := membership(t, m2, group, -1); now.MemberID == old.MemberID {
		t.Fatalf("the new member kept the old member id %s", old.MemberID)
	}
	if err := s.Write(ctx, sinktest.Records(5, 5, 1)); err != nil {
		t.Fatal(err)
	}
	fe := retry.AsFenced(s.FlushCheckpoint(ctx, cpAt(10)))
	if fe == nil || !errors.Is(fe, kerr.FencedInstanceID) {
		t.Fatalf("FlushCheckpoint as the replaced static member: %v, want fenced by FENCED_INSTANCE_ID", fe)
	}
	if got := committedOffset(t, brokers, group, in); got != 5 {
		t.Fatalf("committed offset %d after the fence, want 5", got)
	}
	if n := len(read(t, brokers, "out", kgo.ReadCommitted())); n != 5 {
		t.Fatalf("read_committed sees %d records, want the 5 of the first transaction", n)
	}
}

// TestAbortedTransactionOverSeveralWrites: the records of an aborted
// transaction of several Writes, each acknowledged before the next, are
// re-produced, in order, from the output records the sink kept for it;
// once a transaction commits those are reused by the next Writes, and
// nothing of either transaction changes: read_committed sees every record
// once, in its key's order.
func TestAbortedTransactionOverSeveralWrites(t *testing.T) {
	c := newCluster(t, "out", "in")
	brokers := c.ListenAddrs()
	refused := refuseOneOffsetCommit(c)
	s := kafka.New(kafka.Config{Brokers: brokers, Topic: "out", TransactionalID: "several", GroupID: "several"})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const writes, per = 5, 100
	recs := sinktest.Records(0, 2*writes*per, 7)
	write := func(first int) {
		for w := 0; w < writes; w++ {
			at := first + w*per
			if err := s.Write(ctx, recs[at:at+per]); err != nil {
				t.Fatal(err)
			}
			if err := s.Wait(ctx); err != nil { // acknowledged, not committed: kept all the same
				t.Fatal(err)
			}
		}
	}
	write(0)
	if err := s.FlushCheckpoint(ctx, cpAt(7)); !refused.Load() || err == nil || !retry.IsRetryable(err) {
		t.Fatalf("FlushCheckpoint with its offsets refused: %v (refused %v), want a retryable error", err, refused.Load())
	}
	if err := s.FlushCheckpoint(ctx, cpAt(7)); err != nil {
		t.Fatalf("FlushCheckpoint after the abort: %v", err)
	}
	write(writes * per)
	if made := s.Slabs(); made != writes {
		t.Errorf("%d slabs made for two transactions of %d writes, want %d: the first's not reused", made, writes, writes)
	}
	if err := s.FlushCheckpoint(ctx, cpAt(9)); err != nil {
		t.Fatal(err)
	}
	onceInOrder(t, read(t, brokers, "out", kgo.ReadCommitted()), len(recs))
}

// onceInOrder checks that committed holds sequence numbers 0..n-1 once
// each, each key's in increasing order, and each record under its own key.
func onceInOrder(t *testing.T, committed []msg, n int) {
	t.Helper()
	seen, last := seqCounts(committed), map[string]int{}
	for i := range n {
		if seen[i] != 1 {
			t.Fatalf("seq %d seen %d times under read_committed, want once", i, seen[i])
		}
	}
	for _, m := range committed {
		var p sinktest.Payload
		if err := json.Unmarshal(m.Value, &p); err != nil || p.Key != m.Key {
			t.Fatalf("record %q (key %q): %v", m.Value, m.Key, err)
		}
		if l, ok := last[p.Key]; ok && p.Seq <= l {
			t.Fatalf("key %s: seq %d after %d", p.Key, p.Seq, l)
		}
		last[p.Key] = p.Seq
	}
}

// refuseOneOffsetCommit makes the cluster refuse the next TxnOffsetCommit
// with a retryable error (once: kfake drops the control after it
// answers); the flag reports that it did.
func refuseOneOffsetCommit(c *kfake.Cluster) *atomic.Bool {
	var refused atomic.Bool
	answer := offsetCommitError(kerr.UnknownServerError)
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		refused.Store(true)
		return answer(kr), nil, true
	})
	return &refused
}
