package process_test

import (
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/tables"
)

// products is a table with versions of sku-1 at 100 and 200, a tombstone
// at 300, and sku 42 (a number key) at 0.
func products(t *testing.T) *tables.Set {
	return productsTable(t, func(tb *tables.Table) {
		tb.Put("42", 0, []byte(`"answer"`), false)
	})
}

// productsTable is a set of the one table products: sku-1's versions as
// products has them, and what more adds.
func productsTable(t testing.TB, more func(*tables.Table)) *tables.Set {
	t.Helper()
	tb, err := tables.New("products", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tb.Put("sku-1", 100, []byte(`{"name":"pen","price":1.5}`), false)
	tb.Put("sku-1", 200, []byte(`{"name":"pen","price":2}`), false)
	tb.Put("sku-1", 300, nil, true)
	more(tb)
	s, err := tables.NewSet(tb)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLookupAsOfEventTime: the map joins the version as of each
// record's event time: none before the first, the one exactly at the
// time, not one 1 ms later, null after the tombstone; a `time: none`
// record the latest.
func TestLookupAsOfEventTime(t *testing.T) {
	x, err := process.Compile("process.map", `{"id": value.id, "product": lookup("products", value.sku)}`, process.Map, process.WithTables(products(t)))
	if err != nil {
		t.Fatal(err)
	}
	rec := func(et int64, sku string) *record.Record {
		return &record.Record{Topic: "orders", EventTime: et, Value: []byte(`{"id":"o","sku":` + sku + `}`)}
	}
	timeless := rec(0, `"sku-1"`)
	timeless.Timeless = true
	for _, c := range []struct {
		r    *record.Record
		want string
	}{
		{rec(99, `"sku-1"`), `{"id":"o","product":null}`},
		{rec(100, `"sku-1"`), `{"id":"o","product":{"name":"pen","price":1.5}}`},
		{rec(199, `"sku-1"`), `{"id":"o","product":{"name":"pen","price":1.5}}`},
		{rec(200, `"sku-1"`), `{"id":"o","product":{"name":"pen","price":2}}`},
		{rec(300, `"sku-1"`), `{"id":"o","product":null}`},
		{rec(5, `42`), `{"id":"o","product":"answer"}`},
		{rec(5, `null`), `{"id":"o","product":null}`},
		{rec(5, `"nope"`), `{"id":"o","product":null}`},
		{timeless, `{"id":"o","product":null}`}, // the latest: the tombstone
	} {
		got, err := x.Apply(nil, c.r)
		if err != nil || string(got) != c.want {
			t.Errorf("at %d: %s, %v; want %s", c.r.EventTime, got, err, c.want)
		}
		interp, err2 := x.InterpretedApply(nil, c.r)
		if string(interp) != string(got) || (err == nil) != (err2 == nil) {
			t.Errorf("the fast path and the interpreter differ: %s vs %s", got, interp)
		}
	}
	if !x.Fast() {
		t.Error("the issue's map has no fast path")
	}
	where, err := process.Compile("sinks[0].where", `lookup("products", value.sku).price > 1.7`, process.Where, process.WithTables(products(t)))
	if err != nil {
		t.Fatal(err)
	}
	for et, want := range map[int64]bool{150: false, 250: true} {
		if ok, err := where.Bool(rec(et, `"sku-1"`)); err != nil || ok != want {
			t.Errorf("where at %d: %v, %v", et, ok, err)
		}
	}
	if _, err := where.Bool(rec(99, `"sku-1"`)); err == nil {
		t.Error("a field of a null lookup: no error")
	}
	bad, err := process.Compile("process.map", `lookup("products", value.sku)`, process.Map, process.WithTables(products(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Apply(nil, rec(1, `1.5`)); err == nil || !strings.Contains(err.Error(), "integral") {
		t.Errorf("a fractional key: %v", err)
	}
	dyn, err := process.Compile("process.map", `lookup(value.t, "42")`, process.Map, process.WithTables(products(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Apply(nil, &record.Record{Value: []byte(`{"t":"prodcts"}`)}); err == nil || !strings.Contains(err.Error(), `no table "prodcts"`) {
		t.Errorf("an unknown table at run time: %v", err)
	}
}

// TestLookupCompileErrors: an unknown table named literally, no tables,
// and an expression where lookup is refused, each say so.
func TestLookupCompileErrors(t *testing.T) {
	for _, c := range []struct {
		opts []process.Option
		src  string
		want string
	}{
		{[]process.Option{process.WithTables(products(t))}, `lookup("prodcts", "a")`, `lookup: no table "prodcts" (tables: products)`},
		{nil, `lookup("products", "a")`, "lookup: no tables are declared"},
		{[]process.Option{process.NoLookup("not in an input's process")}, `lookup("products", "a")`, "lookup: not in an input's process"},
		{[]process.Option{process.WithTables(products(t))}, `lookup("products")`, "undeclared reference to 'lookup'"},
	} {
		_, err := process.Compile("process.map", c.src, process.Map, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.src, err, c.want)
		}
	}
}

// TestNeedsRelease: an expression that reads late or a table needs the
// record's release; one that reads only the record's own data does not,
// and neither do Steps made of such expressions.
func TestNeedsRelease(t *testing.T) {
	tables := process.WithTables(products(t))
	for _, c := range []struct {
		src  string
		kind process.Kind
		want bool
	}{
		{`value.status != "test"`, process.Filter, false},
		{`{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`, process.Map, false},
		{`topic == "orders" && offset > 3 && event_time > timestamp("2024-01-01T00:00:00Z")`, process.Filter, false},
		{`!late`, process.Filter, true},
		{`{"late": late}`, process.Map, true},
		{`{"product": lookup("products", value.sku)}`, process.Map, true},
		{`[1, 2].exists(x, x > 1)`, process.Filter, false},
	} {
		x, err := process.Compile("e", c.src, c.kind, tables)
		if err != nil {
			t.Fatal(c.src, err)
		}
		if got := x.NeedsRelease(); got != c.want {
			t.Errorf("%s: NeedsRelease %v, want %v", c.src, got, c.want)
		}
		s := process.Steps{Filter: x}
		if c.kind == process.Map {
			s = process.Steps{Map: x}
		}
		if s.NeedsRelease() != c.want {
			t.Errorf("%s: Steps.NeedsRelease %v, want %v", c.src, s.NeedsRelease(), c.want)
		}
	}
	if (process.Steps{}).NeedsRelease() {
		t.Error("empty Steps need the release")
	}
}

// hinted is a Tables that records the hints it is given (process.Hinter).
type hinted struct {
	*tables.Set
	keys   []string
	values []string
	before int // keys hinted before the first value
}

func (h *hinted) HintKey(table, key string) uint64 {
	h.keys = append(h.keys, table+"/"+key)
	return uint64(len(h.keys))
}

func (h *hinted) HintValue(table string, n uint64) {
	if len(h.values) == 0 {
		h.before = len(h.keys)
	}
	h.values = append(h.values, h.keys[n-1])
}

// TestHints: Hints reads each lookup's key on each record of a block
// (a number key as its decimal text, as lookup does), hints at every
// key's slot before any key's bytes, skips the records whose key it
// cannot read (no such field, an object, null), and changes no record;
// a lookup whose key is itself a lookup is not hinted (reading its key
// would be a lookup); steps without a lookup have no hints.
func TestHints(t *testing.T) {
	h := &hinted{Set: products(t)}
	x, err := process.Compile("process.map", `{"id": value.id, "product": lookup("products", value.sku)}`, process.Map, process.WithTables(h))
	if err != nil {
		t.Fatal(err)
	}
	f, err := process.Compile("process.filter", `lookup("products", key) != null`, process.Filter, process.WithTables(h))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*record.Record
	for _, v := range []string{`{"sku":"sku-1"}`, `{"sku":42}`, `{"id":"no sku"}`, `{"sku":{"a":1}}`, `{"sku":null}`, `[1]`, `{"sku":"sku-9"}`} {
		recs = append(recs, &record.Record{Topic: "orders", Key: []byte("k"), EventTime: 5, Value: []byte(v)})
	}
	hint := process.Hints(process.Steps{Filter: f, Map: x})
	if hint == nil {
		t.Fatal("no hints for steps with lookups")
	}
	hint(recs)
	want := []string{"products/k", "products/sku-1", "products/k", "products/42", "products/k", "products/k", "products/k", "products/k", "products/k", "products/sku-9"}
	if strings.Join(h.keys, " ") != strings.Join(want, " ") || strings.Join(h.values, " ") != strings.Join(want, " ") {
		t.Fatalf("hinted keys %v then values %v, want %v for both", h.keys, h.values, want)
	}
	if h.before != len(want) {
		t.Fatalf("%d keys hinted before the first value, want all %d", h.before, len(want))
	}
	for i, v := range []string{`{"sku":"sku-1"}`, `{"sku":42}`, `{"id":"no sku"}`, `{"sku":{"a":1}}`, `{"sku":null}`, `[1]`, `{"sku":"sku-9"}`} {
		if string(recs[i].Value) != v || recs[i].EventTime != 5 || string(recs[i].Key) != "k" {
			t.Fatalf("record %d changed: %+v", i, recs[i])
		}
	}
	plain, err := process.Compile("process.map", `{"id": value.id}`, process.Map, process.WithTables(h))
	if err != nil {
		t.Fatal(err)
	}
	if process.Hints(process.Steps{Map: plain}) != nil {
		t.Fatal("hints for steps that look nothing up")
	}
	if process.Hints(process.Steps{Map: x}) == nil {
		t.Fatal("a Hinter's lookups, no hints")
	}
	nested, err := process.Compile("process.map", `{"p": lookup("products", lookup("products", value.sku))}`, process.Map, process.WithTables(h))
	if err != nil {
		t.Fatal(err)
	}
	h.keys, h.values = nil, nil
	process.Hints(process.Steps{Map: nested})(recs[1:2]) // sku 42, whose version is "answer"
	if strings.Join(h.keys, " ") != "products/42" {
		t.Fatalf("a lookup keyed by a lookup: hinted %v, want only the inner lookup's key (reading the outer's would look up)", h.keys)
	}
	nohint, err := process.Compile("process.map", `{"p": lookup("products", value.sku)}`, process.Map, process.WithTables(products(t)))
	if err != nil {
		t.Fatal(err)
	}
	if process.Hints(process.Steps{Map: nohint}) == nil {
		t.Fatal("tables.Set is a Hinter: want hints")
	}
}

// TestObjectsOnOneLine: an object passed through into a map's result, a
// table's version or a member of the value, comes out on one line
// whatever line breaks it had (\n, \r or both), as the sinks need.
func TestObjectsOnOneLine(t *testing.T) {
	tb, err := tables.New("products", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tb.Put("a", 0, []byte("{\n  \"name\": \"pen\"\n}"), false)
	tb.Put("b", 0, []byte("{\r  \"name\": \"ink\"\r}"), false)
	set, err := tables.NewSet(tb)
	if err != nil {
		t.Fatal(err)
	}
	x, err := process.Compile("process.map", `{"p": lookup("products", value.sku), "o": value.obj}`, process.Map, process.WithTables(set))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ value, want string }{
		{"{\"sku\":\"a\",\"obj\":{\"x\":\r\n1}}", `{"o":{"x":1},"p":{"name":"pen"}}`},
		{"{\"sku\":\"b\",\"obj\":{\"x\":\r1}}", `{"o":{"x":1},"p":{"name":"ink"}}`},
		{`{"sku":"a","obj":{"x":1}}`, `{"o":{"x":1},"p":{"name":"pen"}}`},
	} {
		got, err := x.Apply(nil, &record.Record{Topic: "orders", EventTime: 5, Value: []byte(c.value)})
		if err != nil || string(got) != c.want {
			t.Fatalf("%q: %s (%v), want %s", c.value, got, err, c.want)
		}
	}
}
