package signalbox_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/envelope"
	"github.com/signalbox/signalbox/sources/script"
)

// salesByKey is salesTopic's data keyed by sku, as a producer that
// partitions by key writes it: sku i's records all in partition i mod 3.
func salesByKey(topic string, n int, seed uint64) ([]script.Partition, []sale) {
	return generateSales(topic, n, seed, true)
}

// produceSmall produces parts in batches of at most 50 records per
// partition, so that a reader with a small PartitionMaxRecords replays
// them over many fetches and releases as it goes.
func produceSmall(t *testing.T, c *embedded.Cluster, parts []script.Partition) {
	t.Helper()
	for from := 0; ; from += 50 {
		chunk := make([]script.Partition, 0, len(parts))
		for _, p := range parts {
			if from < len(p.Records) {
				q := p
				q.Records = p.Records[from:min(from+50, len(p.Records))]
				chunk = append(chunk, q)
			}
		}
		if len(chunk) == 0 {
			return
		}
		produceParts(t, c, chunk)
	}
}

// groupPipeline is the pipeline of doc, reading 50 records per partition
// per fetch.
func groupPipeline(t *testing.T, doc string, opts ...signalbox.Option) *signalbox.Pipeline {
	t.Helper()
	plan := buildPlan(t, doc, zap.NewNop())
	plan.Kafka.PartitionMaxRecords = 50
	p, err := plan.Pipeline(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// groupWindowJob is issue 37's job in group g, keyed by the Kafka key,
// with frequent checkpoints.
func groupWindowJob(c *embedded.Cluster, g, raw, minute string) string {
	doc := strings.Replace(windowJob(c, raw, minute), "key: value.sku ", "key: key       ", 1)
	return "group: " + g + "\ncheckpoint_interval: 20ms\n" + doc
}

// readMinutes decodes a window sink's file (none: no result).
func readMinutes(t *testing.T, path string) []minuteResult {
	t.Helper()
	out, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var got []minuteResult
	for _, l := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		d, err := envelope.Decode(l)
		if err != nil {
			t.Fatal(err)
		}
		var m minuteResult
		if err := json.Unmarshal(d.Value, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	return got
}

// lineCount is the number of lines in path so far.
func lineCount(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// waitLines waits until path has n lines, failing t if the run ends (done)
// or half a minute passes first.
func waitLines(t *testing.T, path string, n int, done chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for lineCount(path) < n {
		select {
		case err := <-done:
			t.Fatalf("the run ended with %d of %d lines in %s: %v", lineCount(path), n, path, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d lines in %s after 30 s", lineCount(path), n, path)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkUnion checks the results of several runs against the oracle: every
// window present, none with other values; exact: none repeated either.
func checkUnion(t *testing.T, want []minuteResult, exact bool, runs ...[]minuteResult) {
	t.Helper()
	byWindow := map[[2]string]minuteResult{}
	for _, w := range want {
		byWindow[[2]string{w.Key, w.Start}] = w
	}
	seen := map[[2]string]int{}
	total := 0
	for _, run := range runs {
		for _, r := range run {
			k := [2]string{r.Key, r.Start}
			w, ok := byWindow[k]
			if !ok || w != r {
				t.Fatalf("result %+v differs from the oracle's %+v", r, w)
			}
			seen[k]++
			total++
		}
	}
	for k := range byWindow {
		if seen[k] == 0 {
			t.Fatalf("window %v missing (%d results for %d windows)", k, total, len(want))
		}
		if exact && seen[k] > 1 {
			t.Fatalf("window %v emitted %d times", k, seen[k])
		}
	}
}

// TestWindowGroupRestart: issue 37's window job in a consumer group, keyed
// by the Kafka key, with tumbling, hopping or session windows, stopped
// early or late, cleanly or by a failing sink (a crash: nothing after the
// last checkpoint commits), and restarted: the restart resumes from the
// committed offsets, held back to the oldest record of a window still
// open (design K6, K9), rebuilds the open windows, and emits every window
// with the oracle's values: the union of the two runs is the
// uninterrupted run's output, each window once after a clean stop, and
// only exact copies after a crash.
func TestWindowGroupRestart(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("sales", 3))
	parts, sales := salesByKey("sales", 9_000, 5)
	produceSmall(t, c, parts)
	for _, kind := range []string{"tumbling", "hopping"} {
		want, job := minuteOracle(sales), func(g, raw, minute string) string { return groupWindowJob(c, g, raw, minute) }
		if kind == "hopping" {
			// A record is in three windows: a restart re-reads records of
			// windows already emitted, whose results it must not repeat.
			want = hoppingOracle(sales, 20_000)
			job = func(g, raw, minute string) string {
				return strings.Replace(groupWindowJob(c, g, raw, minute), "tumbling: 1m ", "hopping: {size: 1m, every: 20s}", 1)
			}
		}
		groupRestart(t, c, kind, want, job)
	}
	job := func(g, raw, minute string) string {
		return strings.Replace(groupWindowJob(c, g, raw, minute), "tumbling: 1m ", "session: {gap: 20s}", 1)
	}
	groupRestart(t, c, "session", sessionOracle(sales, 20_000), job)
}

// sessionOracle: every session of each sku's sales with qty > 0, records
// less than gap apart, [first, last + gap).
func sessionOracle(sales []sale, gap int64) []minuteResult {
	bySku := map[string][]sale{}
	for _, s := range sales {
		if s.qty > 0 {
			bySku[s.sku] = append(bySku[s.sku], s)
		}
	}
	var out []minuteResult
	rfc := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
	for sku, ss := range bySku {
		slices.SortStableFunc(ss, func(a, b sale) int { return cmp.Compare(a.ts, b.ts) })
		var cur *minuteResult
		var last int64
		for _, s := range ss {
			if cur == nil || s.ts-last >= gap {
				if cur != nil {
					cur.End = rfc(last + gap)
					out = append(out, *cur)
				}
				cur = &minuteResult{Key: sku, Start: rfc(s.ts)}
			}
			last = s.ts
			cur.Count++
			cur.Qty += int64(s.qty)
			cur.MaxQty = max(cur.MaxQty, int64(s.qty))
		}
		cur.End = rfc(last + gap)
		out = append(out, *cur)
	}
	return out
}

func groupRestart(t *testing.T, c *embedded.Cluster, kind string, want []minuteResult, job func(g, raw, minute string) string) {
	for i, stopAt := range []int{1_500, 4_500} { // early: most windows open; late: most emitted
		for _, crash := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stop=%d/crash=%v", kind, stopAt, crash), func(t *testing.T) {
				dir := t.TempDir()
				g := fmt.Sprintf("gw-%s-%d-%v", kind, i, crash)
				var runs [][]minuteResult
				for run := range 2 {
					raw, minute := filepath.Join(dir, fmt.Sprint("raw", run)), filepath.Join(dir, fmt.Sprint("minute", run))
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					// A raw sink that stops the first run once it has
					// stopAt records: cleanly, or as a crash (a failing
					// sink: nothing after the last checkpoint commits).
					stop := &windowStopper{crash: crash, cancel: cancel}
					if run == 0 {
						stop.n = stopAt
					}
					p := groupPipeline(t, job(g, raw, minute), signalbox.WithSink(stop))
					err := p.Run(ctx)
					cancel()
					if run == 1 && err != nil || run == 0 && err != nil && !isCanceled(err) && !errors.Is(err, errWindowCrash) {
						t.Fatalf("run %d: %v", run, err)
					}
					runs = append(runs, readMinutes(t, minute))
				}
				t.Logf("stopped after %d raw records: %d results, then %d; oracle %d", stopAt, len(runs[0]), len(runs[1]), len(want))
				if len(runs[1]) == 0 {
					t.Fatal("the stop came after every window was out")
				}
				checkUnion(t, want, !crash, runs...)
			})
		}
	}
}

// isCanceled reports whether err is a clean stop's.
func isCanceled(err error) bool {
	return err == context.Canceled || strings.Contains(err.Error(), context.Canceled.Error())
}

// pacedSink is a raw sink that takes its time with each batch, so that a
// member is still in the middle of its windows when the group changes;
// while stalled is set, its next Write waits that long first.
type pacedSink struct {
	collect
	per     time.Duration
	stalled atomic.Int64 // nanoseconds, once
}

func (s *pacedSink) Write(ctx context.Context, b []record.Record) error {
	time.Sleep(s.per + time.Duration(s.stalled.Swap(0)))
	return s.collect.Write(ctx, b)
}

func (s *pacedSink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

// TestWindowGroupTakeover: two live members of one group run issue 37's
// window job keyed by the Kafka key. The second joins while the first is
// in the middle of its windows, and the first leaves before the end: each
// task that moves is re-read by its new owner from the held-back
// committed offset and its windows rebuilt (design K9). Every window is
// in the union of the members' outputs, with the oracle's values, once.
// The same when the first member's sink stalls for 1.5 s just as the
// second joins: the revoke's barrier waits for it (S4), and the tasks
// move only once what it released is written and committed.
func TestWindowGroupTakeover(t *testing.T) {
	t.Parallel()
	for _, stall := range []time.Duration{0, 1500 * time.Millisecond} {
		t.Run(fmt.Sprint("stall=", stall), func(t *testing.T) {
			t.Parallel() // it mostly waits
			testWindowGroupTakeover(t, stall)
		})
	}
}

func testWindowGroupTakeover(t *testing.T, stall time.Duration) {
	c := startCluster(t, embedded.WithTopic("sales", 3))
	parts, sales := salesByKey("sales", 9_000, 6)
	produceSmall(t, c, parts)
	want := minuteOracle(sales)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type member struct {
		minute string
		raw    *pacedSink
		p      *signalbox.Pipeline
		cancel context.CancelFunc
		done   chan error
	}
	start := func(name string) *member {
		m := &member{minute: filepath.Join(dir, name+".minute"), raw: &pacedSink{per: 10 * time.Millisecond}, done: make(chan error, 1)}
		doc := strings.Replace(groupWindowJob(c, "takeover", filepath.Join(dir, name+".raw"), m.minute), "until: end-offsets\n", "", 1)
		m.p = groupPipeline(t, doc, signalbox.WithSink(m.raw), signalbox.WithBatchSize(20))
		var mctx context.Context
		mctx, m.cancel = context.WithCancel(ctx)
		go func() { m.done <- m.p.Run(mctx) }()
		return m
	}
	var a, b *member
	wait := func(what string, m *member, ok func() bool) {
		for !ok() {
			select {
			case err := <-m.done:
				t.Fatalf("%s: the run ended: %v", what, err)
			case <-ctx.Done():
				t.Fatalf("%s: timed out: a %d raw, %+v; b %d raw, %+v", what, a.raw.len(), a.p.Stats(), b.raw.len(), b.p.Stats())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	results := func(m *member) int64 {
		if ws := m.p.Stats().Windows; len(ws) > 0 {
			return ws[0].Results
		}
		return 0
	}
	a = start("a")
	b = a
	wait("a reads", a, func() bool { return a.raw.len() >= 500 })
	a.raw.stalled.Store(int64(stall))
	b = start("b")
	wait("b takes a task", b, func() bool { return b.raw.len() >= 300 })
	aResults := results(a)
	a.cancel()
	if err := <-a.done; err != nil && !isCanceled(err) {
		t.Fatalf("a: %v", err)
	}
	aResults = results(a)
	wait("b ends the windows", b, func() bool { return aResults+results(b) >= int64(len(want)) && b.raw.len()+a.raw.len() >= len(sales) })
	b.cancel()
	if err := <-b.done; err != nil && !isCanceled(err) {
		t.Fatalf("b: %v", err)
	}
	ra, rb := readMinutes(t, a.minute), readMinutes(t, b.minute)
	t.Logf("a: %d raw, %d results; b: %d raw, %d results; oracle %d windows", a.raw.len(), len(ra), b.raw.len(), len(rb), len(want))
	if len(ra) == 0 || len(rb) == 0 || len(ra) == len(want) {
		t.Fatalf("the takeover was not in the middle of the windows: a %d results, b %d", len(ra), len(rb))
	}
	checkUnion(t, want, true, ra, rb)
}
