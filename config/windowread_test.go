package config

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
)

// TestWindowReadsOnceAsSeparately runs random windows (where, key and
// aggregates, two of them sharing an argument) built by the job file's
// compiler, whose expressions read each record once (process.Set), and the
// same windows with every expression evaluated alone, over random records
// (missing members, nulls, strings for numbers, numbers out of range,
// values that are not JSON): the same raw records, the same results, the
// same dead-letter records with the same reasons, the same counts of
// failed expressions.
func TestWindowReadsOnceAsSeparately(t *testing.T) {
	wheres := []string{"", `value.status != "test"`, `has(value.qty)`, `value.qty > 2.0`, `size(value) > 3`, `value.status`}
	keys := []string{"", `value.sku`, `{"s": value.sku, "k": key}`, `value.sku + "-" + value.status`, `value.n`}
	calls := []string{"count()", "sum(value.qty)", "max(value.qty)", "min(value.qty * 2.0)", "avg(value.qty)", "first(value.sku)",
		"last(value)", "sum(int(value.qty))", "last(value.n)", "max(value.n.x)"}
	field := func(rng *rand.Rand, vals ...string) string { return vals[rng.IntN(len(vals))] }
	var seen [5]int // results; records dead-lettered by the where, the key, an argument, an argument's type
	for trial := range 24 {
		rng := rand.New(rand.NewPCG(37, uint64(trial)))
		jw := Window{Name: "w", Tumbling: "1s", Where: wheres[rng.IntN(len(wheres))], Key: keys[rng.IntN(len(keys))],
			Sinks: []Sink{{Type: "jsonl", Settings: &JSONLSink{Path: "w.jsonl"}}}}
		for i, c := range rng.Perm(len(calls))[:1+rng.IntN(4)] {
			jw.Aggregate = append(jw.Aggregate, NamedCall{Name: fmt.Sprint("a", i), Call: calls[c]})
		}
		if c := jw.Aggregate[len(jw.Aggregate)-1].Call; c != "count()" {
			jw.Aggregate = append(jw.Aggregate, NamedCall{Name: "again", Call: c}) // an argument shared
		}
		j := &Job{Windows: []Window{jw}}
		v := &validator{lines: map[string]int{}}
		plans := j.windows(v, nil)
		if len(v.errs) > 0 {
			t.Fatalf("%+v: %v", jw, v.errs)
		}
		once := plans[0].w
		if once.Fork == nil {
			t.Fatalf("%+v: no Fork, though no expression reads a table or late", jw)
		}
		alone := once
		alone.Where, alone.Key, alone.Args = nil, nil, make([]func(*record.Record) ([]byte, error), len(once.Args))
		alone.Fork = nil
		here := once // every record evaluated on the run's goroutine
		here.Fork = nil
		compile := func(path, src string, k process.Kind) *process.Expr {
			x, err := process.Compile(path, src, k)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		if jw.Where != "" {
			alone.Where = compile("windows[0].where", jw.Where, process.Where).Where()
		}
		if jw.Key != "" {
			x := compile("windows[0].key", jw.Key, process.Map)
			alone.Key = func(r *record.Record) ([]byte, error) { return x.Apply(nil, r) }
		}
		for i, a := range jw.Aggregate {
			if m := callRE.FindStringSubmatch(a.Call); m[2] != "" {
				x := compile("windows[0].aggregate."+a.Name, m[2], process.Map)
				alone.Args[i] = func(r *record.Record) ([]byte, error) { return x.Apply(nil, r) }
			}
		}
		var parts []script.Partition
		for p := range 2 {
			sp := script.Partition{TopicPartition: record.TopicPartition{Topic: "orders", Partition: int32(p)}}
			for o := range 100 { // 200 records: one release a helper shares (design K10)
				val := fmt.Sprintf(`{"ts":%d,"sku":%s,"qty":%s,"status":%s,"n":%s}`, 1_000_000+o*97+p*13,
					field(rng, `"sku-1"`, `"sku-2"`, `7`, `null`, `{"a":1}`), field(rng, `3`, `2.5`, `-1`, `"3"`, `null`, `1e400`, `true`),
					field(rng, `"ok"`, `"test"`, `1`), field(rng, `{"x":1}`, `{"x":"s"}`, `[1,2]`, `4`))
				for _, drop := range []string{`"sku":`, `"qty":`, `"n":`} {
					if rng.IntN(6) == 0 { // the member missing: its name changed
						val = strings.Replace(val, drop, `"z`+drop[1:], 1)
					}
				}
				if rng.IntN(30) == 0 {
					val = val[:len(val)-1] // not JSON
				}
				sp.Records = append(sp.Records, record.Record{Topic: "orders", Partition: int32(p), Offset: int64(o),
					Key: []byte(field(rng, "k1", "k2")), Value: []byte(val)})
			}
			parts = append(parts, sp)
		}
		a, b := runWindow(t, once, parts), runWindow(t, alone, parts)
		if a != b {
			t.Fatalf("trial %d, %+v: read once:\n%s\nevaluated alone:\n%s", trial, jw, a, b)
		}
		if c := runWindow(t, here, parts); c != a {
			t.Fatalf("trial %d, %+v: evaluated ahead (Fork):\n%s\non the run's goroutine only:\n%s", trial, jw, a, c)
		}
		for k, what := range []string{`"topic":"w"`, `windows[0].where: `, `windows[0].key: `, `windows[0].aggregate.`, `windows.w.aggregate.`} {
			seen[k] += strings.Count(a, what)
		}
	}
	if slices.Contains(seen[:], 0) {
		t.Fatalf("results, and dead letters of the where, the key, an argument and an argument's type: %v, want some of each", seen)
	}
}

// runWindow runs w over parts and returns what every sink received
// (JSONL: the dead letters with their reasons) and the failed
// expressions, as text.
func runWindow(t *testing.T, w signalbox.Window, parts []script.Partition) string {
	t.Helper()
	var raw, win, dead bytes.Buffer
	sink := func(b *bytes.Buffer) signalbox.Sink { return jsonl.New(b, jsonl.Options{}) }
	p, err := signalbox.New(script.New(5, 7, parts...),
		signalbox.WithInputs(signalbox.Input{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"}),
		signalbox.WithSink(sink(&raw)), signalbox.WithWindow(w, sink(&win)), signalbox.WithDeadLetter(sink(&dead)),
		signalbox.WithClock(func() time.Time { return time.UnixMilli(1) }), signalbox.WithMaxFuture(0),
		signalbox.WithUntil(signalbox.UntilEndOffsets),
		signalbox.WithDelay(time.Hour)) // one release at the end, long enough to share with a helper
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	fails := p.Stats().ExpressionFailed
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(fails)) {
		fmt.Fprintf(&b, "failed %s: %d\n", n, fails[n])
	}
	fmt.Fprintf(&b, "raw:\n%s\nwindow:\n%s\ndead:\n%s", raw.String(), win.String(), dead.String())
	return b.String()
}
