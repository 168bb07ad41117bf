package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
)

// TestEarlyProcessingIsRelease runs one job over the same topics with its
// processing run at release only, and as records are decoded (the default
// for JSON inputs that read neither late nor a table), under each late
// policy: every output file is byte for byte the same. The data has
// what early processing must not change: test records the filter drops,
// a map that fails (a string qty), a where that fails (a string x), late
// records (dead-lettered, or emitted out of turn), an input whose map
// makes what the job's filter then fails on, and an input read at release
// (raw: not JSON), and one whose event time is the Kafka timestamp (its
// value scanned for processing alone); and once more early with the parked
// records in pebble beyond a tiny budget, and on one core (the poller
// alone). The dead-letter sink gets each record's own bytes.
func TestEarlyProcessingIsRelease(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("orders", 2), embedded.WithTopic("o-x", 1), embedded.WithTopic("raw", 1), embedded.WithTopic("stamped", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs []*kgo.Record
	originals := map[string]bool{}
	add := func(topic string, part int32, value string) {
		originals[value] = true
		recs = append(recs, embedded.Record(topic, part, "k", value))
	}
	for i := range 800 { // enough that a fetch is prepared in two halves (prepareSplit)
		ts := future + int64(i*50)
		if i%20 == 19 {
			ts -= 5000 // late by the data: 5 s behind its partition, the delay 1 s
		}
		qty, x, status := fmt.Sprint(i%5+1), fmt.Sprint(i%4), "ok"
		switch {
		case i%13 == 5:
			qty = `"3"`
		case i%11 == 7:
			x = `"x"`
		case i%6 == 0:
			status = "test"
		}
		add("orders", int32(i%2), fmt.Sprintf(`{"ts":%d,"id":"o%d","qty":%s,"price":%d.5,"x":%s,"status":%q}`, ts, i, qty, i%7, x, status))
		if i%4 == 0 {
			add("o-x", 0, fmt.Sprintf(`{"ts":%d,"id":"p%d","qty":2,"price":1.5,"x":1,"status":"ok","drop":%v}`, ts, i, i%8 == 0))
			add("raw", 0, fmt.Sprintf(`{"ts":%d,"id":"r%d","qty":1,"price":30,"x":3,"status":"ok"}`, ts, i))
			add("stamped", 0, fmt.Sprintf(`{"id":"s%d","qty":%s,"price":2,"x":%s,"status":%q}`, i, qty, x, status))
		}
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	job := func(late, state string) string {
		return fmt.Sprintf(`%s
brokers: [%s]
inputs:
  - {topic: orders, time: field, time_field: ts}
  - topic_pattern: 'o-.*'
    time: field
    time_field: ts
    process: {map: '{"ts": value.ts, "id": value.id, "qty": value.qty, "price": value.price, "x": value.x, "keep": !value.drop}'}
  - {topic: raw, format: raw}
  - {topic: stamped}
delay: 1s
late: %s
until: end-offsets
process:
  filter: 'value.status != "test"'
  map: '{"id": value.id, "total": value.qty * value.price, "x": value.x}'
sinks:
  - {type: jsonl, path: all.jsonl}
  - {type: jsonl, path: big.jsonl, where: 'value.x > 1.0 && value.total >= 10.0'}
dead_letter: {type: jsonl, path: dlq.jsonl}
`, state, c.Addrs()[0], late)
	}
	run := func(t *testing.T, late string, early bool, state string) map[string]string {
		t.Helper()
		earlyProcessing = early
		defer func() { earlyProcessing = true }()
		t.Chdir(t.TempDir())
		runJob(t, job(late, state))
		out := map[string]string{}
		for _, f := range []string{"all.jsonl", "big.jsonl", "dlq.jsonl"} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = string(b)
		}
		return out
	}
	for _, late := range []string{"dead-letter", "emit"} {
		t.Run(late, func(t *testing.T) {
			atRelease, early := run(t, late, false, ""), run(t, late, true, "")
			// parked records in pebble beyond a small budget, where the
			// store does not keep what early processing found
			spilled := run(t, late, true, "state: {dir: parked, memory: 1KiB}")
			// on one core: the poller alone, no helper (prepareSplit)
			procs := runtime.GOMAXPROCS(1)
			oneCore := run(t, late, true, "")
			runtime.GOMAXPROCS(procs)
			for f, want := range atRelease {
				if early[f] != want || spilled[f] != want || oneCore[f] != want {
					t.Errorf("%s, processing early:\n%s\nearly, spilled:\n%s\nearly, one core:\n%s\nat release:\n%s", f, early[f], spilled[f], oneCore[f], want)
				}
			}
			dlq := readLines(t, writeTemp(t, early["dlq.jsonl"]))
			t.Logf("%d all, %d big, %d dead", strings.Count(early["all.jsonl"], "\n"), strings.Count(early["big.jsonl"], "\n"), len(dlq))
			reasons := map[string]int{}
			for _, l := range dlq {
				if !originals[string(l.Value)] {
					t.Errorf("dead letter %s (%s): not a record's own bytes", l.Value, l.Reason)
				}
				reasons[strings.SplitN(l.Reason, ":", 2)[0]]++
			}
			if reasons["process.map"] == 0 || reasons["sinks[1].where"] == 0 || reasons["process.filter"] == 0 ||
				late == "dead-letter" && len(dlq) == reasons["process.map"]+reasons["sinks[1].where"]+reasons["process.filter"] {
				t.Errorf("dead letters by reason %v: the data must fail the map, the where and the filter, and be late", reasons)
			}
		})
	}
}

// writeTemp writes s to a file of its own and returns its path.
func writeTemp(t *testing.T, s string) string {
	t.Helper()
	f := t.TempDir() + "/f"
	if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestEarlyOnlyWhatReadsNothingOfTheRelease: a chain runs as records are
// decoded only for a JSON input (format json or left out, the key's own
// bytes) whose steps, and the job's, read neither late nor a table (but
// through the lookups a template leaves to the release:
// TestLookupMapRunsEarlyAsATemplate). A schema'd key or value is rendered
// at release, so `key` and `value` would read other bytes before it.
func TestEarlyOnlyWhatReadsNothingOfTheRelease(t *testing.T) {
	for _, c := range []struct {
		input, job string
		early      bool
	}{
		{`{topic: a}`, `{filter: 'value.x > 1.0'}`, true},
		{`{topic: a, format: json, process: {map: '{"x": value.x}'}}`, `{filter: 'key == "k"'}`, true},
		{`{topic: a, format: raw}`, `{filter: 'value.x > 1.0'}`, false},
		{`{topic: a, format: avro}`, `{filter: 'value.x > 1.0'}`, false},
		{`{topic: a, format: protobuf}`, `{filter: 'value.x > 1.0'}`, false},
		{`{topic: a, format: json_schema}`, `{filter: 'value.x > 1.0'}`, false},
		{`{topic: a, key_format: avro}`, `{filter: 'key == "k"'}`, false},
		{`{topic: a}`, `{filter: '!late'}`, false},
		{`{topic: a, process: {filter: 'late'}}`, `{map: '{"x": 1}'}`, false},
	} {
		j, err := Parse([]byte(fmt.Sprintf("brokers: [h:1]\ninputs: [%s]\nprocess: %s\nsinks: [{type: jsonl, path: o.jsonl}]\n", c.input, c.job)))
		if err != nil {
			t.Fatal(err)
		}
		v := &validator{}
		pr := j.processing(v)
		if err := v.errs.err(); err != nil {
			t.Fatalf("%s, %s: %v", c.input, c.job, err)
		}
		if got := pr.early != nil && pr.early("a") != nil; got != c.early || pr.allEarly != c.early {
			t.Errorf("input %s, process %s: early %v (all %v), want %v", c.input, c.job, got, pr.allEarly, c.early)
		}
	}
}

// TestEarlyProcessingThroughRebalances: two members of a group whose job
// filters and maps as records are decoded, the map's lookup of a table
// left to the release (a template). The first runs alone, the
// second joins, then the first leaves cleanly and comes back: every
// partition is revoked from a member with records prepared and parked, and
// re-read by another. In the union of the members' outputs every record
// the filter keeps is present, and every line holds exactly its own
// record's mapped value: nothing prepared for one owner reaches another's
// output as another record's, the raw value, or a dropped record. The
// same when one of the first member's sinks stalls for 1.5 s and the
// second joins while it does: the revoke waits for what the first
// released, with more records prepared and parked behind the stall.
func TestEarlyProcessingThroughRebalances(t *testing.T) {
	for _, stall := range []time.Duration{0, 1500 * time.Millisecond} {
		t.Run(fmt.Sprint("stall=", stall), func(t *testing.T) {
			t.Parallel() // it mostly waits
			testEarlyProcessingThroughRebalances(t, stall)
		})
	}
}

// stallingSink is a second sink for a job's records, which it discards;
// once stall is set, its next Write waits that long first, and holds the
// run's writes up as long.
type stallingSink struct {
	stall atomic.Int64 // nanoseconds, once
}

func (s *stallingSink) Open(context.Context) error { return nil }

func (s *stallingSink) Write(context.Context, []record.Record) error {
	time.Sleep(time.Duration(s.stall.Swap(0)))
	return nil
}

func (s *stallingSink) Flush(context.Context) error { return nil }

func (s *stallingSink) Close() error { return nil }

func testEarlyProcessingThroughRebalances(t *testing.T, stall time.Duration) {
	c, err := embedded.Start(embedded.WithTopic("sales", 4), embedded.WithTopic("products", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir() // the members' files (not Chdir: the two cases run at once)
	job := func(out string) string {
		return fmt.Sprintf(`
brokers: [%s]
group: early-moves
inputs: [{topic: sales, time: field, time_field: ts}]
tables: [{name: products, topic: products}]
delay: 100ms
process:
  filter: 'value.status != "test"'
  map: '{"id": value.id, "n": value.n, "tag": value.sku + "/" + value.id, "p": lookup("products", value.sku)}'
sinks: [{type: jsonl, path: %s}]
`, c.Addrs()[0], filepath.Join(dir, out))
	}
	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	base := time.Now().Add(-10 * time.Minute).UnixMilli() // event times already past
	var products []*kgo.Record
	for s := range 8 { // sku s8 has no product: null
		r := embedded.Record("products", 0, fmt.Sprint("s", s), fmt.Sprintf(`{"s":%d}`, s))
		r.Timestamp = time.UnixMilli(base - 60_000) // a minute before every sale
		products = append(products, r)
	}
	if err := c.Produce(ctx, products...); err != nil {
		t.Fatal(err)
	}
	product := func(i int) string {
		if i%9 == 8 {
			return "null"
		}
		return fmt.Sprintf(`{"s":%d}`, i%9)
	}
	type member struct {
		pl   *signalbox.Pipeline
		sink *stallingSink
		stop context.CancelFunc
		done chan error
	}
	start := func(out string) *member {
		t.Helper()
		p, err := build(t, job(out))
		if err != nil {
			t.Fatal(err)
		}
		p.Kafka.HeartbeatInterval = 100 * time.Millisecond // a member sees a rebalance sooner than 3 s
		sink := new(stallingSink)
		pl, err := p.Pipeline(signalbox.WithSink(sink))
		if err != nil {
			t.Fatal(err)
		}
		mctx, mstop := context.WithCancel(ctx)
		m := &member{pl: pl, sink: sink, stop: mstop, done: make(chan error, 1)}
		go func() { m.done <- pl.Run(mctx) }()
		return m
	}
	leave := func(m *member) {
		t.Helper()
		m.stop()
		if err := <-m.done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	owns := func(m *member, n int) func() bool { // of sales (every member reads the whole table)
		return func() bool {
			sales := 0
			for _, ps := range m.pl.Stats().Partitions {
				if ps.ID.Input == "sales" {
					sales++
				}
			}
			return sales == n
		}
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		waitUntil(t, ctx, what, ok)
	}
	kept, next := map[int]string{}, 0
	produce := func(n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			i := next
			next++
			status := "ok"
			if i%7 == 3 {
				status = "test"
			} else {
				kept[i] = fmt.Sprintf(`{"id":"o%d","n":%d,"p":%s,"tag":"s%d/o%d"}`, i, i*3, product(i), i%9, i)
			}
			recs = append(recs, embedded.Record("sales", int32(i%4), fmt.Sprint("s", i%9),
				fmt.Sprintf(`{"id":"o%d","sku":"s%d","ts":%d,"n":%d,"status":%q,"pad":"%0128d"}`, i, i%9, base+int64(i), i*3, status, i)))
		}
		if err := c.Produce(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	const step = 3000
	outputs := func() map[int]bool { // the records in whole lines so far
		seen := map[int]bool{}
		for _, f := range []string{"m0.jsonl", "m1.jsonl", "m2.jsonl"} {
			data, _ := os.ReadFile(filepath.Join(dir, f))
			lines := strings.Split(string(data), "\n")
			for _, l := range lines[:len(lines)-1] {
				var e envelopeLine
				if json.Unmarshal([]byte(l), &e) == nil {
					seen[int(e.EventTimeMs-base)] = true
				}
			}
		}
		return seen
	}
	m0 := start("m0.jsonl")
	waitFor("the first member with every partition", owns(m0, 4))
	produce(step)
	m0.sink.stall.Store(int64(stall))
	produce(step) // the first member alone: its sink stalls on them
	waitFor("the first member's sink stalling", func() bool { return m0.sink.stall.Load() == 0 })
	m1 := start("m1.jsonl")
	produce(step) // while the second joins: partitions move mid-stream
	waitFor("the members sharing the partitions", func() bool { return owns(m0, 2)() && owns(m1, 2)() })
	produce(step)
	leave(m0)
	produce(step) // while the first's partitions move to the second
	waitFor("the second member with every partition", owns(m1, 4))
	m2 := start("m2.jsonl")
	produce(step)
	waitFor("the members sharing the partitions again", func() bool { return owns(m1, 2)() && owns(m2, 2)() })
	waitFor("every kept record out", func() bool { return len(outputs()) >= len(kept) })
	leave(m1)
	leave(m2)
	seen := map[int]int{}
	byPart := map[int32]map[string]bool{} // the members that output a partition's records
	for _, f := range []string{"m0.jsonl", "m1.jsonl", "m2.jsonl"} {
		for _, l := range readLines(t, filepath.Join(dir, f)) {
			if byPart[l.Partition] == nil {
				byPart[l.Partition] = map[string]bool{}
			}
			byPart[l.Partition][f] = true
			i := int(l.EventTimeMs - base)
			want, ok := kept[i]
			switch {
			case !ok:
				t.Errorf("%s: record %d (%s) output, but the filter drops it", f, i, l.Value)
			case string(l.Value) != want:
				t.Errorf("%s: record %d is %s, want %s", f, i, l.Value, want)
			}
			seen[i]++
		}
	}
	dups := 0
	for i := range kept {
		if seen[i] == 0 {
			t.Errorf("record %d never output", i)
		}
		dups += max(0, seen[i]-1)
	}
	moved := 0
	for _, ms := range byPart {
		if len(ms) > 1 {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no partition's records were output by two members: nothing moved mid-stream (%v)", byPart)
	}
	t.Logf("%d records, %d kept, %d output again after a move (at least once without a checkpoint sink), %d of 4 partitions output by more than one member", next, len(kept), dups, moved)
}

// waitUntil polls ok every 10 ms until it holds, and fails t, naming
// what it waited for, when ctx ends first.
func waitUntil(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		if ctx.Err() != nil {
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
