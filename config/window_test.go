package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/keyed"
	kdurable "github.com/signalbox/signalbox/keyed/durable"
)

// TestWindowValidation: every window mistake is refused at its field, with
// the reason.
func TestWindowValidation(t *testing.T) {
	head := "brokers: [localhost:9092]\ninputs: [{topic: sales, time: field, time_field: ts}, {topic: ref, time: none}]\nsinks: [{type: jsonl, path: a.jsonl}]\n"
	win := func(body string) string {
		return "windows:\n  - name: w\n" + body + "    sinks: [{type: jsonl, path: w.jsonl}]\n"
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"no kind", win("    aggregate: {n: count()}\n"), "windows[0]: set exactly one of tumbling, hopping and session (0 set)"},
		{"two kinds", win("    tumbling: 1m\n    session: {gap: 5m}\n    aggregate: {n: count()}\n"), "windows[0]: set exactly one of tumbling, hopping and session (2 set)"},
		{"bad size", win("    tumbling: 0s\n    aggregate: {n: count()}\n"), "windows[0].tumbling: 0s: must be at least 1ms"},
		{"hopping every", win("    hopping: {size: 1m}\n    aggregate: {n: count()}\n"), "windows[0].hopping.every: required"},
		{"unknown function", win("    tumbling: 1m\n    aggregate: {n: median(value.qty)}\n"), `windows[0].aggregate.n: "median(value.qty)": want count(), or sum`},
		{"count argument", win("    tumbling: 1m\n    aggregate: {n: count(value)}\n"), "windows[0].aggregate.n: count() takes no argument"},
		{"sum without argument", win("    tumbling: 1m\n    aggregate: {n: sum()}\n"), "windows[0].aggregate.n: sum needs an argument"},
		{"argument syntax", win("    tumbling: 1m\n    aggregate: {n: sum(value.)}\n"), "windows[0].aggregate.n: expression line 1"},
		{"taken name", win("    tumbling: 1m\n    aggregate: {end: count()}\n"), "windows[0].aggregate.end: the name is taken"},
		{"no aggregate", win("    tumbling: 1m\n"), "windows[0].aggregate: required"},
		{"unknown input", win("    inputs: [sale]\n    tumbling: 1m\n    aggregate: {n: count()}\n"), `windows[0].inputs[0]: "sale" is no input's topic`},
		{"timeless input", win("    inputs: [ref]\n    tumbling: 1m\n    aggregate: {n: count()}\n"), `windows[0].inputs[0]: "ref" has no event time`},
		{"key syntax", win("    key: 'value.'\n    tumbling: 1m\n    aggregate: {n: count()}\n"), "windows[0].key: expression line 1"},
		{"where type", win("    where: 'value.qty'\n    tumbling: 1m\n    aggregate: {n: count()}\n"), ""},
		{"negative lateness", win("    tumbling: 1m\n    allowed_lateness: -1s\n    aggregate: {n: count()}\n"), "windows[0].allowed_lateness: -1s is negative"},
		{"no sinks", "windows:\n  - name: w\n    tumbling: 1m\n    aggregate: {n: count()}\n", "windows[0].sinks: required"},
		{"same file", "windows:\n  - name: w\n    tumbling: 1m\n    aggregate: {n: count()}\n    sinks: [{type: jsonl, path: a.jsonl}]\n", `windows[0].sinks[0].path: "a.jsonl" is the file sinks[0].path already writes to`},
		{"no name", "windows:\n  - tumbling: 1m\n    aggregate: {n: count()}\n    sinks: [{type: jsonl, path: w.jsonl}]\n", "windows[0].name: required"},
		{"aggregate list", win("    tumbling: 1m\n    aggregate: [count()]\n"), "windows[0].aggregate: want a mapping of names to calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := problems(t, head+tc.doc)
			if tc.want == "" { // a dyn where is accepted, as a sink's where
				if len(p) != 0 {
					t.Fatalf("problems %q", p)
				}
				return
			}
			if len(p) != 1 || !strings.HasPrefix(p[0], tc.want) {
				t.Fatalf("problems %q, want one starting %q", p, tc.want)
			}
		})
	}
}

// TestWindowGroupRefused: with a group, a window keyed by anything but
// the Kafka key is refused, saying why; `key: key`, `key: key_bytes` and no
// key over inputs ordered by the Kafka key are accepted, with
// state.dir and session windows too (docs/design.md, K9).
func TestWindowGroupRefused(t *testing.T) {
	doc := "brokers: [localhost:9092]\ngroup: g\ninputs: [{topic: sales, time: field, time_field: ts}]\nsinks: [{type: jsonl, path: a.jsonl}]\n" +
		"windows:\n  - name: w\n    key: value.sku\n    tumbling: 1m\n    aggregate: {n: count()}\n    sinks: [{type: jsonl, path: w.jsonl}]\n"
	p := problems(t, doc)
	if len(p) != 1 || !strings.HasPrefix(p[0], "windows[0].key: with a group, a window must be keyed by the Kafka key (key: key, key: key_bytes, or no key") {
		t.Fatalf("%q", p)
	}
	ok := strings.Replace(doc, "key: value.sku", "key: key", 1)
	if p := problems(t, ok); len(p) != 0 {
		t.Fatalf("%q", p)
	}
	// The Kafka key's bytes, or the ordering key when it is the Kafka key:
	// a binary key is taken too.
	for _, key := range []string{"key: key_bytes", "where: 'true'"} {
		if p := problems(t, strings.Replace(doc, "key: value.sku", key, 1)); len(p) != 0 {
			t.Fatalf("%s: %q", key, p)
		}
	}
	byField := strings.Replace(strings.Replace(doc, "time_field: ts}", "time_field: ts, key: field, key_field: sku}", 1), "key: value.sku", "where: 'true'", 1)
	if p := problems(t, byField); len(p) != 1 || !strings.HasPrefix(p[0], "windows[0].key: with a group") {
		t.Fatalf("no key, an input ordered by a field: %q", p)
	}
	if p := problems(t, ok+"state: {dir: st}\n"); len(p) != 0 {
		t.Fatalf("with state.dir: %q", p)
	}
	if p := problems(t, strings.Replace(ok, "tumbling: 1m", "session: {gap: 5m}", 1)); len(p) != 0 {
		t.Fatalf("a session window with a group: %q", p)
	}
}

// TestWindowAggregateOrder: the result's members keep the file's order.
func TestWindowAggregateOrder(t *testing.T) {
	j, err := Parse([]byte("windows:\n  - name: w\n    aggregate:\n      z: count()\n      a: sum(value.q)\n      m: last(value)\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := j.Windows[0].Aggregate
	if len(got) != 3 || got[0].Name != "z" || got[1] != (NamedCall{"a", "sum(value.q)"}) || got[2].Name != "m" {
		t.Fatalf("%+v", got)
	}
}

// TestWindowStoresUnderStateDir: with state.dir and no group, each window
// keeps its state in a pebble store of its own beside state.dir
// (WindowsDir), emptied at each start (a crash leaves its files behind),
// with a quarter of state.memory taken from the parked store's; Close
// removes it. With a group the windows are per task, in memory: no store.
func TestWindowStoresUnderStateDir(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "st")
	doc := "brokers: [localhost:9092]\ninputs: [{topic: sales, time: field, time_field: ts}]\nsinks: [{type: jsonl, path: " + filepath.Join(dir, "a.jsonl") + "}]\n" +
		"state: {dir: " + state + ", memory: 256MiB}\n" +
		"windows:\n  - name: w\n    key: key\n    tumbling: 1m\n    aggregate: {n: count()}\n    sinks: [{type: jsonl, path: " + filepath.Join(dir, "w.jsonl") + "}]\n"
	stale := filepath.Join(WindowsDir(state), "w", "000001.sst")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("left by a crash"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{"", "group: g\n"} {
		j, err := Parse([]byte(group + doc))
		if err != nil {
			t.Fatal(err)
		}
		p, err := j.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if group != "" {
			// one store per task, made as a task is taken (taskWindowStores)
			if len(p.windowStores) != 0 || p.taskStores == nil || p.StateMemory != 192<<20 {
				t.Fatalf("with a group: %d window stores, task stores %v, parked store's memory %d", len(p.windowStores), p.taskStores, p.StateMemory)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if len(p.windowStores) != 1 || p.StateMemory != 192<<20 {
			t.Fatalf("%d window stores, parked store's memory %d", len(p.windowStores), p.StateMemory)
		}
		if _, err := os.Stat(stale); !os.IsNotExist(err) {
			t.Fatalf("the crashed run's file is still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(WindowsDir(state), "w")); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(WindowsDir(state), "w")); !os.IsNotExist(err) {
			t.Fatalf("Close left the window's store: %v", err)
		}
	}
}

// TestTaskWindowStores: with a group and state.dir, each task's windows
// keep their state in a pebble store of their own under
// WindowsDir(state)/<window>/task-<partition>, open while the member holds
// the task, gone once the plan is closed; the results are those of the
// same job with the state in memory.
func TestTaskWindowStores(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("sales", 3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs []*kgo.Record
	for i := range 3000 {
		k := fmt.Sprint("k", i%7)
		p := int32(i % 7 % 3) // each key in one partition
		recs = append(recs, embedded.Record("sales", p, k, fmt.Sprintf(`{"ts":%d,"qty":%d}`, future+int64(i)*37, i%5)))
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "st")
	run := func(name, stateSection string) (string, *Plan, *signalbox.Pipeline) {
		out := filepath.Join(dir, name+".jsonl")
		doc := fmt.Sprintf(`brokers: [%s]
group: %s
inputs: [{topic: sales, time: field, time_field: ts}]
until: end-offsets
sinks: [{type: jsonl, path: %s}]
%swindows:
  - name: w
    key: key
    tumbling: 10s
    aggregate: {n: count(), qty: sum(value.qty)}
    sinks: [{type: jsonl, path: %s}]
`, c.Addrs()[0], name, filepath.Join(dir, name+".raw"), stateSection, out)
		p, pl := runPlan(t, doc)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), p, pl
	}
	want, mp, _ := run("memory", "")
	if err := mp.Close(); err != nil {
		t.Fatal(err)
	}
	got, p, pl := run("pebble", "state: {dir: "+state+", memory: 64MiB}\n")
	for task := range 3 {
		tdir := filepath.Join(WindowsDir(state), "w", fmt.Sprint("task-", task))
		if ents, err := os.ReadDir(tdir); err != nil || len(ents) == 0 {
			t.Fatalf("task %d's windows have no store under %s: %v", task, tdir, err)
		}
	}
	if ws := pl.Stats().Windows; len(ws) != 1 || ws[0].Results == 0 || ws[0].StateBytes < 0 {
		t.Fatalf("window stats: %+v", ws)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(WindowsDir(state), "w", "task-0")); !os.IsNotExist(err) {
		t.Fatalf("Close left a task's store: %v", err)
	}
	if got != want || strings.Count(got, "\n") < 20 {
		t.Fatalf("results in pebble:\n%.600s\nin memory:\n%.600s", got, want)
	}

	// A task's store that cannot be made fails the run, naming it: here a
	// file where the window's directory goes.
	doc := fmt.Sprintf("brokers: [%s]\ngroup: broken\ninputs: [{topic: sales, time: field, time_field: ts}]\nuntil: end-offsets\n"+
		"sinks: [{type: jsonl, path: %s}]\nstate: {dir: %s}\nwindows:\n  - {name: w, key: key, tumbling: 10s, aggregate: {n: count()}, sinks: [{type: jsonl, path: %s}]}\n",
		c.Addrs()[0], filepath.Join(dir, "b.raw"), state, filepath.Join(dir, "b.jsonl"))
	bp, err := build(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	defer bp.Close()
	if err := os.MkdirAll(WindowsDir(state), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(WindowsDir(state), "w"), []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	bpl, err := bp.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := bpl.Run(ctx); err == nil || !strings.Contains(err.Error(), "windows[0] (w): task ") {
		t.Fatalf("a task's store that cannot be made: %v, want the run's error naming it", err)
	}
}

// TestTaskWindowBudget: a task's window store gets the window's share
// divided by the tasks held, and at least 4 MiB (docs/config.md, State).
func TestTaskWindowBudget(t *testing.T) {
	for _, c := range []struct {
		budget int64
		tasks  int
		want   int64
	}{
		{48 << 20, 3, 16 << 20},
		{48 << 20, 24, 4 << 20}, // 2 MiB: the floor
		{16 << 10, 1, 4 << 20},  // state.memory of 64 KiB
		{48 << 20, 0, 48 << 20},
	} {
		if got := taskWindowBudget(c.budget, c.tasks); got != c.want {
			t.Errorf("taskWindowBudget(%d, %d) = %d, want %d", c.budget, c.tasks, got, c.want)
		}
	}
}

// TestTaskWindowsShareTheBudget: a window's task stores share its part of
// state.memory as the member takes and lets go of tasks: each store made
// or kept holds the in-memory part of that part divided by the tasks held,
// so that taking more tasks later does not add budgets.
func TestTaskWindowsShareTheBudget(t *testing.T) {
	p := &Plan{StateMemory: 256 << 20}
	wins := []windowPlan{{w: signalbox.Window{Spec: keyed.Spec{Name: "w"}}}}
	if err := p.taskWindowStores(filepath.Join(t.TempDir(), "windows"), wins); err != nil {
		t.Fatal(err)
	}
	defer p.taskStores.closeAll()
	share := int64(256<<20) / windowsShare
	type held struct {
		st      *kdurable.Store[keyed.State]
		release func()
	}
	var stores []held
	take := func(task int32, tasks int) {
		t.Helper()
		st, release, err := wins[0].w.TaskStore(task, tasks)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, held{st.(*kdurable.Store[keyed.State]), release})
	}
	check := func(when string, tasks int) {
		t.Helper()
		wc, wt := kdurable.InMemory(share / int64(tasks))
		var sum int64
		for _, h := range stores {
			c, tm, _, _ := h.st.Memory()
			if c != wc || tm != wt {
				t.Fatalf("%s: a store's cache and timers may hold %d and %d bytes, want %d and %d", when, c, tm, wc, wt)
			}
			sum += c + tm
		}
		if ac, at := kdurable.InMemory(share); sum > ac+at {
			t.Fatalf("%s: the stores may hold %d bytes in memory, above the window's %d", when, sum, ac+at)
		}
	}
	take(0, 1)
	check("one task", 1)
	for task := range int32(3) {
		take(task+1, 4)
	}
	check("three more tasks taken later", 4)
	stores[0].release()
	stores = stores[1:]
	check("one let go of", 3)
}
