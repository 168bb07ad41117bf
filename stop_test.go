package signalbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/crashtest"
	"github.com/signalbox/signalbox/record"
)

// These tests stop a group job the way SIGINT does (its context is
// cancelled) at random points of a replay and of live traffic, restart it
// with the same group, and check that the restarts together wrote every
// record exactly once, in order: a clean stop re-emits nothing.

// stopTopics are the inputs of the stop tests, stopParts partitions each.
var stopTopics = []string{"sa", "sb"}

const stopParts = 3

// stopProducer writes records whose value is a crashtest payload (id, ts,
// k) to an embedded cluster, keeping what the broker acknowledged.
type stopProducer struct {
	cl       *kgo.Client
	disorder int64 // ms

	mu   sync.Mutex
	rng  *rand.Rand
	seq  int
	recs []crashtest.Produced
	err  error
}

func newStopProducer(t *testing.T, c *embedded.Cluster, seed uint64, disorder time.Duration) *stopProducer {
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(2048))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &stopProducer{cl: cl, disorder: disorder.Milliseconds(), rng: rand.New(rand.NewPCG(seed, 5))}
}

// round produces one record per partition with event time ts minus a
// random disorder.
func (p *stopProducer) round(ts int64, live bool) {
	for _, topic := range stopTopics {
		for part := range int32(stopParts) {
			p.mu.Lock()
			et := ts - p.rng.Int64N(p.disorder+1)
			key := fmt.Sprintf("k%d", p.rng.IntN(5))
			id := fmt.Sprintf("%s/%d/%d", topic, part, p.seq)
			p.seq++
			p.mu.Unlock()
			v, _ := json.Marshal(map[string]any{"id": id, "ts": et, "k": key})
			p.cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: part, Key: []byte(key), Value: v},
				func(r *kgo.Record, err error) {
					p.mu.Lock()
					defer p.mu.Unlock()
					if err != nil {
						p.err = err
						return
					}
					p.recs = append(p.recs, crashtest.Produced{ID: id, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
						Key: key, TS: et, Live: live})
				})
		}
	}
}

func (p *stopProducer) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		t.Fatal(p.err)
	}
}

// stopper is a sink that cancels its run once it has been handed n records:
// a stop at a random point of the output. It takes a millisecond per
// batch, a slow reader that makes the replay last.
type stopper struct {
	n      atomic.Int64
	cancel context.CancelFunc
}

func (s *stopper) Open(context.Context) error { return nil }
func (s *stopper) Write(_ context.Context, b []record.Record) error {
	if s.n.Add(-int64(len(b))) <= 0 {
		s.cancel()
	}
	time.Sleep(time.Millisecond) // the slow reader is the scenario, not a wait
	return nil
}
func (s *stopper) Flush(context.Context) error { return nil }
func (s *stopper) Close() error                { return nil }

// stopJob is the job file of a stop test: sinks is the YAML of the sinks
// list items.
func stopJob(c *embedded.Cluster, until string, checkpoint time.Duration, sinks string) string {
	doc := fmt.Sprintf("brokers: [%s]\ngroup: stoptest\ndelay: 1s\nlate: emit\nuntil: %s\ncheckpoint_interval: %s\nbatch_size: 64\ninputs:\n",
		c.Addrs()[0], until, checkpoint)
	for _, topic := range stopTopics {
		doc += fmt.Sprintf("  - {topic: %s, time: field, time_field: ts, time_format: unix_ms, key: key}\n", topic)
	}
	return doc + "sinks:\n" + sinks
}

// runStopJob runs doc until ctx is done or stop's count runs out, and
// returns the pipeline and Run's error.
func runStopJob(t *testing.T, doc string, ctx context.Context, stop *stopper) (*signalbox.Pipeline, error) {
	t.Helper()
	plan := buildPlan(t, doc, zap.NewNop())
	// Small fetches: the replay takes many of them, so a stop can land in
	// the middle of it.
	plan.Kafka.PartitionMaxBytes, plan.Kafka.PartitionMaxRecords = 4096, 32
	var opts []signalbox.Option
	if stop != nil {
		opts = append(opts, signalbox.WithSink(stop))
	}
	p, err := plan.Pipeline(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p, p.Run(ctx)
}

// stopRestart produces a history, then runs the job `stops` times while
// live traffic flows, each run stopped by cancellation at a random point
// (a count of records written, or a time), then runs it to the end offsets.
// It returns every record produced.
func stopRestart(t *testing.T, c *embedded.Cluster, seed uint64, stops int, sinks string) []crashtest.Produced {
	return stopRestartBy(t, c, seed, stops, sinks, false)
}

// stopRestartBy is stopRestart; with deadline, each run is stopped by its
// context's deadline (context.WithTimeout) at a random time instead, and
// must return ErrDeadline.
func stopRestartBy(t *testing.T, c *embedded.Cluster, seed uint64, stops int, sinks string, deadline bool) []crashtest.Produced {
	rng := rand.New(rand.NewPCG(seed, 11))
	prod := newStopProducer(t, c, seed, 300*time.Millisecond)
	start := time.Now().Add(-time.Hour).UnixMilli()
	const history = 1000 // records per partition
	for i := range history {
		prod.round(start+int64(i)*20, false)
	}
	prod.flush(t)

	liveCtx, stopLive := context.WithCancel(context.Background())
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-liveCtx.Done():
				return
			case now := <-tick.C:
				prod.round(now.UnixMilli(), true)
			}
		}
	}()
	for run := range stops {
		// Checkpoints now and then, or only the final one.
		cp := []time.Duration{20 * time.Millisecond, 300 * time.Millisecond, time.Hour}[rng.IntN(3)]
		after := 50*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond)))
		ctx, cancel := context.WithCancel(context.Background()) // as SIGINT does
		stop := &stopper{cancel: cancel}
		stop.n.Store(1 + rng.Int64N(history*int64(len(stopTopics)*stopParts)/2))
		if rng.IntN(2) == 0 {
			stop.n.Store(1 + rng.Int64N(64)) // soon: the run may still re-read what the last one had read
		}
		timer := time.AfterFunc(after, cancel)
		if deadline {
			timer.Stop()
			cancel()
			ctx, cancel = context.WithTimeout(context.Background(), after)
			stop = &stopper{cancel: cancel}
			stop.n.Store(math.MaxInt64) // only the slow reader: the deadline stops the run
		}
		p, err := runStopJob(t, stopJob(c, "live", cp, sinks), ctx, stop)
		switch {
		case deadline && (!errors.Is(err, signalbox.ErrDeadline) || !errors.Is(err, context.DeadlineExceeded)):
			t.Fatalf("run %d: stopped by its deadline, Run returned %v; want ErrDeadline and context.DeadlineExceeded", run, err)
		case !deadline && err != nil:
			t.Fatalf("run %d: %v", run, err)
		}
		st := p.Stats()
		t.Logf("run %d stopped (replay done %v): in %d, out %d, skipped as emitted %d", run, st.ReplayDone, st.In, st.Out, st.Skipped)
		timer.Stop()
		cancel()
	}
	stopLive()
	<-liveDone
	prod.flush(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	if _, err := runStopJob(t, stopJob(c, "end-offsets", time.Hour, sinks), ctx, nil); err != nil {
		t.Fatalf("final run: %v", err)
	}
	prod.mu.Lock()
	defer prod.mu.Unlock()
	return append([]crashtest.Produced(nil), prod.recs...)
}

// stopCluster starts a cluster with the stop tests' topics, and extra
// topics of one partition.
func stopCluster(t *testing.T, extra ...string) *embedded.Cluster {
	opts := []embedded.Option{embedded.WithTopic(stopTopics[0], stopParts), embedded.WithTopic(stopTopics[1], stopParts)}
	for _, topic := range extra {
		opts = append(opts, embedded.WithTopic(topic, 1))
	}
	return startCluster(t, opts...)
}

// checkJSONL checks the JSONL file at path: every record exactly once,
// in order.
func checkJSONL(t *testing.T, path string, produced []crashtest.Produced) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outs, problems := crashtest.ParseJSONL(data)
	stopReport(t, "jsonl", crashtest.Check(produced, outs, crashtest.Mode{ExactlyOnce: true}), problems...)
}

func stopReport(t *testing.T, sink string, rep *crashtest.Report, problems ...string) {
	t.Helper()
	t.Logf("%s: %s", sink, rep)
	for _, p := range append(problems, rep.Problems...) {
		t.Errorf("%s: %s", sink, p)
	}
}

// TestStopRestartJSONL: a group job with a JSONL file sink, stopped cleanly
// and restarted many times, writes every record exactly once.
func TestStopRestartJSONL(t *testing.T) {
	t.Parallel()
	for seed := range uint64(2) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out.jsonl")
			produced := stopRestart(t, stopCluster(t), seed, 6, fmt.Sprintf("  - {type: jsonl, path: %s}\n", out))
			checkJSONL(t, out, produced)
		})
	}
}

// TestStopByDeadlineOrCancel: a library Run stopped by its context's
// deadline stops as cleanly as one whose context is cancelled: with a
// final checkpoint, so that two stops and a restart write every record
// exactly once to an at-least-once sink (before, a deadline took no final
// checkpoint and the restart re-emitted thousands). Run returns nil after a
// cancellation and ErrDeadline after a deadline.
func TestStopByDeadlineOrCancel(t *testing.T) {
	t.Parallel()
	for _, deadline := range []bool{false, true} {
		t.Run(map[bool]string{false: "cancel", true: "deadline"}[deadline], func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out.jsonl")
			produced := stopRestartBy(t, stopCluster(t), 3, 2, fmt.Sprintf("  - {type: jsonl, path: %s}\n", out), deadline)
			checkJSONL(t, out, produced)
		})
	}
}

// TestStopRestartPostgres: the same with the exactly-once PostgreSQL sink
// and a JSONL file beside it: the table and the file both hold every
// record exactly once, in order.
func TestStopRestartPostgres(t *testing.T) {
	conn, table := pgTable(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	produced := stopRestart(t, stopCluster(t), 7, 6, fmt.Sprintf("  - {type: jsonl, path: %s}\n"+
		"  - {type: postgres, dsn_env: EXITPATH_PG_DSN, table: %s}\n", out, table))
	checkJSONL(t, out, produced)
	outs, err := crashtest.PostgresOutputs(context.Background(), conn, table)
	if err != nil {
		t.Fatal(err)
	}
	stopReport(t, "postgres", crashtest.Check(produced, outs, crashtest.Mode{ExactlyOnce: true}))
}

// TestStopRestartKafka: the same with the exactly-once Kafka sink (one
// output partition, read with read_committed) and a JSONL file beside it.
func TestStopRestartKafka(t *testing.T) {
	t.Parallel()
	c := stopCluster(t, "out")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	produced := stopRestart(t, c, 8, 6, fmt.Sprintf("  - {type: jsonl, path: %s}\n"+
		"  - {type: kafka, topic: out, transactional_id: stoptest}\n", out))
	checkJSONL(t, out, produced)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vals, err := c.ReadUpTo(ctx, "out", kgo.ReadCommitted())
	if err != nil {
		t.Fatal(err)
	}
	outs, err := crashtest.ParseValues(vals, "out@")
	if err != nil {
		t.Fatal(err)
	}
	stopReport(t, "kafka", crashtest.Check(produced, outs, crashtest.Mode{ExactlyOnce: true}))
}

// TestStopRestartBulk: the same with the at-least-once HTTP bulk sink, to
// a server that speaks the _bulk protocol and keeps every document it is
// sent, in order: each record is sent exactly once.
func TestStopRestartBulk(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var docs [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var items []string
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() { // an action line, then its document
			if !sc.Scan() {
				break
			}
			docs = append(docs, bytes.Clone(sc.Bytes()))
			items = append(items, `{"index":{"status":201}}`)
		}
		fmt.Fprintf(w, `{"errors":false,"items":[%s]}`, strings.Join(items, ","))
	}))
	defer srv.Close()
	produced := stopRestart(t, stopCluster(t), 9, 6, fmt.Sprintf("  - {type: bulk, url: %q, index: out}\n", srv.URL))
	mu.Lock()
	defer mu.Unlock()
	outs, err := crashtest.ParseValues(docs, "document ")
	if err != nil {
		t.Fatal(err)
	}
	stopReport(t, "bulk", crashtest.Check(produced, outs, crashtest.Mode{ExactlyOnce: true}))
}
