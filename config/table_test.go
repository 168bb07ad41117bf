package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/process"
)

// TestTableJobEndToEnd is issue 38's target against the embedded broker:
// orders on three partitions (event time in a field); a products table on
// two partitions with three versions per sku by Kafka timestamp, each
// exactly at some order's event time, and one tombstone; the map.
// Each order is output exactly once with its product as of its own event
// time (null before the first version and after the tombstone, the
// version exactly at its time joined), no product record is output, and
// the product versions produced after the orders (in offset and wall-clock
// order) are still seen: the gate, not the fetch order, decides. The same
// with state.dir: the table in pebble (TablesDir), with its files while
// the job runs and none once the plan is closed; and with the map run at
// release only, not as a template as orders are decoded.
func TestTableJobEndToEnd(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testTableJob(t, "", func(doc string) *signalbox.Pipeline { return runJob(t, doc) })
	})
	t.Run("at release", func(t *testing.T) { // not as a template as records are decoded
		earlyProcessing = false
		defer func() { earlyProcessing = true }()
		testTableJob(t, "", func(doc string) *signalbox.Pipeline { return runJob(t, doc) })
	})
	t.Run("pebble", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		testTableJob(t, fmt.Sprintf("state: {dir: %s, memory: 64MiB}\n", dir), func(doc string) *signalbox.Pipeline {
			p, err := build(t, doc)
			if err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(TablesDir(dir), "products", "SIGNALBOX-TABLE")
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("the table is not in pebble under %s: %v", TablesDir(dir), err)
			}
			if p.StateMemory != 48<<20 {
				t.Errorf("the parked store gets %d bytes of state.memory, want three quarters (48 MiB)", p.StateMemory)
			}
			pl, err := p.Pipeline()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := pl.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after Close the table's files remain: %v", err)
			}
			return pl
		})
	})
}

func testTableJob(t *testing.T, state string, run func(doc string) *signalbox.Pipeline) {
	fx := startTableFixture(t)
	const n, skus, tombSku = fixtureOrders, fixtureSkus, fixtureTombSku
	versionAt := fixtureVersionAt
	pl := run(state + fmt.Sprintf(`
brokers: [%s]
inputs: [{topic: orders, time: field, time_field: ts}]
tables:
  - name: products
    topic: products
    key: key
    format: json
    time: timestamp
    history: 7d
until: end-offsets
process:
  map: '{"id": value.id, "product": lookup("products", value.sku)}'
sinks:
  - type: jsonl
    path: out.jsonl
`, fx.addr))
	want := func(i int) string { return fmt.Sprintf(`{"id":"o%d","product":%s}`, i, fx.product(i)) }
	lines := readLines(t, "out.jsonl")
	if len(lines) != n {
		t.Errorf("%d records out, want %d (the orders only)", len(lines), n)
	}
	seen := map[int64]bool{}
	exact, nulls, after := 0, 0, 0
	for _, l := range lines {
		i := int(l.EventTimeMs - future)
		if i < 0 || i >= n || seen[l.EventTimeMs] {
			t.Fatalf("unexpected or repeated record at %d: %s", l.EventTimeMs, l.Value)
		}
		seen[l.EventTimeMs] = true
		if string(l.Value) != want(i) {
			t.Errorf("order %d: %s, want %s", i, l.Value, want(i))
		}
		if strings.Contains(string(l.Value), `"product":null`) {
			nulls++
			if i%skus == tombSku && i >= int(versionAt(tombSku, 2)-future) {
				after++
			}
		}
		for k := range 3 {
			if future+int64(i) == versionAt(i%skus, k) {
				exact++
			}
		}
	}
	if exact == 0 || nulls == 0 || after == 0 {
		t.Fatalf("the data must have orders exactly at a version (%d), null products (%d), after the tombstone (%d)", exact, nulls, after)
	}
	if st := pl.Stats(); st.TableVersions != 3*skus || st.Out != n {
		t.Errorf("stats: %d table versions, %d out; want %d, %d", st.TableVersions, st.Out, 3*skus, n)
	}
}

// TestTableJobErrors: each problem of a table names its field.
func TestTableJobErrors(t *testing.T) {
	for _, c := range []struct{ tables, process, want string }{
		{`[{topic: products}]`, ``, "tables[0].name: required"},
		{`[{name: p, topic: orders}]`, ``, `tables[0].topic: "orders" is already an input's topic`},
		{`[{name: p, topic: products, history: 7x}]`, ``, "tables[0].history"},
		{`[{name: p, topic: products, time: none}]`, ``, "tables[0].time"},
		{`[{name: p, topic: products, time: field}]`, ``, "tables[0].time_field"},
		{`[{name: p, topic: products, format: raw}]`, ``, "tables[0].format: lookup reads a table's values as JSON"},
		{`[{name: p, topic: a}, {name: p, topic: b}]`, ``, `tables[1].name: "p": another table has this name`},
		{`[{name: p, topic: products}]`, `lookup("q", value.sku)`, `lookup: no table "q"`},
		{`[]`, `lookup("p", value.sku)`, `lookup: no tables are declared`},
	} {
		doc := fmt.Sprintf("brokers: [localhost:9092]\ninputs: [{topic: orders}]\ntables: %s\nsinks: [{type: jsonl, path: out.jsonl}]\n", c.tables)
		if c.process != "" {
			doc += fmt.Sprintf("process: {map: '%s'}\n", c.process)
		}
		j, err := Parse([]byte(doc))
		if err == nil {
			err = j.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tables %s: %v; want %q", c.tables, err, c.want)
		}
	}
}

// TestTableRebuiltAfterRestart: a second run of the same job (the same
// group) resumes the orders from their committed offsets and re-reads the
// table's topic from where the first run started it, so that its orders
// are enriched with versions the first run read (design R: a table's
// offsets never commit past its start).
func TestTableRebuiltAfterRestart(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("orders", 2), embedded.WithTopic("products", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	order := func(i int) *kgo.Record {
		return embedded.Record("orders", int32(i%2), "", fmt.Sprintf(`{"ts":%d,"id":"o%d","sku":"s%d"}`, future+int64(i), i, i%3))
	}
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, order(i))
	}
	for s := range 3 {
		r := embedded.Record("products", 0, fmt.Sprint("s", s), fmt.Sprintf(`{"p":%d}`, s))
		r.Timestamp = time.UnixMilli(future + 5)
		recs = append(recs, r)
	}
	if err := c.Produce(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	job := func(out string) string {
		return fmt.Sprintf(`
brokers: [%s]
group: tables-restart
inputs: [{topic: orders, time: field, time_field: ts}]
tables: [{name: products, topic: products}]
until: end-offsets
process:
  map: '{"id": value.id, "product": lookup("products", value.sku)}'
sinks: [{type: jsonl, path: %s}]
`, c.Addrs()[0], out)
	}
	runJob(t, job("first.jsonl"))
	if got := len(readLines(t, "first.jsonl")); got != 30 {
		t.Fatalf("first run: %d records, want 30", got)
	}
	recs = recs[:0]
	for i := 30; i < 40; i++ {
		recs = append(recs, order(i))
	}
	if err := c.Produce(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	runJob(t, job("second.jsonl"))
	lines := readLines(t, "second.jsonl")
	if len(lines) != 10 {
		t.Fatalf("second run: %d records, want the 10 new orders", len(lines))
	}
	for _, l := range lines {
		i := int(l.EventTimeMs - future)
		if want := fmt.Sprintf(`{"id":"o%d","product":{"p":%d}}`, i, i%3); string(l.Value) != want {
			t.Errorf("second run, order %d: %s, want %s", i, l.Value, want)
		}
	}
}

// TestTableFromEarliestWhateverStart: a job that starts at a time (a time
// range) still reads its tables whole: versions older than the start
// enrich the orders after it.
func TestTableFromEarliestWhateverStart(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("orders", 1), embedded.WithTopic("products", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs []*kgo.Record
	for i := range 30 {
		r := embedded.Record("orders", 0, "", fmt.Sprintf(`{"ts":%d,"id":"o%d","sku":"s"}`, future+int64(i), i))
		r.Timestamp = time.UnixMilli(future + int64(i))
		recs = append(recs, r)
	}
	p := embedded.Record("products", 0, "s", `{"p":1}`)
	p.Timestamp = time.UnixMilli(future + 5)
	if err := c.Produce(context.Background(), append(recs, p)...); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	runJob(t, fmt.Sprintf(`
brokers: [%s]
start: %s
inputs: [{topic: orders, time: field, time_field: ts}]
tables: [{name: products, topic: products}]
until: end-offsets
process:
  map: 'lookup("products", value.sku)'
sinks: [{type: jsonl, path: out.jsonl}]
`, c.Addrs()[0], time.UnixMilli(future+20).UTC().Format(time.RFC3339Nano)))
	lines := readLines(t, "out.jsonl")
	if len(lines) != 10 {
		t.Fatalf("%d records, want the 10 orders from the start time", len(lines))
	}
	for _, l := range lines {
		if string(l.Value) != `{"p":1}` {
			t.Errorf("order at %d: %s, want the version from before the start", l.EventTimeMs, l.Value)
		}
	}
}

// TestTableGroupOfTwo: two live members of one group, each given half the
// orders' tasks, both read the whole table (the task balancer gives every
// member every table partition): the orders, produced once both have
// joined, are each output with their product as of their event time, by
// whichever member owns them, as one member would.
func TestTableGroupOfTwo(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("orders", 4), embedded.WithTopic("products", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n, skus = 400, 10
	base := time.Now().Add(-10 * time.Minute).UnixMilli() // live: event times already past
	var products []*kgo.Record
	for k := range 2 { // version times rising within each partition: none late
		for s := range skus {
			r := embedded.Record("products", int32(s%2), fmt.Sprint("s", s), fmt.Sprintf(`{"s":%d,"v":%d}`, s, k))
			r.Timestamp = time.UnixMilli(base + int64(100+200*k+s))
			products = append(products, r)
		}
	}
	ctx := context.Background()
	if err := c.Produce(ctx, products...); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	job := func(out string) string {
		return fmt.Sprintf(`
brokers: [%s]
group: tables-two
inputs: [{topic: orders, time: field, time_field: ts}]
tables: [{name: products, topic: products}]
process:
  map: '{"id": value.id, "product": lookup("products", value.sku)}'
sinks: [{type: jsonl, path: %s}]
`, c.Addrs()[0], out)
	}
	runCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	errs := make(chan error, 2)
	var pls []*signalbox.Pipeline
	for m := range 2 {
		p, err := build(t, job(fmt.Sprintf("m%d.jsonl", m)))
		if err != nil {
			t.Fatal(err)
		}
		pl, err := p.Pipeline()
		if err != nil {
			t.Fatal(err)
		}
		pls = append(pls, pl)
		go func() { errs <- pl.Run(runCtx) }()
	}
	ordersOf := func(pl *signalbox.Pipeline) (orders, tables int) {
		for _, ps := range pl.Stats().Partitions {
			if ps.ID.Input == "orders" {
				orders++
			} else {
				tables++
			}
		}
		return orders, tables
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		waitUntil(t, runCtx, what, ok)
	}
	waitFor("both members with two orders partitions and the whole table each", func() bool {
		for _, pl := range pls {
			if o, tb := ordersOf(pl); o != 2 || tb != 2 {
				return false
			}
		}
		return true
	})
	var orders []*kgo.Record
	for i := range n {
		orders = append(orders, embedded.Record("orders", int32(i%4), "", fmt.Sprintf(`{"ts":%d,"id":"o%d","sku":"s%d"}`, base+int64(i), i, i%skus)))
	}
	if err := c.Produce(ctx, orders...); err != nil {
		t.Fatal(err)
	}
	waitFor("every order out", func() bool { return pls[0].Stats().Out+pls[1].Stats().Out >= n })
	stop()
	for range pls {
		if err := <-errs; err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	want := func(i int) string {
		s, product := i%skus, "null"
		for k := range 2 {
			if int64(i) >= int64(100+200*k+s) {
				product = fmt.Sprintf(`{"s":%d,"v":%d}`, s, k)
			}
		}
		return fmt.Sprintf(`{"id":"o%d","product":%s}`, i, product)
	}
	seen := map[int]int{}
	for m, pl := range pls {
		// a rebalance re-reads the table: the same versions again
		if st := pl.Stats(); st.TableVersions < 2*skus || st.TableVersions%(2*skus) != 0 || st.Out == 0 {
			t.Errorf("member %d: %d table versions (want the whole table's %d, once or more), %d out (want some)", m, st.TableVersions, 2*skus, st.Out)
		}
		for _, l := range readLines(t, fmt.Sprintf("m%d.jsonl", m)) {
			i := int(l.EventTimeMs - base)
			seen[i]++
			if string(l.Value) != want(i) {
				t.Errorf("member %d, order %d: %s, want %s", m, i, l.Value, want(i))
			}
		}
	}
	for i := range n {
		if seen[i] != 1 {
			t.Errorf("order %d output %d times, want once", i, seen[i])
		}
	}
}

// The orders and products of the tables' end-to-end tests: order i is at
// event time future+i on partition i%3, of sku i%fixtureSkus; version k
// (0, 1, 2) of sku s is at fixtureVersionAt(s, k), always exactly some
// order's event time, and sku fixtureTombSku's last version is a
// tombstone.
const fixtureOrders, fixtureSkus, fixtureTombSku = 3200, 40, 7

func fixtureVersionAt(s, k int) int64 { return future + int64(fixtureOrders/4*(k+1)+s) }

type tableFixture struct{ addr string }

// startTableFixture produces the orders, then the products (after them in
// offset and wall-clock order), into a broker that lives as long as t, and
// makes t's working directory a fresh one.
func startTableFixture(t *testing.T) tableFixture {
	t.Helper()
	c, err := embedded.Start(embedded.WithTopic("orders", 3), embedded.WithTopic("products", 2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var orders, products []*kgo.Record
	for i := range fixtureOrders {
		orders = append(orders, embedded.Record("orders", int32(i%3), fmt.Sprint("o", i),
			fmt.Sprintf(`{"ts":%d,"id":"o%d","sku":"sku-%d"}`, future+int64(i), i, i%fixtureSkus)))
	}
	for k := range 3 {
		for s := range fixtureSkus {
			r := embedded.Record("products", int32(s%2), fmt.Sprint("sku-", s), fmt.Sprintf(`{"name":"p%d","v":%d}`, s, k))
			if s == fixtureTombSku && k == 2 {
				r.Value = nil
			}
			r.Timestamp = time.UnixMilli(fixtureVersionAt(s, k))
			products = append(products, r)
		}
	}
	ctx := context.Background()
	if err := c.Produce(ctx, orders...); err != nil {
		t.Fatal(err)
	}
	if err := c.Produce(ctx, products...); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	return tableFixture{addr: c.Addrs()[0]}
}

// product is the JSON of order i's product as of its event time: the
// latest version at or before it, null before the first and after the
// tombstone.
func (tableFixture) product(i int) string {
	s := i % fixtureSkus
	product := "null"
	for k := range 3 {
		if future+int64(i) >= fixtureVersionAt(s, k) {
			product = fmt.Sprintf(`{"name":"p%d","v":%d}`, s, k)
			if s == fixtureTombSku && k == 2 {
				product = "null"
			}
		}
	}
	return product
}

// TestTableLookupInWindow: lookup works in a window's key, as of each
// record's event time: orders counted per second by the version of their
// product they saw (-1 without one) match the fixture's versions.
func TestTableLookupInWindow(t *testing.T) {
	fx := startTableFixture(t)
	runJob(t, fmt.Sprintf(`
brokers: [%s]
inputs: [{topic: orders, time: field, time_field: ts}]
tables:
  - {name: products, topic: products}
until: end-offsets
sinks:
  - {type: jsonl, path: raw.jsonl}
windows:
  - name: per_version
    key: 'lookup("products", value.sku) == null ? -1.0 : lookup("products", value.sku).v'
    tumbling: 1s
    aggregate:
      count: count()
    sinks:
      - {type: jsonl, path: windows.jsonl}
`, fx.addr))
	want := map[string]int{} // "start key" → count
	for i := range fixtureOrders {
		key := -1.0
		if p := fx.product(i); p != "null" {
			var v struct{ V float64 }
			if err := json.Unmarshal([]byte(p), &v); err != nil {
				t.Fatal(err)
			}
			key = v.V
		}
		start := (future + int64(i)) / 1000 * 1000
		want[fmt.Sprint(time.UnixMilli(start).UTC().Format(time.RFC3339Nano), " ", key)]++
	}
	got := map[string]int{}
	for _, l := range readLines(t, "windows.jsonl") {
		var r struct {
			Key   float64 `json:"key"`
			Start string  `json:"start"`
			Count int     `json:"count"`
		}
		if err := json.Unmarshal(l.Value, &r); err != nil {
			t.Fatalf("%s: %v", l.Value, err)
		}
		k := fmt.Sprint(r.Start, " ", r.Key)
		if _, dup := got[k]; dup {
			t.Errorf("window %s emitted twice", k)
		}
		got[k] = r.Count
	}
	if len(want) < 4 {
		t.Fatalf("the data must spread over several versions and windows: %v", want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("window %s: count %d, want %d", k, got[k], n)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected window %s: %d", k, got[k])
		}
	}
}

// TestLookupMapRunsEarlyAsATemplate: issue 38's map reads a table, known
// only at release, through a lookup whose key reads nothing of it: it runs
// as its orders are decoded, leaving its lookup to the release (a
// template: process invariant 13), so the Process still runs at release,
// with forks (allEarly false). A lookup nested in what it reads does not.
func TestLookupMapRunsEarlyAsATemplate(t *testing.T) {
	for _, c := range []struct {
		mapx  string
		early bool
	}{
		{`{"id": value.id, "product": lookup("products", value.sku)}`, true},
		{`{"id": value.id, "name": lookup("products", value.sku).name}`, false},
		{`{"id": value.id, "late": late, "product": lookup("products", value.sku)}`, false},
	} {
		j, err := Parse([]byte(fmt.Sprintf("brokers: [h:1]\ninputs: [{topic: orders}]\ntables: [{name: products, topic: products}]\nprocess: {map: '%s'}\nsinks: [{type: jsonl, path: o.jsonl}]\n", c.mapx)))
		if err != nil {
			t.Fatal(err)
		}
		set, _, err := j.tableSet("", 0)
		if err != nil {
			t.Fatal(err)
		}
		v := &validator{lookup: []process.Option{process.WithTables(set)}}
		pr := j.processing(v)
		if err := v.errs.err(); err != nil {
			t.Fatalf("%s: %v", c.mapx, err)
		}
		if got := pr.early != nil && pr.early("orders") != nil; got != c.early || pr.allEarly {
			t.Errorf("%s: early %v (all %v), want %v (all false)", c.mapx, got, pr.allEarly, c.early)
		}
	}
}
