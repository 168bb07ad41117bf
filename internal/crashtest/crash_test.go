package crashtest

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/pgtest"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

var seedFlag = flag.Int64("seed", 0, "replay a crash test with this seed (also: SIGNALBOX_CRASH_SEED); 0: a new seed")

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	RemoveBinary()
	os.Exit(code)
}

// seed returns the test's seed: -seed, SIGNALBOX_CRASH_SEED, or the clock.
// It is logged, and logged again with the kill points on failure.
func seed(t *testing.T) int64 {
	s := *seedFlag
	if env := os.Getenv("SIGNALBOX_CRASH_SEED"); s == 0 && env != "" {
		var err error
		if s, err = strconv.ParseInt(env, 10, 64); err != nil {
			t.Fatalf("SIGNALBOX_CRASH_SEED=%q: %v", env, err)
		}
	}
	if s == 0 {
		s = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay: SIGNALBOX_CRASH_SEED=%d go test -run '^%s$' ./internal/crashtest)", s, s, t.Name())
	return s
}

// scenario is the shape shared by every crash test.
type scenario struct {
	topics   []string
	parts    int32
	history  int // records per partition
	kills    int
	delay    time.Duration
	disorder time.Duration
	// taskKeys: each key's records in one partition number
	// (Producer.TaskKeys).
	taskKeys bool
	// from is the history's first event time, from the set-up; step is the
	// event time between two records of a partition.
	from, step time.Duration
}

func newScenario() scenario {
	s := scenario{topics: []string{"orders", "stock", "prices"}, parts: 3, history: 1500, kills: 12, delay: 2 * time.Second, disorder: 300 * time.Millisecond,
		from: -time.Hour, step: 100 * time.Millisecond}
	if testing.Short() {
		s.history, s.kills = 600, 10
	}
	return s
}

// crashRun is one crash test in progress.
type crashRun struct {
	t      *testing.T
	seed   int64
	sc     scenario
	dir    string
	broker *Broker
	prod   *Producer
	c      *Crasher
	// start is the history's first event time (before disorder).
	start time.Time
}

// setUp starts a broker with the scenario's topics (plus extra topics),
// produces the history, and prepares a crasher for a job whose sinks are
// given by sinks(dir, broker).
func setUp(t *testing.T, extraTopics []string, sinks func(dir string, b *Broker) (yaml, extra string)) *crashRun {
	return setUpGroup(t, "crashtest", extraTopics, sinks)
}

// setUpGroup is setUp with the job in group ("": in none).
func setUpGroup(t *testing.T, group string, extraTopics []string, sinks func(dir string, b *Broker) (yaml, extra string)) *crashRun {
	return setUpScenario(t, newScenario(), group, extraTopics, sinks)
}

// setUpScenario is setUpGroup for the scenario sc.
func setUpScenario(t *testing.T, sc scenario, group string, extraTopics []string, sinks func(dir string, b *Broker) (yaml, extra string)) *crashRun {
	var topics []string
	for _, tp := range sc.topics {
		topics = append(topics, fmt.Sprintf("%s:%d", tp, sc.parts))
	}
	r, rng := newRun(t, sc, append(topics, extraTopics...))
	r.prod = NewProducer(t, r.broker, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), sc.topics, sc.parts, 16, sc.disorder)
	r.prod.TaskKeys = sc.taskKeys
	ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
	defer cancel()
	r.start = time.Now().Add(sc.from)
	if err := r.prod.History(ctx, sc.history, r.start, sc.step); err != nil {
		t.Fatal(err)
	}
	yaml, extra := sinks(r.dir, r.broker)
	r.prepare(rng, &Job{Brokers: r.broker.Addr, Group: group, Topics: sc.topics, Delay: sc.delay, Sinks: yaml, Extra: extra})
	return r
}

// newRun starts a broker with topics ("name:partitions") for a crash test
// of scenario sc, and returns the run, without its crasher yet, and the
// test's random source (from its seed and name).
func newRun(t *testing.T, sc scenario, topics []string) (*crashRun, *rand.Rand) {
	s := seed(t)
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	rng := rand.New(rand.NewPCG(uint64(s), h.Sum64()))
	bin := Binary(t)
	dir := KeptDir(t)
	return &crashRun{t: t, seed: s, sc: sc, dir: dir, broker: StartBroker(t, bin, topics...)}, rng
}

// prepare validates the job file (failing or skipping the test before any
// kill) and gives the run its crasher, which logs the kill points if the
// test fails.
func (r *crashRun) prepare(rng *rand.Rand, job *Job) {
	t, bin := r.t, Binary(r.t)
	path := filepath.Join(r.dir, "check.yaml")
	if err := os.WriteFile(path, []byte(job.YAML("live")), 0o644); err != nil {
		t.Fatal(err)
	}
	Validate(t, bin, path)
	r.c = &Crasher{T: t, Bin: bin, Dir: r.dir, Job: job, Admin: r.broker.Client(t), Rng: rng, Rate: 1 << 20}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d; kill points:", r.seed)
			for _, k := range r.c.Kills {
				t.Log("  ", k)
			}
			t.Logf("per-run logs and outputs kept in %s", r.dir)
		}
	})
}

// run produces live traffic while it kills the job sc.kills times, stops
// the traffic, runs the job to the end offsets and returns every produced
// record.
func (r *crashRun) run() []Produced {
	t := r.t
	ctx, stop := context.WithCancel(context.Background())
	liveErr := make(chan error, 1)
	go func() { liveErr <- r.prod.Live(ctx, 20*time.Millisecond) }()
	r.c.Crash(r.sc.kills)
	stop()
	if err := <-liveErr; err != nil {
		t.Fatal(err)
	}
	r.c.Finish()
	replay, live := r.c.Phases()
	produced := r.prod.Records()
	defer r.checkStdout(produced)
	nLive := 0
	for i := range produced {
		if produced[i].Live {
			nLive++
		}
	}
	t.Logf("seed %d: %d kills (%d during replay, %d live); %d records produced (%d history, %d live)",
		r.seed, len(r.c.Kills), replay, live, len(produced), len(produced)-nLive, nLive)
	if replay == 0 || live == 0 {
		t.Errorf("want kills both during replay and live, got %d and %d", replay, live)
	}
	return produced
}

// checkStdout checks the job's first sink, JSONL on stdout: at least once
// (exactly once when every run stopped cleanly), first occurrences in
// order.
func (r *crashRun) checkStdout(produced []Produced) {
	outs, torn, problems := r.c.StdoutOutputs()
	r.t.Logf("stdout sink: %d killed runs ended in a cut line (never acknowledged, dropped)", torn)
	report(r.t, "stdout sink", Check(produced, outs, Mode{ExactlyOnce: r.c.Signals != nil, Delay: r.sc.delay.Milliseconds()}), problems...)
}

// report fails the test on every problem of rep (and of extra).
func report(t *testing.T, sink string, rep *Report, extra ...string) {
	t.Helper()
	t.Logf("%s: %s", sink, rep)
	if rep.LateLive > 0 {
		t.Logf("%d live records were late: the machine delayed them beyond the delay bound (counted, not a failure)", rep.LateLive)
	}
	if rep.LateWithin > 0 {
		t.Logf("%d late live records were acknowledged by the broker within the delay bound: the watermark passed them after they were in the log (stale evidence; counted, not a failure)", rep.LateWithin)
	}
	if rep.DelayedOutOfTurn > 0 {
		t.Logf("%d live records the machine delayed beyond the delay bound came out of turn unflagged: a killed run had released past them, uncommitted (counted, not a failure)", rep.DelayedOutOfTurn)
	}
	for _, p := range append(extra, rep.Problems...) {
		t.Errorf("%s: %s", sink, p)
	}
}

// TestCrashJSONL: at-least-once. Every produced record is in the file, and
// the first occurrences are in the engine's total order.
func TestCrashJSONL(t *testing.T) {
	t.Parallel()
	crashJSONL(t, false)
}

// TestCrashJSONLState: as TestCrashJSONL with the pebble-backed parked store,
// under a memory budget small enough to spill.
func TestCrashJSONLState(t *testing.T) {
	t.Parallel()
	crashJSONL(t, true)
}

// jsonlSink is the setUp sinks of a job writing dir/out.jsonl, with the
// pebble-backed parked store in dir/state under a budget small enough to
// spill when spill is set.
func jsonlSink(spill bool) func(dir string, _ *Broker) (string, string) {
	return func(dir string, _ *Broker) (string, string) {
		extra := ""
		if spill {
			extra = fmt.Sprintf("state:\n  dir: %s\n  memory: 64KiB\n", filepath.Join(dir, "state"))
		}
		return fmt.Sprintf("  - type: jsonl\n    path: %s\n", filepath.Join(dir, "out.jsonl")), extra
	}
}

func crashJSONL(t *testing.T, spill bool) {
	r := setUp(t, nil, jsonlSink(spill))
	produced := r.run()
	data, err := os.ReadFile(filepath.Join(r.dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	outs, problems := ParseJSONL(data)
	if n := tornLines(problems); n > 0 {
		problems = append(problems, fmt.Sprintf("%d torn lines: sinks/jsonl Open appends after the torn tail a SIGKILL leaves", n))
	}
	report(t, "file sink", Check(produced, outs, Mode{Delay: r.sc.delay.Milliseconds()}), problems...)
}

// TestStopJSONL: the job is stopped by SIGINT and SIGTERM in turn instead
// of SIGKILL, during the replay and during live traffic. A clean stop
// re-emits nothing: the JSONL file and stdout hold every record exactly
// once, in order.
func TestStopJSONL(t *testing.T) {
	t.Parallel()
	stopJSONL(t, false)
}

// TestStopJSONLState: as TestStopJSONL with the pebble-backed parked store,
// whose checkpoint then says what was emitted.
func TestStopJSONLState(t *testing.T) {
	t.Parallel()
	stopJSONL(t, true)
}

func stopJSONL(t *testing.T, spill bool) {
	r := setUp(t, nil, jsonlSink(spill))
	r.c.Signals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}
	produced := r.run()
	data, err := os.ReadFile(filepath.Join(r.dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	outs, problems := ParseJSONL(data)
	report(t, "file sink", Check(produced, outs, Mode{ExactlyOnce: true}), problems...)
}

// TestCrashPostgres: exactly-once. The table holds every record once, in
// order of its insertion sequence. The job filters and maps its records
// (earlyProcess): JSON values and expressions that read nothing of the
// release, so they run as records are decoded (docs/design.md K12), and a
// kill loses that result with the run; every row holds the mapped value.
func TestCrashPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	table := fmt.Sprintf("crashtest_%d", os.Getpid())
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	drop := func() {
		for _, suffix := range []string{"", "_checkpoint", "_watermark", "_owner"} {
			if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+table+suffix); err != nil {
				t.Error(err)
			}
		}
	}
	drop()
	t.Cleanup(drop)
	r := setUp(t, nil, func(string, *Broker) (string, string) {
		return fmt.Sprintf("  - type: postgres\n    dsn_env: SIGNALBOX_PG_DSN\n    table: %s\n", table), earlyProcess
	})
	produced := r.run()
	outs, err := PostgresOutputs(ctx, conn, table)
	if err != nil {
		t.Fatal(err)
	}
	report(t, "postgres sink", Check(produced, outs, Mode{ExactlyOnce: true}))
	var unmapped int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE value->>'mapped' IS DISTINCT FROM 'true' OR value->>'id' <> value->>'was'`).Scan(&unmapped); err != nil {
		t.Fatal(err)
	}
	if unmapped > 0 {
		t.Errorf("postgres sink: %d of %d rows do not hold the mapped value", unmapped, len(outs))
	}
}

// earlyProcess is the process section of TestCrashPostgres's job: a
// filter that keeps every record and a map that reshapes each value,
// both evaluated as records are decoded.
const earlyProcess = `process:
  filter: 'value.id != ""'
  map: '{"id": value.id, "ts": value.ts, "k": value.k, "was": value.id, "mapped": true}'
`

// TestCrashKafka: exactly-once Kafka→Kafka. The output topic (one
// partition, so the order is global), read with read_committed, holds
// every record once, in order.
func TestCrashKafka(t *testing.T) {
	t.Parallel()
	const outTopic = "ordered"
	r := setUp(t, []string{outTopic + ":1"}, func(string, *Broker) (string, string) {
		return fmt.Sprintf("  - type: kafka\n    topic: %s\n    transactional_id: crashtest\n", outTopic), ""
	})
	produced := r.run()
	outs := readCommitted(t, r.broker, outTopic, len(produced))
	report(t, "kafka sink", Check(produced, outs, Mode{ExactlyOnce: true}))
}

// readCommitted reads topic from the start with read_committed until it
// has at least want records and a poll of a second brings nothing more.
func readCommitted(t *testing.T, b *Broker, topic string, want int) []Out {
	var outs []Out
	for _, rec := range readCommittedRecords(t, b, topic, want) {
		o, err := ParseEnvelope(rec.Value, fmt.Sprintf("%s/%d@%d", rec.Topic, rec.Partition, rec.Offset))
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o)
	}
	return outs
}

// readCommittedRecords reads topic from the start with read_committed
// until it has at least want records and a poll of a second brings nothing
// more.
func readCommittedRecords(t *testing.T, b *Broker, topic string, want int) []*kgo.Record {
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	deadline := time.Now().Add(HangGuard)
	var recs []*kgo.Record
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			recs = append(recs, rec)
		})
		for _, e := range fs.Errors() {
			if e.Err != context.DeadlineExceeded {
				t.Fatalf("reading %s: %v", topic, e.Err)
			}
		}
		if n == 0 && len(recs) >= want {
			return recs
		}
	}
	t.Errorf("read %d records of %s, want at least %d, before the hang guard (%v)", len(recs), topic, want, HangGuard)
	return recs
}
