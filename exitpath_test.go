package signalbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/pgtest"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
)

// These tests run job files as an operator would, against real components
// (an embedded Kafka cluster over TCP, the real PostgreSQL server, a local
// HTTP _bulk endpoint): a failed run followed by a rerun leaves every record
// exactly once where readers look, and a record a sink rejects goes to the
// dead-letter sink instead of stopping the job.

// exitJob is a bounded job over topic "in" of c with the given sinks YAML
// (list items) and dead-letter YAML ("" for none). No periodic checkpoint:
// only the final one commits.
func exitJob(c *embedded.Cluster, sinks, deadLetter string) string {
	doc := fmt.Sprintf("brokers: [%s]\ngroup: exitpath\ninputs: [{topic: in, time: field, time_field: ts, time_format: unix_ms}]\n"+
		"until: end-offsets\ncheckpoint_interval: 1h\nsinks:\n%s", c.Addrs()[0], sinks)
	if deadLetter != "" {
		doc += "dead_letter: " + deadLetter + "\n"
	}
	return doc
}

// runExitJob runs doc to its end offsets and returns Run's error.
func runExitJob(t *testing.T, doc string, log *zap.Logger, opts ...signalbox.Option) error {
	_, err := runExitPipeline(t, doc, log, opts...)
	return err
}

// runExitPipeline is runExitJob that also returns the pipeline (its Stats).
func runExitPipeline(t *testing.T, doc string, log *zap.Logger, opts ...signalbox.Option) (*signalbox.Pipeline, error) {
	t.Helper()
	p, err := buildPlan(t, doc, log).Pipeline(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	return p, p.Run(ctx)
}

// buildPlan parses the job file doc and builds its plan with log.
func buildPlan(t *testing.T, doc string, log *zap.Logger) *config.Plan {
	t.Helper()
	j, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := j.Build(log)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// startCluster starts an embedded cluster, closed at the end of the test.
func startCluster(t *testing.T, opts ...embedded.Option) *embedded.Cluster {
	t.Helper()
	c, err := embedded.Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// exitBase is the event time of record 0: in the past, so that no record is
// ahead of the clock.
var exitBase = time.Now().Add(-time.Hour).UnixMilli()

// produceExit writes n records seq 0..n-1 to "in" over three partitions,
// with values from value (nil: the default {"seq":i,"ts":…}).
func produceExit(t *testing.T, c *embedded.Cluster, n int, value func(i int) string) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		v := fmt.Sprintf(`{"seq":%d,"ts":%d}`, i, exitBase+int64(i))
		if value != nil {
			v = value(i)
		}
		recs = append(recs, embedded.Record("in", int32(i%3), fmt.Sprint("k", i%7), v))
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
}

// num returns the integer member key of a dead-letter envelope, or -1.
func num(m map[string]any, key string) int64 {
	n, ok := m[key].(json.Number)
	if !ok {
		return -1
	}
	i, err := n.Int64()
	if err != nil {
		return -1
	}
	return i
}

// deadLines returns the envelopes of a JSONL dead-letter file.
func deadLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.UseNumber() // values may hold numbers beyond float64
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("dead-letter line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// readOut returns the seq of every record of topic "out" that a consumer
// with the given isolation level sees (embedded.Cluster.ReadUpTo).
func readOut(t *testing.T, c *embedded.Cluster, iso kgo.IsolationLevel) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vals, err := c.ReadUpTo(ctx, "out", iso)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, b := range vals {
		var v struct{ Seq int }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("record %q in out: %v", b, err)
		}
		seqs = append(seqs, v.Seq)
	}
	return seqs
}

// pgTable connects to the test server and names a fresh table, dropped
// (with its checkpoint tables) at the end; the job files reach the server
// through $EXITPATH_PG_DSN. Without a server the test skips, except under
// CI.
func pgTable(t *testing.T) (*pgx.Conn, string) {
	dsn := pgtest.DSN(t)
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("exitpath_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		for _, s := range []string{"", "_checkpoint", "_watermark"} {
			_, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+table+s)
		}
		_ = conn.Close(context.Background())
	})
	t.Setenv("EXITPATH_PG_DSN", dsn)
	return conn, table
}

// checkOnce fails unless seqs holds every seq in 0..n-1 but skip exactly
// once.
func checkOnce(t *testing.T, seqs []int, n, skip int) {
	t.Helper()
	count := map[int]int{}
	for _, s := range seqs {
		count[s]++
	}
	dups := 0
	for s, k := range count {
		if k > 1 {
			dups += k - 1
		}
		if s == skip || s < 0 || s >= n {
			t.Errorf("seq %d stored", s)
		}
	}
	if dups > 0 || len(count) != n-1 {
		t.Fatalf("%d records stored, %d distinct (want %d), %d duplicates", len(seqs), len(count), n-1, dups)
	}
}

// TestFailedRunThenRerunKafkaExactlyOnce: the repro. A live run
// without a dead-letter sink writes records into its open transaction (a
// read_uncommitted reader sees them), then stops on a malformed record: the
// transaction must be aborted, not committed. The rerun, with a dead-letter
// sink, resumes from the last committed checkpoint (none): read_committed
// readers see every good record exactly once.
func TestFailedRunThenRerunKafkaExactlyOnce(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("in", 3), embedded.WithTopic("out", 1))
	const n = 3000
	produceExit(t, c, n, nil)
	sink := "  - {type: kafka, topic: out, transactional_id: exitpath}\n"
	live := strings.Replace(exitJob(c, sink, ""), "until: end-offsets", "until: live", 1)
	done := make(chan error, 1)
	go func() { done <- runExitJob(t, live, zap.NewNop()) }()
	for len(readOut(t, c, kgo.ReadUncommitted())) < n { // in the open transaction
		select {
		case err := <-done:
			t.Fatalf("the live run stopped early: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The malformed record, as seq n (offset n/3 of partition n%3).
	if err := c.Produce(context.Background(), embedded.Record("in", n%3, "k", `{"seq":3000,"ts":"not a time"}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, signalbox.ErrNoDeadLetter) {
		t.Fatalf("first run: %v, want ErrNoDeadLetter", err)
	}
	if seqs := readOut(t, c, kgo.ReadCommitted()); len(seqs) != 0 {
		t.Fatalf("the failed run left %d records visible to read_committed readers", len(seqs))
	}
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	if err := runExitJob(t, exitJob(c, sink, fmt.Sprintf("{type: jsonl, path: %q}", dl)), zap.NewNop()); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	checkOnce(t, readOut(t, c, kgo.ReadCommitted()), n+1, n)
	dead := deadLines(t, dl)
	if len(dead) != 1 || num(dead[0], "offset") != n/3 || !strings.Contains(fmt.Sprint(dead[0]["reason"]), `event time field "ts": not a number`) {
		t.Fatalf("dead letters %v", dead)
	}
	if _, ok := dead[0]["event_time"]; ok {
		t.Fatalf("a record whose event time is unknown carries one: %v", dead[0])
	}
}

// TestPostgresRejectionGoesToDeadLetter: values PostgreSQL refuses (jsonb:
// a number out of range, 22003; a lone surrogate escape, 22P02) stop a run
// without a dead-letter sink with ErrNoDeadLetter, not a crash loop; the
// rerun with one dead-letters exactly them, with the sink's reason and the
// record's coordinates and event time, and stores every other record once.
func TestPostgresRejectionGoesToDeadLetter(t *testing.T) {
	conn, table := pgTable(t)
	c := startCluster(t, embedded.WithTopic("in", 3))
	ctx := context.Background()
	const n = 3000
	poison := map[int]string{1000: `1e1000000`, 2002: `"\ud800"`}
	produceExit(t, c, n, func(i int) string {
		if p, ok := poison[i]; ok {
			return fmt.Sprintf(`{"seq":%d,"ts":%d,"x":%s}`, i, exitBase+int64(i), p)
		}
		return fmt.Sprintf(`{"seq":%d,"ts":%d}`, i, exitBase+int64(i))
	})
	sink := fmt.Sprintf("  - {type: postgres, dsn_env: EXITPATH_PG_DSN, table: %s}\n", table)
	err := runExitJob(t, exitJob(c, sink, ""), zap.NewNop())
	if !errors.Is(err, signalbox.ErrNoDeadLetter) || !strings.Contains(err.Error(), "sink postgres: postgres: 22") {
		t.Fatalf("first run: %v, want ErrNoDeadLetter naming the SQLSTATE", err)
	}
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	if err := runExitJob(t, exitJob(c, sink, fmt.Sprintf("{type: jsonl, path: %q}", dl)), zap.NewNop()); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	rows, err := conn.Query(ctx, "SELECT (value->>'seq')::int FROM "+table+" ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != n-len(poison) {
		t.Fatalf("%d rows, want %d", len(seqs), n-len(poison))
	}
	dead := deadLines(t, dl)
	if len(dead) != len(poison) {
		t.Fatalf("dead letters %v, want %d", dead, len(poison))
	}
	codes := map[string]int{}
	for _, d := range dead {
		seq := int(num(d, "event_time_ms") - exitBase)
		codes[strings.Fields(fmt.Sprint(d["reason"]))[3]]++
		if _, ok := poison[seq]; !ok || num(d, "offset") != int64(seq/3) || num(d, "partition") != int64(seq%3) || d["topic"] != "in" ||
			!strings.HasPrefix(fmt.Sprint(d["reason"]), "sink postgres: postgres: 22") {
			t.Fatalf("dead letter %v", d)
		}
	}
	if codes["22003:"] != 1 || codes["22P02:"] != 1 {
		t.Fatalf("SQLSTATEs in the reasons: %v, want 22003 and 22P02", codes)
	}
}

// TestBulkRejectionAndRetryWarnings: a bulk endpoint that throttles (429)
// and rejects one document with 400 mapper_parsing_exception. The job logs
// each retry at warn with the sink and attempt, dead-letters the document
// with the server's reason, and indexes everything else.
func TestBulkRejectionAndRetryWarnings(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("in", 3))
	const n, bad = 600, 301
	produceExit(t, c, n, func(i int) string {
		if i == bad {
			return fmt.Sprintf(`{"seq":%d,"ts":%d,"count":"many"}`, i, exitBase+int64(i))
		}
		return fmt.Sprintf(`{"seq":%d,"ts":%d,"count":%d}`, i, exitBase+int64(i), i)
	})
	var mu sync.Mutex
	indexed, requests := map[string]bool{}, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		requests++
		if requests <= 3 { // a throttled start
			w.Header().Set("Retry-After", "0")
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		serveBulk(w, r, func(id string, doc []byte) string {
			if bytes.Contains(doc, []byte(`"count":"many"`)) {
				return `{"index":{"status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [count] of type [long]"}}}`
			}
			indexed[id] = true
			return `{"index":{"status":201}}`
		})
	}))
	defer srv.Close()
	core, logs := observer.New(zap.WarnLevel)
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	sink := fmt.Sprintf("  - {type: bulk, url: %q, index: out, doc_id: offset}\n", srv.URL)
	var events []signalbox.Event
	p, err := runExitPipeline(t, exitJob(c, sink, fmt.Sprintf("{type: jsonl, path: %q}", dl)), zap.New(core),
		signalbox.WithObserver(func(e signalbox.Event) {
			if e.Kind == signalbox.EventDead {
				events = append(events, e)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Offset != bad/3 || !strings.HasPrefix(events[0].Reason, "sink bulk: ") || p.Stats().Dead != 1 {
		t.Fatalf("dead events %+v, stats.Dead %d; want the rejected record once", events, p.Stats().Dead)
	}
	mu.Lock()
	if len(indexed) != n-1 {
		t.Errorf("%d documents indexed, want %d", len(indexed), n-1)
	}
	mu.Unlock()
	dead := deadLines(t, dl)
	if len(dead) != 1 || num(dead[0], "offset") != bad/3 || num(dead[0], "event_time_ms") != exitBase+bad ||
		!strings.Contains(fmt.Sprint(dead[0]["reason"]), "sink bulk: bulk: item rejected with 400 mapper_parsing_exception") {
		t.Fatalf("dead letters %v", dead)
	}
	// A retry is logged, or counted in the next line's retries_not_logged
	// (the rate limit; the rate itself is tested in deliver_internal_test.go).
	retries := logs.FilterMessage("sink retry: consumption paused meanwhile").All()
	if len(retries) == 0 {
		t.Fatal("no retry warning logged for 429s")
	}
	if st := p.Stats().Sinks[0]; st.Name != "bulk" || st.Retries != 3 || st.Rejected != 1 {
		t.Errorf("sink stats %s: %d retries, %d rejected; want bulk, the 3 throttled requests, the 1 rejected record", st.Name, st.Retries, st.Rejected)
	}
	f := retries[0].ContextMap()
	if f["sink"] != "bulk" || f["attempt"] != int64(1) || !strings.Contains(fmt.Sprint(f["error"]), "429") {
		t.Fatalf("retry warning fields %v", f)
	}
	accounted := int64(len(retries))
	for _, r := range retries[1:] {
		accounted += r.ContextMap()["retries_not_logged"].(int64)
	}
	if accounted > 3 {
		t.Fatalf("%d retries logged or counted, but the server throttled 3 requests", accounted)
	}
}

// serveBulk answers a _bulk request: item returns the result of each index
// action, given its _id and document.
func serveBulk(w http.ResponseWriter, r *http.Request, item func(id string, doc []byte) string) {
	var items []string
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		var action struct {
			Index struct {
				ID string `json:"_id"`
			} `json:"index"`
		}
		_ = json.Unmarshal(sc.Bytes(), &action)
		sc.Scan()
		items = append(items, item(action.Index.ID, sc.Bytes()))
	}
	fmt.Fprintf(w, `{"errors":true,"items":[%s]}`, strings.Join(items, ","))
}

// bulkServer is an httptest server speaking _bulk that accepts every
// document; docs returns a copy of the documents it holds, by _id.
func bulkServer(t *testing.T) (url string, docs func() map[string][]byte) {
	var mu sync.Mutex
	held := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		serveBulk(w, r, func(id string, doc []byte) string {
			held[id] = bytes.Clone(doc)
			return `{"index":{"status":201}}`
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() map[string][]byte {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(held)
	}
}

// TestDeadLetterSinkRejectionIsLogged: a malformed record that the
// dead-letter sink (PostgreSQL, jsonb) refuses in turn has nowhere left to
// go. The job must not stop on it (every rerun would stop again): the
// record is dropped and logged at error with its coordinates and both
// reasons, and everything else is delivered.
func TestDeadLetterSinkRejectionIsLogged(t *testing.T) {
	conn, table := pgTable(t)
	c := startCluster(t, embedded.WithTopic("in", 3))
	ctx := context.Background()
	const n = 300
	produceExit(t, c, n, func(i int) string {
		switch i {
		case 100: // malformed, and refused by jsonb
			return `{"seq":100,"ts":"soon","x":1e1000000}`
		case 200: // malformed only
			return `{"seq":200,"ts":"later"}`
		}
		return fmt.Sprintf(`{"seq":%d,"ts":%d}`, i, exitBase+int64(i))
	})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	core, logs := observer.New(zap.ErrorLevel)
	doc := exitJob(c, fmt.Sprintf("  - {type: jsonl, path: %q}\n", out), fmt.Sprintf("{type: postgres, dsn_env: EXITPATH_PG_DSN, table: %s}", table))
	if err := runExitJob(t, doc, zap.New(core)); err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := len(deadLines(t, out)); got != n-2 {
		t.Fatalf("%d records delivered, want %d", got, n-2)
	}
	var dead []int
	rows, err := conn.Query(ctx, "SELECT (value->>'seq')::int FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	if dead, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil || len(dead) != 1 || dead[0] != 200 {
		t.Fatalf("dead-letter table holds %v (%v), want [200]", dead, err)
	}
	dropped := logs.FilterMessage("the dead-letter sink rejected a record: dropped").All()
	if len(dropped) != 1 {
		t.Fatalf("%d error lines, want 1: %v", len(dropped), logs.All())
	}
	f := dropped[0].ContextMap()
	if f["offset"] != int64(100/3) || f["partition"] != int32(100%3) || !strings.Contains(fmt.Sprint(f["reason"]), `event time field "ts"`) ||
		!strings.Contains(fmt.Sprint(f["dead_letter_reason"]), "postgres: 22003") {
		t.Fatalf("error line fields %v", f)
	}
}

// A run that stops at UntilTime keeps the guarantees when the sink fails
// fatally on the last records before the stop: Run returns the sink's
// error, and no commit passes a record the sink did not store.
func TestUntilTimeWithFatalSinkError(t *testing.T) {
	a := tp("a", 0)
	var recs []record.Record
	for off := range int64(5) {
		recs = append(recs, tsRecord("a", 0, off, fmt.Sprint("k", off), 1000*(off+1)))
	}
	src := &committingTimeline{commitLog: newCommitLog()}
	src.fetches = []record.Fetch{{Assigned: []record.PartitionInfo{{TopicPartition: a, End: 10}}}, fetched(a, 5, 10, recs...)}
	sink := &failingSink{failAfter: 2}
	p, err := signalbox.New(src, tsInputs("a"), signalbox.WithDelay(0), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithSink(sink), signalbox.WithUntil(signalbox.UntilTime(time.UnixMilli(3000))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	if err := p.Run(ctx); !errors.Is(err, errSinkDown) {
		t.Fatalf("Run = %v, want the sink's error %v", err, errSinkDown)
	}
	if ctx.Err() != nil {
		t.Fatal("the run did not end by itself at the until time")
	}
	if got, want := sink.lines(), []string{"a/0@0 t=1000", "a/0@1 t=2000"}; !slices.Equal(got, want) {
		t.Fatalf("the sink stored %q, want the 2 that fit %q", got, want)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if off, ok := src.committed[a]; ok && off > 2 {
		t.Errorf("committed a/0 at %d, past offset 2, which the sink did not store", off)
	}
}
