package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/sinktest"
)

var ctx = context.Background()

func cluster(t *testing.T, topics ...string) []string {
	return newCluster(t, topics...).ListenAddrs()
}

type msg struct {
	Partition int32
	Offset    int64
	Key       string
	Value     []byte
	Headers   []kgo.RecordHeader
}

// read consumes every partition of topic with the given isolation level.
// To know where to stop without timing, it first appends a sentinel record
// to each partition (non-transactionally) and reads up to it; sentinels are
// left out of the result. Under read_committed the sentinel only becomes
// visible once every transaction before it is decided.
func read(t *testing.T, brokers []string, topic string, iso kgo.IsolationLevel) []msg {
	t.Helper()
	return readWith(t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, topic, iso)
}

// readWith is read with the connection options conn.
func readWith(t *testing.T, conn []kgo.Opt, topic string, iso kgo.IsolationLevel) []msg {
	t.Helper()
	conn = conn[:len(conn):len(conn)]
	producer, err := kgo.NewClient(append(conn, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	tds, err := kadm.NewClient(producer).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []msg
	for _, p := range tds[topic].Partitions.Numbers() {
		sent, err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(sentinel)}).First()
		if err != nil {
			t.Fatal(err)
		}
		consumer, err := kgo.NewClient(append(conn, kgo.FetchIsolationLevel(iso),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))...)
		if err != nil {
			t.Fatal(err)
		}
		for done := false; !done; {
			fs := consumer.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(m *kgo.Record) {
				if m.Offset == sent.Offset {
					done = true
				}
				if !done && string(m.Value) != sentinel {
					out = append(out, msg{p, m.Offset, string(m.Key), m.Value, m.Headers})
				}
			})
		}
		consumer.Close()
	}
	return out
}

const sentinel = "__sentinel__"

// oversize pads r's value beyond the producer's default batch limit.
func oversize(r *record.Record) bool {
	r.Value = append(r.Value[:len(r.Value):len(r.Value)], bytes.Repeat([]byte(" "), kafka.DefaultBatchBytes)...)
	return true
}

func values(ms []msg) [][]byte {
	var vs [][]byte
	for _, m := range ms {
		vs = append(vs, m.Value)
	}
	return vs
}

// TestConformance: the idempotent producer. Its faults are the broker
// refusing produce requests; it has no retryable case: kgo retries
// transient produce errors itself (RecordRetries), and any error that
// reaches the sink is fatal.
func TestConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Target {
		c := newCluster(t, "out")
		brokers := c.ListenAddrs()
		return sinktest.Target{
			Sink:   kafka.New(kafka.Config{Brokers: brokers, Topic: "out"}),
			Read:   func(t *testing.T) [][]byte { return values(read(t, brokers, "out", kgo.ReadUncommitted())) },
			Poison: oversize,
			Fail: func(t *testing.T, retryable bool) (func(), bool) {
				if retryable {
					return nil, false
				}
				return refuse(c, kmsg.Produce, produceError(kerr.InvalidRecord)), true
			},
		}
	})
}

// TestConformanceTransactional: the transactional sink, a CheckpointSink.
// A produce error aborts the transaction (retryable), a newer instance's
// epoch is fatal, and a refused TxnOffsetCommit fails the checkpoint part
// of FlushCheckpoint.
func TestConformanceTransactional(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Target {
		c := newCluster(t, "out", "in")
		brokers := c.ListenAddrs()
		cfg := kafka.Config{Brokers: brokers, Topic: "out", TransactionalID: "tx-" + t.Name(), GroupID: "g"}
		return sinktest.Target{
			Sink:          kafka.New(cfg),
			Restart:       func() sinktest.Sink { return kafka.New(cfg) },
			Read:          func(t *testing.T) [][]byte { return values(read(t, brokers, "out", kgo.ReadCommitted())) },
			CloseDiscards: true,
			Poison:        oversize,
			Fail: func(t *testing.T, retryable bool) (func(), bool) {
				if retryable {
					return refuse(c, kmsg.Produce, produceError(kerr.InvalidRecord)), true
				}
				return refuse(c, kmsg.Produce, produceError(kerr.InvalidProducerEpoch)), true
			},
			FailCheckpoint: func(t *testing.T) func() {
				return refuse(c, kmsg.TxnOffsetCommit, offsetCommitError(kerr.UnknownServerError))
			},
		}
	})
}

func TestKeysAndPartitioning(t *testing.T) {
	brokers := cluster(t, "out")
	s := kafka.New(kafka.Config{Brokers: brokers, Topic: "out"})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	recs := sinktest.Records(0, 200, 20)
	for i := range recs {
		recs[i].Headers = []record.Header{{Key: "h", Value: []byte(fmt.Sprint(i))}}
	}
	_ = s.Write(ctx, recs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := read(t, brokers, "out", kgo.ReadUncommitted())
	if len(got) != 200 {
		t.Fatalf("%d records", len(got))
	}
	partOf := map[string]int32{}
	used := map[int32]bool{}
	for _, m := range got {
		var p sinktest.Payload
		_ = json.Unmarshal(m.Value, &p)
		if m.Key != p.Key {
			t.Fatalf("key %q not preserved (value says %q)", m.Key, p.Key)
		}
		if q, ok := partOf[m.Key]; ok && q != m.Partition {
			t.Fatalf("key %s in partitions %d and %d", m.Key, q, m.Partition)
		}
		partOf[m.Key] = m.Partition
		used[m.Partition] = true
		if want := kafka.Partition(&record.Record{OrderKey: m.Key}, 3); want != m.Partition {
			t.Fatalf("key %s in partition %d, want %d", m.Key, m.Partition, want)
		}
	}
	if len(used) < 2 {
		t.Fatalf("20 keys all in one partition: %v", used)
	}
}

// TestLateRecordsSayHowLate: a late record, emitted or dead-lettered (with
// its reason header), reaches the topic with its headers and one more,
// record.LateByHeader, holding its lateness in ms; a record that is not
// late gets no such header.
func TestLateRecordsSayHowLate(t *testing.T) {
	brokers := cluster(t, "out")
	s := kafka.New(kafka.Config{Brokers: brokers, Topic: "out"})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	recs := sinktest.Records(0, 3, 1) // one key: read back in order
	recs[1].Late, recs[1].LateBy = true, 1234
	recs[2].Late, recs[2].LateBy = true, 0
	recs[2].Headers = []record.Header{{Key: "h", Value: []byte("v")}, {Key: record.ReasonHeader, Value: []byte("late by 0ms")}}
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := read(t, brokers, "out", kgo.ReadUncommitted())
	want := []string{"[]", "[signalbox.late_by_ms=1234]", "[h=v signalbox.reason=late by 0ms signalbox.late_by_ms=0]"}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, m := range got {
		var hs []string
		for _, h := range m.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		if fmt.Sprint(hs) != want[i] {
			t.Errorf("record %d: headers %v, want %s", i, hs, want[i])
		}
	}
}

// TestSlabsReused: the output records of a Write are reused once the
// producer is done with them, while later Writes are produced, and reuse
// never changes a record before it is sent: every record arrives once,
// with its key and value, in its key's order.
func TestSlabsReused(t *testing.T) {
	brokers := cluster(t, "out")
	s := kafka.New(kafka.Config{Brokers: brokers, Topic: "out"})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	const writes, per = 400, 250
	recs := sinktest.Records(0, writes*per, 20)
	for w := 0; w < writes; w++ {
		if err := s.Write(ctx, recs[w*per:(w+1)*per]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if made := s.Slabs(); made >= writes {
		t.Errorf("%d slabs made for %d writes: none reused", made, writes)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := read(t, brokers, "out", kgo.ReadUncommitted())
	if len(got) != len(recs) {
		t.Fatalf("%d records, want %d", len(got), len(recs))
	}
	seen := map[int]bool{}
	last := map[string]int{}
	for _, m := range got {
		var p sinktest.Payload
		if err := json.Unmarshal(m.Value, &p); err != nil {
			t.Fatalf("value %q: %v", m.Value, err)
		}
		if m.Key != p.Key || seen[p.Seq] {
			t.Fatalf("record %d (key %q, value %s): wrong key or twice", p.Seq, m.Key, m.Value)
		}
		if l, ok := last[m.Key]; ok && l > p.Seq {
			t.Fatalf("key %s: record %d after %d", m.Key, p.Seq, l)
		}
		seen[p.Seq], last[m.Key] = true, p.Seq
	}
}

// TestBufferedRecordsBound: the producer holds at most
// Config.MaxBufferedRecords records awaiting acknowledgement (by default
// DefaultMaxBufferedRecords), whatever Config.Conn asks; a bound out of
// range is refused, naming the field.
func TestBufferedRecordsBound(t *testing.T) {
	brokers := cluster(t, "out")
	for _, tc := range []struct{ set, want int }{{0, kafka.DefaultMaxBufferedRecords}, {123, 123}} {
		s := kafka.New(kafka.Config{Brokers: brokers, Topic: "out", MaxBufferedRecords: tc.set, Conn: []kgo.Opt{kgo.MaxBufferedRecords(1_000_000)}})
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.Client().OptValue(kgo.MaxBufferedRecords); got != int64(tc.want) {
			t.Errorf("MaxBufferedRecords %d: the producer's is %v, want %d", tc.set, got, tc.want)
		}
		_ = s.Close()
	}
	for _, bad := range []int{-1, kafka.MaxMaxBufferedRecords + 1} {
		err := kafka.New(kafka.Config{Brokers: brokers, Topic: "out", MaxBufferedRecords: bad}).Open(ctx)
		if err == nil || !strings.Contains(err.Error(), "max_buffered_records") {
			t.Errorf("MaxBufferedRecords %d: Open returned %v, want an error naming the field", bad, err)
		}
	}
	// Validate judges 0 as written (the job file's explicit 0); EnsureDefaults makes it the default.
	c := kafka.Config{}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "max_buffered_records: 0 is out of range") {
		t.Errorf("Validate of 0 as written = %v, want max_buffered_records out of range", err)
	}
	if c.EnsureDefaults(); c.Validate() != nil || c.MaxBufferedRecords != kafka.DefaultMaxBufferedRecords {
		t.Errorf("after EnsureDefaults: %d, %v; want the default, valid", c.MaxBufferedRecords, c.Validate())
	}
}

// TestMurmur2MatchesJavaClient checks the hash against the Java client's
// Utils.murmur2 values.
func TestMurmur2MatchesJavaClient(t *testing.T) {
	// Vectors from librdkafka's murmur2 unit test (Java-compatible).
	for key, want := range map[string]uint32{
		"kafka":             0xd067cf64,
		"giberish123456789": 0x8f552b0c,
		"1234":              0x9fc97b14,
		"234":               0xe7c009ca,
		"34":                0x873930da,
		"4":                 0x5a4b5ca1,
	} {
		if got := kafka.Murmur2([]byte(key)); got != want {
			t.Errorf("murmur2(%q) = %#x, want %#x", key, got, want)
		}
		// The partition of an OrderKey (hashed as a string) and of a Key
		// (bytes) alike.
		part := int32(want&0x7fffffff) % 7
		if got := kafka.Partition(&record.Record{OrderKey: key, Key: []byte("other")}, 7); got != part {
			t.Errorf("partition of order key %q = %d, want %d", key, got, part)
		}
		if got := kafka.Partition(&record.Record{Key: []byte(key)}, 7); got != part {
			t.Errorf("partition of key %q = %d, want %d", key, got, part)
		}
	}
	if got := kafka.Partition(&record.Record{}, 7); got != 0 {
		t.Errorf("partition without key = %d, want 0", got)
	}
}

// TestTransactionalExactlyOnce: a job commits a checkpoint, produces more,
// and dies without committing. A new instance with the same transactional
// id fences it, restores the checkpoint and re-produces: read_committed sees
// every record exactly once, in order, and the aborted copies stay invisible.
func TestTransactionalExactlyOnce(t *testing.T) {
	brokers := cluster(t, "out", "in")
	cfg := kafka.Config{Brokers: brokers, Topic: "out", TransactionalID: "job-1", GroupID: "job-1-group"}
	recs := sinktest.Records(0, 60, 4)
	cp1 := record.Checkpoint{Watermark: 1_800_000_000_029, Partitions: []record.PartitionCheckpoint{
		{TopicPartition: record.TopicPartition{Topic: "in", Partition: 0}, Low: 27, Position: 30, End: 60, Replaying: true, Watermark: 1_800_000_000_041},
		{TopicPartition: record.TopicPartition{Topic: "in", Partition: 2}, Low: 29, Position: 29, End: 59, Watermark: 1_800_000_000_029},
	}}

	s1 := kafka.New(cfg)
	if err := s1.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if cp, err := s1.Restore(ctx); err != nil || cp != nil {
		t.Fatalf("Restore before any commit: %+v %v", cp, err)
	}
	_ = s1.Write(ctx, recs[:30])
	if err := s1.FlushCheckpoint(ctx, cp1); err != nil {
		t.Fatal(err)
	}
	_ = s1.Write(ctx, recs[30:45]) // in an open transaction when the job dies
	if err := s1.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	s2 := kafka.New(cfg) // same transactional id: fences s1, aborts its transaction
	if err := s2.Open(ctx); err != nil {
		t.Fatal(err)
	}
	cp, err := s2.Restore(ctx)
	if err != nil || cp == nil || !reflect.DeepEqual(*cp, cp1) {
		t.Fatalf("Restore = %+v, %v; want %+v", cp, err, cp1)
	}
	_ = s2.Write(ctx, recs[30:])
	if err := s2.FlushCheckpoint(ctx, record.Checkpoint{Watermark: 9, Partitions: cp1.Partitions[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	committed := read(t, brokers, "out", kgo.ReadCommitted())
	seen := map[int]int{}
	last := map[string]int{}
	for _, m := range committed {
		var p sinktest.Payload
		_ = json.Unmarshal(m.Value, &p)
		seen[p.Seq]++
		if l, ok := last[p.Key]; ok && p.Seq <= l {
			t.Fatalf("key %s: seq %d after %d", p.Key, p.Seq, l)
		}
		last[p.Key] = p.Seq
	}
	for i := 0; i < 60; i++ {
		if seen[i] != 1 {
			t.Fatalf("seq %d seen %d times under read_committed", i, seen[i])
		}
	}
	if n := len(read(t, brokers, "out", kgo.ReadUncommitted())); n != 75 {
		t.Fatalf("read_uncommitted sees %d records, want 75 (15 aborted)", n)
	}
}

// TestRestoreWithoutMetadata: an offset committed by another client (no
// signalbox metadata) restores with Position = Low, End = -1 and an unknown
// watermark for that partition, and the checkpoint's watermark is the min,
// unknown too; a partition with metadata keeps its own watermark.
func TestRestoreWithoutMetadata(t *testing.T) {
	brokers := cluster(t, "out", "in")
	cfg := kafka.Config{Brokers: brokers, Topic: "out", TransactionalID: "job-2", GroupID: "job-2-group"}
	s := kafka.New(cfg)
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mine := record.PartitionCheckpoint{TopicPartition: record.TopicPartition{Topic: "in", Partition: 0},
		Low: 5, Position: 7, End: 9, Watermark: 1_800_000_000_007}
	if err := s.FlushCheckpoint(ctx, record.Checkpoint{Watermark: 1_800_000_000_007, Partitions: []record.PartitionCheckpoint{mine}}); err != nil {
		t.Fatal(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var other kadm.Offsets
	other.Add(kadm.Offset{Topic: "in", Partition: 1, At: 12, LeaderEpoch: -1})
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, cfg.GroupID, other); err != nil {
		t.Fatal(err)
	}

	cp, err := s.Restore(ctx)
	want := record.Checkpoint{Watermark: math.MinInt64, Partitions: []record.PartitionCheckpoint{mine,
		{TopicPartition: record.TopicPartition{Topic: "in", Partition: 1}, Low: 12, Position: 12, End: -1, Watermark: math.MinInt64}}}
	if err != nil || cp == nil || !reflect.DeepEqual(*cp, want) {
		t.Fatalf("Restore = %+v, %v; want %+v", cp, err, want)
	}
}

// TestTopicMessageLimit: the output topic's max.message.bytes is below the
// producer's limit. A record too large for the topic is rejected alone,
// before anything of its batch is produced; the transaction goes on and
// read_committed readers get every other record.
func TestTopicMessageLimit(t *testing.T) {
	brokers := cluster(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	limit := "4000"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &limit}, "small"); err != nil {
		t.Fatal(err)
	}
	// The producer's debug log goes to the test's log, shown if it fails.
	s := kafka.New(kafka.Config{Brokers: brokers, Topic: "small", TransactionalID: "tx-small", Conn: []kgo.Opt{kgo.WithLogger(testLogger(t))}})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := sinktest.Records(0, 20, 3)
	recs[5].Value = []byte(fmt.Sprintf(`{"seq":5,"key":"k2","pad":%q}`, strings.Repeat("x", 5000)))
	err = s.Write(ctx, recs)
	rej := retry.AsRejected(err)
	if rej == nil || len(rej.Rejections) != 1 || rej.Rejections[0].Record.Offset != 5 || !strings.Contains(rej.Rejections[0].Reason, "max.message.bytes") {
		t.Fatalf("Write: %v", err)
	}
	rest := append(recs[:5:5], recs[6:]...)
	if err := s.Write(ctx, rest); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// This was the sink's first transaction, so its records went to a
	// topic the producer had not loaded yet (see Sink.published).
	notOngoing(t, cl, "tx-small")
	if got := read(t, brokers, "small", kgo.ReadCommitted()); len(got) != len(rest) {
		t.Fatalf("read_committed sees %d records, want %d", len(got), len(rest))
	}
}

// notOngoing fails t if the transaction of id is still open on the broker:
// a read_committed reader would wait for the transaction timeout to abort
// it.
func notOngoing(t *testing.T, cl *kgo.Client, id string) {
	t.Helper()
	txns, err := kadm.NewClient(cl).DescribeTransactions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if d := txns[id]; d.Err != nil || d.State == "Ongoing" {
		t.Fatalf("transaction %s after Flush: state %q (partitions %v), err %v; want it ended", id, d.State, d.Topics, d.Err)
	}
}

// testLogger is a kgo debug logger into t's log (shown when t fails),
// silent once t is over: kgo's goroutines may log after its last line.
func testLogger(t *testing.T) kgo.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return kgo.BasicLogger(w, kgo.LogLevelDebug, nil)
}

type testLogWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// joined is a kgo group member of group reading topic, once it has joined.
func joined(t *testing.T, brokers []string, group, topic string) *kgo.Client {
	t.Helper()
	// An eager balancer: one rebalance per join (a cooperative one takes
	// two, the second after the members report the first generation).
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.HeartbeatInterval(100e6), kgo.Balancers(kgo.RangeBalancer()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// membership polls cl and the other members until cl's generation is
// above after and every other member has joined that same generation (the
// rebalance that admitted them is over), and returns cl's membership.
func membership(t *testing.T, cl *kgo.Client, group string, after int32, others ...*kgo.Client) *record.GroupMember {
	t.Helper()
	for range 500 {
		for _, c := range append([]*kgo.Client{cl}, others...) {
			pctx, cancel := context.WithTimeout(ctx, 20e6)
			c.PollFetches(pctx)
			cancel()
		}
		id, gen := cl.GroupMetadata()
		settled := id != "" && gen > after
		for _, c := range others {
			if oid, ogen := c.GroupMetadata(); oid == "" || ogen != gen {
				settled = false
			}
		}
		if settled {
			return &record.GroupMember{Group: group, Generation: gen, MemberID: id}
		}
	}
	t.Fatalf("no generation above %d that every member joined", after)
	return nil
}

// in is the input partition of the fencing tests, and cpAt a checkpoint
// of it at low.
var in = record.TopicPartition{Topic: "in", Partition: 0}

func cpAt(low int64) record.Checkpoint {
	return record.Checkpoint{Watermark: 1, Partitions: []record.PartitionCheckpoint{{TopicPartition: in, Low: low, Position: low, Watermark: 1}}}
}

// claimedSink starts a cluster (topics out and in), a member m1 of group
// reading in, and a transactional sink (its id: group) that claimed in
// under m1's generation gen1. The caller closes the sink.
func claimedSink(t *testing.T, group string) (brokers []string, s *kafka.Sink, m1 *kgo.Client, gen1 *record.GroupMember) {
	t.Helper()
	brokers = cluster(t, "out", "in")
	m1 = joined(t, brokers, group, "in")
	gen1 = membership(t, m1, group, 0)
	s = kafka.New(kafka.Config{Brokers: brokers, Topic: "out", TransactionalID: group, GroupID: group})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Claim(ctx, gen1, []record.TopicPartition{in}); err != nil {
		t.Fatal(err)
	}
	return brokers, s, m1, gen1
}

// TestStaleGenerationIsFenced (invariant 9): offsets sent under a
// generation that is over are refused by the coordinator; the transaction
// is aborted with its records, later writes are dropped, and a Claim under
// the new generation commits again.
func TestStaleGenerationIsFenced(t *testing.T) {
	const group = "fenced-group"
	brokers, s, m1, gen1 := claimedSink(t, group)
	defer s.Close()
	recs := sinktest.Records(0, 30, 1)
	_ = s.Write(ctx, recs[:10])
	if err := s.FlushCheckpoint(ctx, cpAt(10)); err != nil {
		t.Fatalf("FlushCheckpoint under the current generation: %v", err)
	}

	m2 := joined(t, brokers, group, "in") // a second member: the group moves on
	gen2 := membership(t, m1, group, gen1.Generation, m2)
	_ = s.Write(ctx, recs[10:20])
	fe := retry.AsFenced(s.FlushCheckpoint(ctx, cpAt(20)))
	if fe == nil || !reflect.DeepEqual(fe.Partitions, []record.TopicPartition{in}) {
		t.Fatalf("FlushCheckpoint under an old generation: %v, want fenced [%v]", fe, in)
	}
	_ = s.Write(ctx, recs[20:25]) // dropped: not this member's to write
	if fe := retry.AsFenced(s.FlushCheckpoint(ctx, cpAt(25))); fe == nil {
		t.Fatal("a fenced sink committed before its next Claim")
	}
	if got := committedOffset(t, brokers, group, in); got != 10 {
		t.Fatalf("committed offset %d after the fence, want 10", got)
	}

	if err := s.Claim(ctx, gen2, []record.TopicPartition{in}); err != nil {
		t.Fatal(err)
	}
	_ = s.Write(ctx, recs[10:30])
	if err := s.FlushCheckpoint(ctx, cpAt(30)); err != nil {
		t.Fatalf("FlushCheckpoint after the new Claim: %v", err)
	}
	if got := committedOffset(t, brokers, group, in); got != 30 {
		t.Fatalf("committed offset %d, want 30", got)
	}
	seen := seqCounts(read(t, brokers, "out", kgo.ReadCommitted()))
	for i := range 30 {
		if seen[i] != 1 {
			t.Fatalf("seq %d seen %d times under read_committed, want once", i, seen[i])
		}
	}
}

// TestFencedFinalTransactionThenClose (invariant 9, the close path): the
// last checkpoint before Close is fenced. Its transaction is aborted with
// its records, a Write after it is dropped, and Close succeeds without
// producing or committing anything more.
func TestFencedFinalTransactionThenClose(t *testing.T) {
	const group = "fenced-close"
	brokers, s, m1, gen1 := claimedSink(t, group)
	recs := sinktest.Records(0, 25, 1)
	_ = s.Write(ctx, recs[:10])
	if err := s.FlushCheckpoint(ctx, cpAt(10)); err != nil {
		t.Fatal(err)
	}
	membership(t, m1, group, gen1.Generation, joined(t, brokers, group, "in"))
	_ = s.Write(ctx, recs[10:20])
	if fe := retry.AsFenced(s.FlushCheckpoint(ctx, cpAt(20))); fe == nil {
		t.Fatal("the final checkpoint under an old generation was not fenced")
	}
	_ = s.Write(ctx, recs[20:25])
	if err := s.Close(); err != nil {
		t.Fatalf("Close after a fenced final checkpoint: %v", err)
	}
	if got := committedOffset(t, brokers, group, in); got != 10 {
		t.Fatalf("committed offset %d after the fence and Close, want 10", got)
	}
	var seqs []int
	for _, m := range read(t, brokers, "out", kgo.ReadCommitted()) {
		var p sinktest.Payload
		_ = json.Unmarshal(m.Value, &p)
		seqs = append(seqs, p.Seq)
	}
	slices.Sort(seqs)
	if !slices.Equal(seqs, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("read_committed sees seqs %v, want 0..9 only", seqs)
	}
}

func committedOffset(t *testing.T, brokers []string, group string, tp record.TopicPartition) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resp.Lookup(tp.Topic, tp.Partition); ok && o.Err == nil {
		return o.At
	}
	return -1
}

// seqCounts counts the records of each sinktest payload sequence number.
func seqCounts(ms []msg) map[int]int {
	seen := map[int]int{}
	for _, m := range ms {
		var p sinktest.Payload
		_ = json.Unmarshal(m.Value, &p)
		seen[p.Seq]++
	}
	return seen
}
