package scaletest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sources/kafka"
)

// TestGroupTransactionalSinkTakeover: group mode with the transactional
// Kafka sink (exactly-once). A runs alone, B joins and restores the
// checkpoint as it is then; A keeps emitting and checkpointing its tasks,
// then leaves; B takes A's tasks over. B must resume them from A's latest
// checkpoint, not from the one it read when it started: a read_committed
// reader of the output topic sees every input record exactly once.
func TestGroupTransactionalSinkTakeover(t *testing.T) {
	t.Parallel()
	const out = "ordered-out"
	c, err := embedded.Start(embedded.WithTopic(topicA, nParts), embedded.WithTopic(topicB, nParts), embedded.WithTopic(out, nParts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	txnSink := func(id string) signalbox.Option {
		co, err := kafka.Config{Brokers: c.Addrs(), Topics: topics}.ConnOpts()
		if err != nil {
			t.Fatal(err)
		}
		return signalbox.WithSink(kafkasink.New(kafkasink.Config{Brokers: c.Addrs(), Topic: out,
			TransactionalID: id, GroupID: group, Conn: co}))
	}
	total := takeover(t, c, txnSink)

	// Every input record is in the output topic once, for read_committed.
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.ConsumeTopics(out),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for int64(len(seen)) < total && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	cl.PollFetches(ctx) // anything beyond: duplicates
	dups := 0
	for v, k := range seen {
		if k > 1 {
			dups += k - 1
			if dups < 4 {
				t.Errorf("%s is in the output %d times", v, k)
			}
		}
	}
	t.Logf("input %d records, output %d distinct, %d duplicates", total, len(seen), dups)
	if int64(len(seen)) != total || dups > 0 {
		t.Fatalf("read_committed output holds %d distinct records (want %d) and %d duplicates", len(seen), total, dups)
	}
}

// takeover runs the scenario with the sink each member gets (by
// transactional id) and returns how many records were produced.
func takeover(t *testing.T, c *embedded.Cluster, sinkFor func(id string) signalbox.Option) int64 {
	h := newHarness(t, c)
	h.noLetGo = true
	stopLive, _ := liveProducer(t, c, fixedCounts(nParts))
	a := newInstance(t, h, "A", c)
	stopA := a.start(t, sinkFor("txn-a"))
	waitFor(t, "A to catch up", a.replayed.Load)
	waitGrowth(t, "A to emit live records", 100, lineCount(t, a.out(t)))
	waitGrowth(t, "A to checkpoint them", 1, a.checkpoints)
	b := newInstance(t, h, "B", c)
	stopB := b.start(t, sinkFor("txn-b"))
	waitFor(t, "B to own some tasks", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.owned) > 0
	})
	waitGrowth(t, "A to emit more of its tasks", 101, lineCount(t, a.out(t)))
	if err := stopA(); err != nil {
		t.Fatalf("A: %v", err)
	}
	waitFor(t, "B to own every task", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.owned) == 2*nParts
	})
	waitGrowth(t, "live records at B alone", 100, lineCount(t, b.out(t)))
	stopLive()
	end := highWater(t, c, map[string]int32{topicA: nParts, topicB: nParts})
	total := int64(0)
	for _, e := range end {
		total += e
	}
	deadline := time.Now().Add(hangGuard)
	for !coveredBy([][]line{a.sink.lines(t), b.sink.lines(t)}, end) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	waitGrowth(t, "a checkpoint to commit the last transaction", 1, b.checkpoints)
	if err := stopB(); err != nil {
		t.Fatalf("B: %v", err)
	}
	return total
}
