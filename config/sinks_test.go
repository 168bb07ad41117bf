package config

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/pgtest"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
)

// build parses, validates and builds doc.
func build(t *testing.T, doc string) (*Plan, error) {
	t.Helper()
	j, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return j.Build(nil)
}

// TestBuildMakesOneCheckpointSink: of a postgres, a jsonl and a plain kafka
// sink, only the postgres one stores the checkpoint; the job's order is kept.
func TestBuildMakesOneCheckpointSink(t *testing.T) {
	t.Setenv("SIGNALBOX_TEST_DSN", "postgres://u:p@127.0.0.1:1/db")
	p, err := build(t, `
brokers: [h:1]
inputs: [{topic: a}]
sinks:
  - {type: postgres, dsn_env: SIGNALBOX_TEST_DSN}
  - {type: jsonl, path: out.jsonl}
  - {type: kafka, topic: out}
dead_letter: {type: postgres, dsn_env: SIGNALBOX_TEST_DSN, table: dead}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sinks) != 3 {
		t.Fatalf("%d sinks, want 3", len(p.Sinks))
	}
	for i, s := range p.Sinks {
		info := s.(signalbox.SinkDescriber).Info()
		if want := i == 0; info.ExactlyOnce != want {
			t.Errorf("sink %d (%T): ExactlyOnce = %v, want %v", i, s, info.ExactlyOnce, want)
		}
		// The engine labels logs and metrics with the sink's name.
		if info.Name != []string{"postgres", "jsonl", "kafka"}[i] {
			t.Errorf("sink %d (%T): named %q", i, s, info.Name)
		}
	}
	if _, err := p.Pipeline(); err != nil {
		t.Fatal(err)
	}
}

func TestBuildKafkaModes(t *testing.T) {
	p, err := build(t, "brokers: [h:1]\ninputs: [{topic: a}]\ndead_letter: {type: kafka, topic: dl, transactional_id: t-dl}\n"+
		"sinks: [{type: kafka, topic: o, transactional_id: t, group: g-out}, {type: kafka, topic: o2, brokers: ['k:9']}]")
	if err != nil {
		t.Fatal(err)
	}
	transactional := p.Sinks[0].(signalbox.SinkDescriber).Info()
	plain := p.Sinks[1].(signalbox.SinkDescriber).Info()
	if !transactional.ExactlyOnce || !transactional.CommitsSourceOffsets || plain.ExactlyOnce {
		t.Fatalf("ExactlyOnce: %v %v; want only the transactional sink's", transactional.ExactlyOnce, plain.ExactlyOnce)
	}
	if !transactional.BytesOnly || !plain.BytesOnly { // a schema'd job must not render for them
		t.Errorf("BytesOnly: %v %v, want both", transactional.BytesOnly, plain.BytesOnly)
	}
}

func TestBuildPostgresReadsDSNFromEnvironment(t *testing.T) {
	doc := withSink("{type: postgres, dsn_env: SIGNALBOX_TEST_DSN, table: ops.ordered, value_type: text, max_batch: 10, no_create: true}")
	t.Setenv("SIGNALBOX_TEST_DSN", "")
	if _, err := build(t, doc); err == nil || !strings.Contains(err.Error(), "sinks[1]: dsn_env: environment variable SIGNALBOX_TEST_DSN is unset or empty") {
		t.Fatalf("Build without the variable: %v", err)
	}
	t.Setenv("SIGNALBOX_TEST_DSN", "host=h port=notaport password=hunter2")
	_, err := build(t, doc)
	if err == nil || !strings.Contains(err.Error(), "does not hold a PostgreSQL connection string") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Build with a bad DSN: %v", err)
	}
	t.Setenv("SIGNALBOX_TEST_DSN", "postgres://u:hunter2@127.0.0.1:5432/db?sslmode=disable")
	if _, err := build(t, doc); err != nil {
		t.Fatal(err)
	}
}

// runJob builds and runs doc to its end offsets, and returns its pipeline.
func runJob(t *testing.T, doc string) *signalbox.Pipeline {
	t.Helper()
	_, pl := runPlan(t, doc)
	return pl
}

// runPlan is runJob that also returns the plan, for the caller to close.
func runPlan(t *testing.T, doc string) (*Plan, *signalbox.Pipeline) {
	t.Helper()
	p, err := build(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := p.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	if err := pl.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return p, pl
}

// future is an event time ahead of the processing-time watermark that ends
// a bounded run, so that records of the next run are not late, and well
// within max_future (default 1h) of the evidence clock: at exactly an hour
// ahead the first records were dead-lettered when a test ran within
// milliseconds of the package's start.
var future = time.Now().Add(30 * time.Minute).UnixMilli()

// produce writes records seq from..to-1 to topic "in", partition seq%2,
// with increasing event times.
func produce(t *testing.T, c *embedded.Cluster, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, embedded.Record("in", int32(i%2), fmt.Sprint("k", i%3), fmt.Sprintf(`{"ts":%d,"seq":%d}`, future+int64(i), i)))
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
}

// checkSeqs fails unless got is 0..n-1, each once, in order.
func checkSeqs(t *testing.T, got []int, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d records, want %d: %v", len(got), n, got)
	}
	for i, s := range got {
		if s != i {
			t.Fatalf("record %d is seq %d: %v", i, s, got)
		}
	}
}

// jobOn is a bounded job reading topic "in" of cluster c into sink.
func jobOn(c *embedded.Cluster, sink string) string {
	return fmt.Sprintf(`
brokers: [%s]
group: job
inputs: [{topic: in, time: field, time_field: ts}]
until: end-offsets
sinks:
  - %s
`, c.Addrs()[0], sink)
}

// TestKafkaSinkExactlyOnceFromConfig runs a job file whose kafka sink uses
// the job's brokers twice over a growing input: read_committed sees every
// input record once, in event-time order, because the second run resumes
// from the checkpoint the first committed in its transaction. The
// transaction commits either to a group of its own or — Kafka's usual
// exactly-once setup — to the job's own group, which signalbox then leaves
// to the transaction alone.
func TestKafkaSinkExactlyOnceFromConfig(t *testing.T) {
	for _, spec := range []string{
		"{type: kafka, topic: out, transactional_id: cfg-test, group: job-out}",
		"{type: kafka, topic: out, transactional_id: cfg-test}",
	} {
		t.Run(spec, func(t *testing.T) { kafkaExactlyOnce(t, spec) })
	}
}

func kafkaExactlyOnce(t *testing.T, spec string) {
	c, err := embedded.Start(embedded.WithTopic("in", 2), embedded.WithTopic("out", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	doc := jobOn(c, spec)
	produce(t, c, 0, 30)
	runJob(t, doc)
	produce(t, c, 30, 50)
	runJob(t, doc)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vals, err := c.ReadUpTo(ctx, "out", kgo.ReadCommitted())
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, b := range vals {
		var v struct{ Seq int }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("record %q in out: %v", b, err)
		}
		got = append(got, v.Seq)
	}
	checkSeqs(t, got, 50)
}

// TestPostgresSinkExactlyOnceFromConfig: the same with a postgres sink whose
// DSN comes from the environment, against the real server.
func TestPostgresSinkExactlyOnceFromConfig(t *testing.T) {
	c, conn, table := pgJob(t, "cfgtest")
	ctx := context.Background()
	doc := jobOn(c, fmt.Sprintf("{type: postgres, dsn_env: SIGNALBOX_TEST_DSN, table: %s, max_batch: 7}", table))
	produce(t, c, 0, 30)
	runJob(t, doc)
	produce(t, c, 30, 50)
	runJob(t, doc)

	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT (value->>'seq')::int FROM %s ORDER BY seq`, table))
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, got, 50)
	var name string
	if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT name FROM %s_watermark`, table)).Scan(&name); err != nil || name != "job" {
		t.Fatalf("checkpoint name = %q, %v; want the job's group", name, err)
	}
}

// pgJob starts a cluster with topic "in" and connects to the test server,
// where the tables of a fresh name with prefix are dropped when t ends; its
// DSN is in SIGNALBOX_TEST_DSN. The cluster and connection close with t.
func pgJob(t *testing.T, prefix string) (*embedded.Cluster, *pgx.Conn, string) {
	dsn := pgtest.DSN(t)
	c, err := embedded.Start(embedded.WithTopic("in", 2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	table := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range []string{"", "_checkpoint", "_watermark"} {
			_, _ = conn.Exec(ctx, "DROP TABLE IF EXISTS "+table+s)
		}
		conn.Close(ctx)
	})
	t.Setenv("SIGNALBOX_TEST_DSN", dsn)
	return c, conn, table
}

// A bulk linger of 0s means no timer of the sink's own, not its default.
func TestBulkLingerZeroIsOff(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "0s": -1, "0ms": -1, "50ms": 50 * time.Millisecond} {
		if got := bulkLinger(v); got != want {
			t.Errorf("linger %q: bulk.Config.Linger %v, want %v", v, got, want)
		}
	}
}
