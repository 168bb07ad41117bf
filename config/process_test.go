package config

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/process"
)

// issue36Job is the job file of issue 36, verbatim, after the connection
// and the input.
const issue36Job = `
process:
  filter: 'value.status != "test"'
  map: '{"id": value.id, "sku": value.sku, "total": value.qty * value.price}'
sinks:
  - type: jsonl
    path: all.jsonl
  - type: jsonl
    path: big.jsonl
    where: 'value.total >= 20.0'
dead_letter:
  type: jsonl
  path: dlq.jsonl
`

// envelopeLine is what the test reads of a JSONL line.
type envelopeLine struct {
	Offset      int64           `json:"offset"`
	Partition   int32           `json:"partition"`
	EventTimeMs int64           `json:"event_time_ms"`
	Value       json.RawMessage `json:"value"`
	Reason      string          `json:"reason"`
}

func readLines(t *testing.T, path string) []envelopeLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []envelopeLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l envelopeLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestProcessJobEndToEnd runs issue 36's job against the embedded broker:
// every record but the test ones is in all.jsonl once, with exactly the
// mapped value and its own event time, in event-time order; big.jsonl has
// exactly those with a total of 20 or more (the where sees the mapped
// value); the record whose qty is a string is in dlq.jsonl, with the
// expression's path in its reason, and nowhere else.
func TestProcessJobEndToEnd(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("orders", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n, bad = 60, 17
	type order struct {
		id, sku    string
		qty, price float64
		test       bool
		ts         int64
		part       int32
	}
	var orders []order
	var recs []*kgo.Record
	for i := range n {
		o := order{id: fmt.Sprint("o", i), sku: fmt.Sprint("sku-", i%4), qty: float64(i%5 + 1), price: float64(i%7)*2.5 + 0.25,
			test: i%6 == 0, ts: future + int64((i*37)%n), part: int32(i % 2)}
		orders = append(orders, o)
		status := "ok"
		if o.test {
			status = "test"
		}
		qty := fmt.Sprint(o.qty)
		if i == bad {
			qty = `"3"`
		}
		recs = append(recs, embedded.Record("orders", o.part, o.sku, fmt.Sprintf(
			`{"ts":%d,"id":%q,"sku":%q,"qty":%s,"price":%v,"status":%q}`, o.ts, o.id, o.sku, qty, o.price, status)))
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	pl := runJob(t, fmt.Sprintf(`
brokers: [%s]
inputs: [{topic: orders, time: field, time_field: ts}]
delay: 1s # a partition's event times jump back by up to 60 ms: within the delay, none is late
until: end-offsets
`, c.Addrs()[0])+issue36Job)

	want := map[int64]string{} // by event time (each order has its own)
	var wantBig []int64
	for i, o := range orders {
		if o.test || i == bad {
			continue
		}
		total, _ := json.Marshal(o.qty * o.price)
		want[o.ts] = fmt.Sprintf(`{"id":%q,"sku":%q,"total":%s}`, o.id, o.sku, total)
		if o.qty*o.price >= 20 {
			wantBig = append(wantBig, o.ts)
		}
	}
	check := func(path string, wantTS map[int64]bool) {
		t.Helper()
		lines := readLines(t, path)
		if len(lines) != len(wantTS) {
			t.Errorf("%s: %d records, want %d", path, len(lines), len(wantTS))
		}
		last := int64(0)
		seen := map[int64]bool{}
		for _, l := range lines {
			if !wantTS[l.EventTimeMs] || seen[l.EventTimeMs] {
				t.Errorf("%s: unexpected or repeated record at %d: %s", path, l.EventTimeMs, l.Value)
			}
			seen[l.EventTimeMs] = true
			if string(l.Value) != want[l.EventTimeMs] {
				t.Errorf("%s: value %s, want %s", path, l.Value, want[l.EventTimeMs])
			}
			if l.EventTimeMs < last {
				t.Errorf("%s: event time %d after %d", path, l.EventTimeMs, last)
			}
			last = l.EventTimeMs
		}
	}
	all := map[int64]bool{}
	for ts := range want {
		all[ts] = true
	}
	big := map[int64]bool{}
	for _, ts := range wantBig {
		big[ts] = true
	}
	if len(big) == 0 || len(big) == len(all) {
		t.Fatalf("the data must route some records and not others: %d of %d", len(big), len(all))
	}
	check("all.jsonl", all)
	check("big.jsonl", big)
	dlq := readLines(t, "dlq.jsonl")
	if len(dlq) != 1 || dlq[0].EventTimeMs != orders[bad].ts || !strings.Contains(dlq[0].Reason, "process.map") {
		t.Fatalf("dlq.jsonl = %+v, want the one record whose qty is a string, its reason naming process.map", dlq)
	}
	if !strings.Contains(string(dlq[0].Value), `"qty":"3"`) {
		t.Errorf("the dead-letter sink got %s, want the original value", dlq[0].Value)
	}
	tests := 0
	for _, o := range orders {
		if o.test {
			tests++
		}
	}
	st := pl.Stats()
	if st.Filtered != int64(tests) || st.ExpressionFailed["process.map"] != 1 || len(st.ExpressionFailed) != 1 ||
		st.Sinks[0].Records != int64(len(all)) || st.Sinks[1].Records != int64(len(big)) {
		t.Errorf("stats: filtered %d (want %d), expression failed %v (want process.map: 1), sink records %d, %d (want %d, %d)",
			st.Filtered, tests, st.ExpressionFailed, st.Sinks[0].Records, st.Sinks[1].Records, len(all), len(big))
	}
}

// TestProcessValidation: validate compiles every expression and names the
// field, its line in the file and the column inside the expression.
func TestProcessValidation(t *testing.T) {
	head := "brokers: [localhost:9092]\ninputs: [{topic: in}]\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"syntax", "process:\n  filter: 'value.qty >'\nsinks: [{type: jsonl, path: a.jsonl}]\n",
			"process.filter: expression line 1, column 12: Syntax error"},
		{"unknown variable", "process:\n  map: '{\"a\": vlue.a}'\nsinks: [{type: jsonl, path: a.jsonl}]\n",
			"process.map: expression line 1, column 7: undeclared reference to 'vlue' (did you mean 'value'?)"},
		{"wall clock", "process:\n  filter: 'now() > event_time'\nsinks: [{type: jsonl, path: a.jsonl}]\n",
			"process.filter: expression line 1, column 4: undeclared reference to 'now'"},
		{"non-bool filter", "process:\n  filter: 'value.qty + 1 == 2 ? 1 : 2'\nsinks: [{type: jsonl, path: a.jsonl}]\n",
			"process.filter: expression line 1, column 1: a filter must be a bool, not int"},
		{"non-bool where", "sinks:\n  - type: jsonl\n    path: a.jsonl\n    where: 'topic'\n",
			"sinks[0].where: expression line 1, column 1: a where must be a bool, not string"},
		{"unbounded cost", "process:\n  filter: 'value.l.all(a, value.l.all(b, value.l.all(c, a == b)))'\nsinks: [{type: jsonl, path: a.jsonl}]\n",
			"process.filter: expression line 1, column 1: its cost cannot be bounded"},
		{"input", "sinks: [{type: jsonl, path: a.jsonl}]\ninputs:\n  - topic: in\n    process:\n      filter: 'late &&'\n",
			"inputs[0].process.filter: expression line 1, column 8: Syntax error"},
		{"where on dead_letter", "sinks: [{type: jsonl, path: a.jsonl}]\ndead_letter:\n  type: jsonl\n  path: d.jsonl\n  where: 'late'\n",
			"dead_letter.where: the dead-letter sink takes every record that fails, and no where"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := head + tc.doc
			if tc.name == "input" {
				doc = "brokers: [localhost:9092]\n" + tc.doc
			}
			p := problems(t, doc)
			if len(p) != 1 || !strings.HasPrefix(p[0], tc.want) {
				t.Fatalf("problems %q, want one starting %q", p, tc.want)
			}
			field := tc.want[:strings.Index(tc.want, ":")]
			line := 1 + strings.Count(doc[:strings.Index(doc, field[strings.LastIndexAny(field, ".]")+1:]+":")], "\n")
			if !strings.HasSuffix(p[0], fmt.Sprintf("(line %d)", line)) {
				t.Errorf("%q: want it at line %d", p[0], line)
			}
		})
	}
}

// TestProcessDocExamplesCompile holds the numbered examples of
// docs/config.md's Processing section to the compiler.
func TestProcessDocExamplesCompile(t *testing.T) {
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(md)[strings.Index(string(md), "### Examples"):]
	sec = sec[:strings.Index(sec, "A whole job")]
	item := regexp.MustCompile("(?m)^\\d+\\. [^`]*`([a-z_.\\[\\]]+): '(.*)'`$")
	n := 0
	for _, m := range item.FindAllStringSubmatch(sec, -1) {
		n++
		kind := map[string]process.Kind{"process.filter": process.Filter, "process.map": process.Map, "sinks[i].where": process.Where}[m[1]]
		if kind == 0 {
			t.Errorf("example field %s", m[1])
			continue
		}
		if _, err := process.Compile(m[1], m[2], kind); err != nil {
			t.Errorf("docs/config.md example %q: %v", m[2], err)
		}
	}
	if n < 10 {
		t.Fatalf("found %d examples, want at least 10", n)
	}
}

// TestProcessRoutedExactlyOnce: an exactly-once sink with a where (a
// transactional Kafka sink, a PostgreSQL sink) beside a jsonl sink, over
// two runs of a growing input: it holds exactly the routed subset, each
// record once, in order, with the mapped value. The second run resumes from
// the checkpoint the first stored, which covered the records routed away
// from it too.
func TestProcessRoutedExactlyOnce(t *testing.T) {
	const proc = `
process:
  map: '{"seq": value.seq, "odd": int(value.seq) % 2 == 1}'
`
	run := func(t *testing.T, c *embedded.Cluster, sink string) {
		t.Chdir(t.TempDir())
		doc := jobOn(c, "{type: jsonl, path: all.jsonl}\n  - "+sink) + proc
		produce(t, c, 0, 30)
		runJob(t, doc)
		produce(t, c, 30, 50)
		runJob(t, doc)
	}
	check := func(t *testing.T, vals []string) {
		t.Helper()
		var want []string
		for i := 1; i < 50; i += 2 {
			want = append(want, fmt.Sprintf(`{"odd":true,"seq":%d}`, i))
		}
		if strings.Join(vals, "\n") != strings.Join(want, "\n") {
			t.Fatalf("the routed sink holds\n%s\nwant\n%s", strings.Join(vals, "\n"), strings.Join(want, "\n"))
		}
	}
	t.Run("kafka", func(t *testing.T) {
		c, err := embedded.Start(embedded.WithTopic("in", 2), embedded.WithTopic("out", 1))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		run(t, c, "{type: kafka, topic: out, transactional_id: routed, where: 'value.odd'}")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		vals, err := c.ReadUpTo(ctx, "out", kgo.ReadCommitted())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range vals {
			got = append(got, string(v))
		}
		check(t, got)
	})
	t.Run("postgres", func(t *testing.T) {
		c, conn, table := pgJob(t, "cfgroute")
		ctx := context.Background()
		run(t, c, fmt.Sprintf("{type: postgres, dsn_env: SIGNALBOX_TEST_DSN, table: %s, where: 'value.odd'}", table))
		rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT value::text FROM %s ORDER BY event_time, seq`, table))
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range got { // jsonb's own spacing
			got[i] = strings.NewReplacer(" ", "").Replace(g)
		}
		check(t, got)
	})
}

// TestProcessInputThenJob: an input's process runs before the job's, and
// only on that input's records (a topic_pattern input's too); a record an
// input's filter drops never reaches the job's.
func TestProcessInputThenJob(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("a", 1), embedded.WithTopic("b-1", 1), embedded.WithTopic("c", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs []*kgo.Record
	for i := range 12 {
		topic := []string{"a", "b-1", "c"}[i%3]
		recs = append(recs, embedded.Record(topic, 0, "k", fmt.Sprintf(`{"ts":%d,"v":%d}`, future+int64(i), i)))
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	runJob(t, fmt.Sprintf(`
brokers: [%s]
inputs:
  - topic: a
    time: field
    time_field: ts
    process: {map: '{"v": value.v * 10.0, "src": "a"}'}
  - topic_pattern: 'b-.*'
    time: field
    time_field: ts
    process: {filter: 'value.v != 4.0', map: '{"v": value.v, "src": topic}'}
  - {topic: c, time: field, time_field: ts}
until: end-offsets
process:
  filter: 'value.v != 8.0 && value.v != 3.0'
  map: '{"v": value.v, "src": has(value.src) ? value.src : "none"}'
sinks: [{type: jsonl, path: out.jsonl}]
`, c.Addrs()[0]))
	var got []string
	for _, l := range readLines(t, "out.jsonl") {
		got = append(got, string(l.Value))
	}
	// a: 0, 3, 6, 9 → v×10 before the job's filter sees them (30 passes
	// it, 3 is never seen); b-1: 1, 4, 7, 10 (4 dropped by its input);
	// c: 2, 5, 8, 11 straight to the job's process (8 dropped by it).
	want := `{"src":"a","v":0} {"src":"b-1","v":1} {"src":"none","v":2} {"src":"a","v":30} {"src":"none","v":5} {"src":"a","v":60} ` +
		`{"src":"b-1","v":7} {"src":"a","v":90} {"src":"b-1","v":10} {"src":"none","v":11}`
	if strings.Join(got, " ") != want {
		t.Fatalf("out.jsonl values\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}
