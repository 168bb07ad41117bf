package signalbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/pgtest"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/postgres"
	"github.com/signalbox/signalbox/sources/kafka"
)

// These tests use the Kafka sink without a transactional id as a library
// user would, without the job file: it has the CheckpointSink methods, but
// says it is not exactly once (SinkInfo), and the engine must take it at
// its word.

// plainKafkaParts is the partitions of the input topic "in" and the output
// topic "out".
const plainKafkaParts = 2

// plainKafkaDelay is the jobs' delay: the watermark of a live run stays
// this far behind the clock.
const plainKafkaDelay = time.Hour

// plainKafkaCluster starts a broker whose topic "in" holds, per partition,
// n records 65 min old interleaved with n records 10 min old (Kafka
// timestamps, their event times), none late: a live run with
// plainKafkaDelay releases the older ones and keeps the others parked, so
// its committed offsets stay at the first parked one, below records it
// emitted.
func plainKafkaCluster(t *testing.T, n int) *embedded.Cluster {
	t.Helper()
	c, err := embedded.Start(embedded.WithTopic("in", plainKafkaParts), embedded.WithTopic("out", plainKafkaParts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	now := time.Now()
	var recs []*kgo.Record
	for p := range int32(plainKafkaParts) {
		for i := range n {
			for _, ts := range []time.Time{now.Add(-65 * time.Minute), now.Add(-10 * time.Minute)} {
				r := embedded.Record("in", p, fmt.Sprint("k", i%7), fmt.Sprintf(`{"p":%d,"i":%d}`, p, i))
				r.Timestamp = ts.Add(time.Duration(i) * time.Millisecond)
				recs = append(recs, r)
			}
		}
	}
	// One Produce (one client) for all: a client per record cost 25 ms each.
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	return c
}

// plainKafkaSink is the Kafka sink writing "out", not transactional.
func plainKafkaSink(c *embedded.Cluster) *kafkasink.Sink {
	return kafkasink.New(kafkasink.Config{Brokers: c.Addrs(), Topic: "out"})
}

// outCount is how many records "out" holds (it is written without
// transactions: its high-water marks).
func outCount(t *testing.T, c *embedded.Cluster) int64 {
	t.Helper()
	var n int64
	for p := range int32(plainKafkaParts) {
		o, err := c.ListOffsets(context.Background(), "out", p)
		if err != nil {
			t.Fatal(err)
		}
		n += o.HighWater
	}
	return n
}

// runPlainKafka runs a group job from "in" to the plain Kafka sink (and
// the options given) until done reports true, then stops it cleanly (its
// context cancelled, as SIGINT does). checkpoints counts the checkpoints
// made once the replay was done.
func runPlainKafka(t *testing.T, c *embedded.Cluster, done func(checkpoints int64) bool, opts ...signalbox.Option) {
	t.Helper()
	src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: []string{"in"}, Group: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	var replayed atomic.Bool
	var checkpoints atomic.Int64
	p, err := signalbox.New(src, append([]signalbox.Option{
		signalbox.WithInputs(signalbox.Input{Topic: "in"}),
		signalbox.WithSink(plainKafkaSink(c)),
		signalbox.WithCheckpointInterval(50 * time.Millisecond),
		signalbox.WithDelay(plainKafkaDelay),
		signalbox.WithObserver(func(e signalbox.Event) {
			switch {
			case e.Kind == signalbox.EventReplayDone:
				replayed.Store(true)
			case e.Kind == signalbox.EventCheckpoint && replayed.Load():
				checkpoints.Add(1)
			}
		}),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	deadline := time.After(30 * time.Second)
	for !done(checkpoints.Load()) {
		select {
		case err := <-ran:
			t.Fatalf("Run returned before the stop: %v", err)
		case <-deadline:
			st := p.Stats()
			t.Fatalf("not done in 30s: %d records out, %d checkpoints since the replay; stats in %d out %d parked %d wm %d future %d late %+v", outCount(t, c), checkpoints.Load(), st.In, st.Out, st.Parked, st.Watermark, st.Future, st.Late)
		case <-time.After(20 * time.Millisecond): // polling the broker's offsets
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run after a clean stop: %v", err)
	}
}

// TestPlainKafkaSinkCleanStopsReemitNothing: used alone, the Kafka sink
// without a transactional id is an at-least-once sink, so the checkpoint
// the Kafka source keeps with the group's offsets is what a restart skips
// by: two clean stops re-emit nothing. (Taken for the checkpoint sink, its
// Restore found nothing and the restart re-emitted every released record
// above the first parked one.)
func TestPlainKafkaSinkCleanStopsReemitNothing(t *testing.T) {
	t.Parallel()
	const n = 200
	c := plainKafkaCluster(t, n)
	released := int64(n * plainKafkaParts) // the old records
	runPlainKafka(t, c, func(int64) bool { return outCount(t, c) >= released })
	runPlainKafka(t, c, func(checkpoints int64) bool { return checkpoints >= 3 })
	if got := outCount(t, c); got != released {
		t.Fatalf("after two clean stops the output holds %d records, want %d: %d re-emitted", got, released, got-released)
	}
}

// TestPlainKafkaSinkBesidePostgres: a library program pairing the Kafka
// sink without a transactional id with the PostgreSQL sink passes New, and
// PostgreSQL stores the checkpoint. (Both used to count as exactly-once
// sinks: "only one exactly-once sink".)
func TestPlainKafkaSinkBesidePostgres(t *testing.T) {
	_, table := pgTable(t)
	c := plainKafkaCluster(t, 50)
	pg := func() *postgres.Sink { return postgres.New(postgres.Config{DSN: pgtest.DSN(t), Table: table}) }
	runPlainKafka(t, c, func(checkpoints int64) bool { return checkpoints >= 2 && outCount(t, c) >= 50*plainKafkaParts },
		signalbox.WithSink(pg()))
	s := pg()
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cp, err := s.Restore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cp == nil || len(cp.Partitions) != plainKafkaParts {
		t.Fatalf("PostgreSQL holds the checkpoint %+v, want one of both partitions of in", cp)
	}
}

// saysExactlyOnce says it is exactly once but has no checkpoint methods.
type saysExactlyOnce struct{ standInSink }

func (saysExactlyOnce) Info() signalbox.SinkInfo {
	return signalbox.SinkInfo{Name: "x", ExactlyOnce: true}
}

// oldBytesSink describes itself the way SinkInfo replaced.
type oldBytesSink struct{ standInSink }

func (oldBytesSink) BytesOnly() bool { return true }

// TestSinkDescriptionRules: New refuses, naming the sink, a sink that says
// it is exactly once but cannot store the checkpoint, and a sink that still
// describes itself by a method SinkInfo replaced (which would otherwise be
// silently ignored).
func TestSinkDescriptionRules(t *testing.T) {
	for _, tc := range []struct {
		sink signalbox.Sink
		want string
	}{
		{saysExactlyOnce{}, "does not store the checkpoint"},
		{oldBytesSink{}, "has a BytesOnly method"},
	} {
		err := signalbox.ValidateOptions(signalbox.WithSink(standInSink{}), signalbox.WithSink(tc.sink))
		if got := verdict(t, err); len(got) != 1 || got[0] != "sinks[1]" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T: %v; want one error about sinks[1] saying %q", tc.sink, err, tc.want)
		}
	}
}
