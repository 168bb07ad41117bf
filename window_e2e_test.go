package signalbox_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/envelope"
	"github.com/signalbox/signalbox/sources/script"
)

// sale is one generated sales record.
type sale struct {
	sku string
	ts  int64
	qty int
}

// salesTopic is issue 37's data, scaled: n sales records of 40 skus on
// three partitions, each partition in event-time order, about 50 minutes
// of event time over all, some with qty 0 (which the window's where
// drops).
func salesTopic(topic string, n int, seed uint64) ([]script.Partition, []sale) {
	return generateSales(topic, n, seed, false)
}

// generateSales is salesTopic's data; byKey: keyed by sku, as a producer
// that partitions by key writes it, sku i's records all in partition
// i mod 3 (42 skus), instead of 40 skus under random keys everywhere.
func generateSales(topic string, n int, seed uint64, byKey bool) ([]script.Partition, []sale) {
	rnd := rand.New(rand.NewPCG(seed, 37))
	if byKey {
		rnd = rand.New(rand.NewPCG(seed, 38))
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	step := int64(50 * 60_000 / (n / 3))
	var all []sale
	parts := make([]script.Partition, 3)
	for p := range parts {
		parts[p].Topic, parts[p].Partition = topic, int32(p)
		ts := base
		for range n / 3 {
			ts += rnd.Int64N(2 * step)
			sku := rnd.IntN(40)
			if byKey {
				sku = 3*(sku%14) + p
			}
			s := sale{sku: fmt.Sprintf("sku-%02d", sku), ts: ts, qty: rnd.IntN(10)}
			all = append(all, s)
			key := s.sku
			if !byKey {
				key = strconv.Itoa(rnd.IntN(1000))
			}
			parts[p].Records = append(parts[p].Records, record.Record{
				Key:   []byte(key),
				Value: fmt.Appendf(nil, `{"sku":%q,"ts":%d,"qty":%d}`, s.sku, s.ts, s.qty),
			})
		}
	}
	return parts, all
}

// minuteResult is one line of the window's sink, decoded.
type minuteResult struct {
	Key    string `json:"key"`
	Start  string `json:"start"`
	End    string `json:"end"`
	Count  int64  `json:"count"`
	Qty    int64  `json:"qty"`
	MaxQty int64  `json:"max_qty"`
}

// minuteOracle: every (sku, minute) window of the sales with qty > 0, in
// the order of ends, then skus.
func minuteOracle(sales []sale) []minuteResult { return hoppingOracle(sales, 60_000) }

// hoppingOracle: every (sku, window) of one-minute windows starting every
// every ms (every = 60,000: tumbling) of the sales with qty > 0, in the
// order of ends, then skus.
func hoppingOracle(sales []sale, every int64) []minuteResult {
	m := map[[2]string]*minuteResult{}
	for _, s := range sales {
		if s.qty <= 0 {
			continue
		}
		for start := s.ts - s.ts%every; start > s.ts-60_000; start -= every {
			k := [2]string{time.UnixMilli(start + 60_000).UTC().Format(time.RFC3339Nano), s.sku}
			r := m[k]
			if r == nil {
				r = &minuteResult{Key: s.sku, Start: time.UnixMilli(start).UTC().Format(time.RFC3339Nano), End: k[0]}
				m[k] = r
			}
			r.Count++
			r.Qty += int64(s.qty)
			r.MaxQty = max(r.MaxQty, int64(s.qty))
		}
	}
	keys := slices.Collect(func(yield func([2]string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortFunc(keys, func(a, b [2]string) int {
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		return cmp.Compare(a[1], b[1])
	})
	out := make([]minuteResult, len(keys))
	for i, k := range keys {
		out[i] = *m[k]
	}
	return out
}

// windowJob is issue 37's job, verbatim but for the paths and the input's
// time settings, over the cluster c.
func windowJob(c *embedded.Cluster, raw, minute string) string {
	return fmt.Sprintf(`brokers: [%s]
inputs:
  - {topic: sales, time: field, time_field: ts, time_format: unix_ms}
until: end-offsets
sinks:
  - {type: jsonl, path: %q}
windows:
  - name: per_minute
    inputs: [sales]          # default: every input with event time
    key: value.sku           # an expression; default: the record's ordering key
    tumbling: 1m             # or hopping: {size: 1m, every: 10s}, or session: {gap: 5m}
    where: 'value.qty > 0'   # optional filter
    aggregate:
      count: count()
      qty: sum(value.qty)
      max_qty: max(value.qty)   # also min, avg, and first and last by event time
    allowed_lateness: 0s
    sinks:
      - type: jsonl
        path: %q
`, c.Addrs()[0], raw, minute)
}

// TestWindowPerMinuteOverKafka: issue 37's target job on 30,000 sales
// records on three partitions of the embedded broker, no group, until the
// end offsets: every (sku, minute) window exactly once with the oracle's
// count, sum and max, in window-end order (ties by sku), each with the
// envelope of WithWindow; the raw sink gets every record and no result;
// a second run writes the same bytes. SIGNALBOX_WINDOW_RECORDS=900000
// runs the full size.
func TestWindowPerMinuteOverKafka(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("sales", 3))
	n := 30_000
	if s := os.Getenv("SIGNALBOX_WINDOW_RECORDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	parts, sales := salesTopic("sales", n, 1)
	produceParts(t, c, parts)
	want := minuteOracle(sales)
	var first []byte
	for run := range 2 {
		dir := t.TempDir()
		raw, minute := filepath.Join(dir, "raw.jsonl"), filepath.Join(dir, "minute.jsonl")
		began := time.Now()
		p, err := runExitPipeline(t, windowJob(c, raw, minute), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("run %d: %d records, %d windows in %v", run, len(sales), len(want), time.Since(began).Round(time.Millisecond))
		out, err := os.ReadFile(minute)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
		got := make([]minuteResult, len(lines))
		offsets := map[int64]bool{} // a result's offset is its own (resultID): unique
		for i, l := range lines {
			d, err := envelope.Decode(l)
			if err != nil {
				t.Fatalf("line %d: %v", i, err)
			}

			var env struct {
				EventTime string `json:"event_time"`
			}
			_ = json.Unmarshal(l, &env)
			if err := json.Unmarshal(d.Value, &got[i]); err != nil {
				t.Fatalf("line %d: %v: %s", i, err, l)
			}
			end, _ := time.Parse(time.RFC3339Nano, got[i].End)
			if d.Topic != "per_minute" || string(d.Key) != got[i].Key || offsets[d.Offset] || d.Partition != 0 {
				t.Fatalf("line %d: envelope %+v", i, d)
			}
			offsets[d.Offset] = true
			if et, err := time.Parse(time.RFC3339Nano, env.EventTime); err != nil || !et.Equal(end.Add(-time.Millisecond)) {
				t.Fatalf("line %d: event_time %q, want the window's end − 1 ms: %s", i, env.EventTime, l)
			}
		}
		if !reflect.DeepEqual(got, want) {
			n := min(len(got), len(want))
			for i := range n {
				if got[i] != want[i] {
					t.Fatalf("run %d: %d results, oracle %d; first difference at %d:\n got %+v\nwant %+v", run, len(got), len(want), i, got[i], want[i])
				}
			}
			t.Fatalf("run %d: %d results, oracle %d", run, len(got), len(want))
		}
		rawOut, err := os.ReadFile(raw)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(rawOut, []byte("\n")); n != len(sales) || bytes.Contains(rawOut, []byte(`"per_minute"`)) {
			t.Fatalf("raw sink: %d lines for %d records (or a window result in it)", n, len(sales))
		}
		st := p.Stats()
		if len(st.Windows) != 1 || st.Windows[0].Results != int64(len(want)) || st.Windows[0].Open != 0 || st.Windows[0].Late != 0 || st.Windows[0].StateBytes != 0 || st.Out != int64(len(sales)) {
			t.Fatalf("stats: %+v, out %d", st.Windows, st.Out)
		}
		if run == 0 {
			first = out
		} else if !bytes.Equal(out, first) {
			t.Fatal("the second run's results differ from the first's")
		}
	}
}

// TestWindowClosesLive: a live job (no until) whose partitions are caught
// up: the processing-time watermark passes every window's end, so every
// result is emitted while the job runs, with no more records arriving
// (Kafka Streams' suppress would wait for a new record).
func TestWindowClosesLive(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("sales", 3))
	parts, sales := salesTopic("sales", 3_000, 2)
	produceParts(t, c, parts)
	want := minuteOracle(sales)
	dir := t.TempDir()
	doc := bytes.Replace([]byte(windowJob(c, filepath.Join(dir, "raw.jsonl"), filepath.Join(dir, "minute.jsonl"))), []byte("until: end-offsets\n"), nil, 1)
	p, err := buildPlan(t, string(doc), zap.NewNop()).Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for {
		if st := p.Stats(); len(st.Windows) == 1 && st.Windows[0].Results == int64(len(want)) {
			if st.Windows[0].Open != 0 || st.Windows[0].Keys != 0 {
				t.Fatalf("%+v", st.Windows[0])
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("results: %+v, want %d", p.Stats().Windows, len(want))
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	<-done
}

// TestWindowHoppingAndSessionJob: hopping and session windows from the
// job file, side by side on one input: each gets its windows' counts, in
// the order of their ends.
func TestWindowHoppingAndSessionJob(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("sales", 3))
	parts, sales := salesTopic("sales", 3_000, 3)
	produceParts(t, c, parts)
	dir := t.TempDir()
	hop, ses := filepath.Join(dir, "hop.jsonl"), filepath.Join(dir, "ses.jsonl")
	doc := fmt.Sprintf(`brokers: [%s]
inputs: [{topic: sales, time: field, time_field: ts, time_format: unix_ms}]
until: end-offsets
sinks: [{type: jsonl, path: %q}]
windows:
  - name: hop
    key: value.sku
    hopping: {size: 1m, every: 20s}
    aggregate: {n: count(), first_qty: first(value.qty), last_qty: last(value.qty)}
    sinks: [{type: jsonl, path: %q}]
  - name: ses
    key: value.sku
    session: {gap: 30s}
    aggregate: {n: count()}
    sinks: [{type: jsonl, path: %q}]
`, c.Addrs()[0], filepath.Join(dir, "raw.jsonl"), hop, ses)
	if _, err := runExitPipeline(t, doc, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	type key struct {
		sku        string
		start, end int64
	}
	hopWant, sesWant := map[key]int64{}, map[key]int64{}
	bySku := map[string][]int64{}
	for _, s := range sales {
		for st := s.ts - s.ts%20_000; st > s.ts-60_000; st -= 20_000 {
			hopWant[key{s.sku, st, st + 60_000}]++
		}
		bySku[s.sku] = append(bySku[s.sku], s.ts)
	}
	for sku, ts := range bySku {
		slices.Sort(ts)
		start, n := ts[0], int64(1)
		for i := 1; i <= len(ts); i++ {
			if i == len(ts) || ts[i] >= ts[i-1]+30_000 {
				sesWant[key{sku, start, ts[i-1] + 30_000}] = n
				if i < len(ts) {
					start, n = ts[i], 0
				}
			}
			n++
		}
	}
	for _, f := range []struct {
		path string
		want map[key]int64
	}{{hop, hopWant}, {ses, sesWant}} {
		out, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		got := map[key]int64{}
		var lastEnd int64
		for _, l := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
			d, err := envelope.Decode(l)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Key        string
				Start, End time.Time
				N          int64
			}
			if err := json.Unmarshal(d.Value, &r); err != nil {
				t.Fatal(err)
			}
			k := key{r.Key, r.Start.UnixMilli(), r.End.UnixMilli()}
			if _, dup := got[k]; dup || k.end < lastEnd {
				t.Fatalf("%s: %+v twice, or out of end order", f.path, k)
			}
			got[k], lastEnd = r.N, k.end
		}
		if !reflect.DeepEqual(got, f.want) {
			t.Fatalf("%s: %d windows, want %d", f.path, len(got), len(f.want))
		}
	}
}
