package config

// Windows in the job file (docs/config.md, Windows and state): each
// compiles to a signalbox.WithWindow, its expressions by package process.

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/keyed"
	kdurable "github.com/signalbox/signalbox/keyed/durable"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers/durable"
)

// Window is one entry of `windows`.
type Window struct {
	Name            string         `yaml:"name"`
	Inputs          []string       `yaml:"inputs"`
	Key             string         `yaml:"key"`
	Tumbling        string         `yaml:"tumbling"`
	Hopping         *Hopping       `yaml:"hopping"`
	Session         *SessionWindow `yaml:"session"`
	Where           string         `yaml:"where"`
	Aggregate       Aggregates     `yaml:"aggregate"`
	AllowedLateness string         `yaml:"allowed_lateness"`
	Sinks           []Sink         `yaml:"sinks"`
}

// Hopping is `hopping: {size, every}`.
type Hopping struct {
	Size  string `yaml:"size"`
	Every string `yaml:"every"`
}

// SessionWindow is `session: {gap}`.
type SessionWindow struct {
	Gap string `yaml:"gap"`
}

// Aggregates is a window's `aggregate` mapping, name → call, in the
// file's order (the order of the result's members).
type Aggregates []NamedCall

// NamedCall is one aggregate: its name and its call, such as
// `sum(value.qty)`.
type NamedCall struct {
	Name, Call string
}

// decodeAggregates decodes an aggregate mapping (nodeDecoder.decode).
func (d *nodeDecoder) decodeAggregates(n *yaml.Node, a *Aggregates, path string) {
	if n.Kind != yaml.MappingNode {
		d.bad(n, path, "want a mapping of names to calls such as sum(value.qty), got %s", describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := path + "." + k.Value
		d.lines[p] = k.Line
		if line, dup := seen[k.Value]; dup {
			d.bad(k, p, "set twice in one mapping, at lines %d and %d", line, k.Line)
			continue
		}
		seen[k.Value] = k.Line
		if val.Kind != yaml.ScalarNode || k.Kind != yaml.ScalarNode {
			d.bad(val, p, "want a call such as count() or sum(value.qty), got %s", describe(val))
			continue
		}
		*a = append(*a, NamedCall{Name: k.Value, Call: val.Value})
	}
}

var callRE = regexp.MustCompile(`(?s)^\s*([a-z]+)\s*\((.*)\)\s*$`)

// windowPlan is what a window compiles to.
type windowPlan struct {
	w     signalbox.Window
	sinks []signalbox.Sink
}

// windows compiles the job's windows, with every problem in v. build
// builds their sinks (nil: validate only).
func (j *Job) windows(v *validator, build func(s *Sink, path string) (signalbox.Sink, error)) []windowPlan {
	var plans []windowPlan
	names := map[string]bool{}
	for i := range j.Windows {
		jw := &j.Windows[i]
		p := fmt.Sprintf("windows[%d]", i)
		w := signalbox.Window{Spec: keyed.Spec{Name: jw.Name}}
		v.uniqueName(names, p+".name", jw.Name, "the results' topic and the metrics' label", "another window has this name")
		jw.kind(v, p, &w.Spec)
		if jw.AllowedLateness != "" {
			w.Spec.Lateness = v.duration(p+".allowed_lateness", jw.AllowedLateness, notNegative).Milliseconds()
		}
		for k, in := range jw.Inputs {
			x := j.inputOf(in)
			switch {
			case x < 0:
				v.bad(fmt.Sprintf("%s.inputs[%d]", p, k), "%q is no input's topic", in)
			case j.Inputs[x].Time == "none":
				v.bad(fmt.Sprintf("%s.inputs[%d]", p, k), "%q has no event time (time: none): a window needs one", in)
			}
		}
		w.Inputs = jw.Inputs
		var xs windowExprs
		if jw.Key != "" {
			xs.key = compileExpr(v, p+".key", jw.Key, process.Map)
		}
		if j.Group != "" && !j.kafkaKeyed(jw) {
			v.bad(p+".key", "with a group, a window must be keyed by the Kafka key (key: key, key: key_bytes, or no key when its inputs order by the Kafka key): each member sees only its partitions, so a key's records must all be in one partition, which only the key the producer partitioned by ensures")
		}
		xs.where = compileExpr(v, p+".where", jw.Where, process.Where)
		jw.aggregates(v, p, &w, &xs)
		xs.bind(&w)
		if !xs.release() {
			w.Fork = func() signalbox.Window { f := w; xs.bind(&f); return f }
		}
		if len(jw.Sinks) == 0 {
			v.bad(p+".sinks", "required: a window's results go to its own sinks")
		}
		var sinks []signalbox.Sink
		for k := range jw.Sinks {
			sp := fmt.Sprintf("%s.sinks[%d]", p, k)
			jw.Sinks[k].validate(v, sp)
			if jw.Sinks[k].Where != "" {
				v.bad(sp+".where", "a window's sink takes every result of its window, and no where")
			}
			if build != nil && len(v.errs) == 0 {
				s, err := build(&jw.Sinks[k], sp)
				if err != nil {
					v.bad(sp, "%v", err)
					continue
				}
				sinks = append(sinks, s)
			}
		}
		plans = append(plans, windowPlan{w: w, sinks: sinks})
	}
	return plans
}

// kind sets s's kind and sizes from exactly one of tumbling, hopping and
// session.
func (jw *Window) kind(v *validator, p string, s *keyed.Spec) {
	n := 0
	if jw.Tumbling != "" {
		n++
		s.Kind, s.Size = keyed.Tumbling, positive(v, p+".tumbling", jw.Tumbling)
	}
	if h := jw.Hopping; h != nil {
		n++
		s.Kind = keyed.Hopping
		s.Size = positive(v, p+".hopping.size", h.Size)
		s.Every = positive(v, p+".hopping.every", h.Every)
	}
	if g := jw.Session; g != nil {
		n++
		s.Kind, s.Gap = keyed.Session, positive(v, p+".session.gap", g.Gap)
	}
	if n != 1 {
		v.bad(p, "set exactly one of tumbling, hopping and session (%d set)", n)
	}
}

// aggregates compiles the aggregate calls into w, their arguments read
// with set.
func (jw *Window) aggregates(v *validator, p string, w *signalbox.Window, xs *windowExprs) {
	same := map[string]int{} // an argument's source → the aggregate that evaluates it, once per record
	if _, set := v.lines[p+".aggregate"]; len(jw.Aggregate) == 0 && !set {
		v.bad(p+".aggregate", "required: at least one, such as count: count()")
	}
	for _, a := range jw.Aggregate {
		ap := p + ".aggregate." + a.Name
		if slices.Contains([]string{"key", "start", "end"}, a.Name) {
			v.bad(ap, "the name is taken: key, start and end are the result's own members")
		}
		m := callRE.FindStringSubmatch(a.Call)
		op, ok := keyed.Op(0), false
		if m != nil {
			op, ok = keyed.ParseOp(m[1])
		}
		if !ok {
			v.bad(ap, "%q: want count(), or sum, min, max, avg, first or last of an expression, such as sum(value.qty)", a.Call)
			continue
		}
		w.Spec.Aggregates = append(w.Spec.Aggregates, keyed.Aggregate{Name: a.Name, Op: op})
		arg := strings.TrimSpace(m[2])
		xs.args, xs.same = append(xs.args, nil), append(xs.same, len(xs.args))
		if op == keyed.Count {
			if arg != "" {
				v.bad(ap, "count() takes no argument")
			}
			continue
		}
		if arg == "" {
			v.bad(ap, "%s needs an argument, such as %s(value.qty)", op, op)
			continue
		}
		i := len(xs.args) - 1
		if s, ok := same[arg]; ok {
			xs.same[i] = s
			continue
		}
		if xs.args[i] = compileExpr(v, ap, arg, process.Map); xs.args[i] != nil {
			same[arg] = i
		}
	}
}

// windowExprs are a window's compiled where, key and arguments (nil when
// absent or not compiled); same[i] is the argument whose evaluation
// argument i shares (i itself, or an earlier one with the same source).
type windowExprs struct {
	where, key *process.Expr
	args       []*process.Expr
	same       []int
}

// bind sets w's Where, Key and Args to functions of xs over one new
// process.Set: the where, key and arguments read each record once. Each
// bind's functions share no memory with another's (signalbox.Window.Fork).
func (xs *windowExprs) bind(w *signalbox.Window) {
	set := new(process.Set)
	w.Where, w.Key, w.Args = nil, nil, make([]func(*record.Record) ([]byte, error), len(xs.args))
	if xs.key != nil {
		w.Key = set.Apply(xs.key)
	}
	if xs.where != nil {
		w.Where = set.Bool(xs.where)
	}
	for i, x := range xs.args {
		switch s := xs.same[i]; {
		case s != i:
			w.Args[i] = w.Args[s]
		case x != nil:
			w.Args[i] = set.Apply(x)
		}
	}
}

// release reports whether one of xs reads what only the run's goroutine
// may (process.Expr.NeedsRelease: a table, or late): then no fork.
func (xs *windowExprs) release() bool {
	for _, x := range append([]*process.Expr{xs.where, xs.key}, xs.args...) {
		if x != nil && x.NeedsRelease() {
			return true
		}
	}
	return false
}

// positive is the duration at path, in ms: required, and above 0.
func positive(v *validator, path, val string) int64 {
	if val == "" {
		v.bad(path, "required: a duration such as 1m")
		return 0
	}
	d := v.duration(path, val, notNegative)
	if d > 0 && d.Milliseconds() == 0 || d == 0 {
		v.bad(path, "%s: must be at least 1ms", val)
	}
	return d.Milliseconds()
}

// WindowsDir is where the windows of a job with state.dir and no group
// keep their state: beside state.dir, not in it (as TablesDir), one
// directory per window. It is scratch, emptied at each start: the windows
// are rebuilt from Kafka (docs/design.md, K5).
func WindowsDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Clean(stateDir) + "-windows"
}

// windowsShare is the part of state.memory the windows' stores get, split
// evenly between them: a quarter; the parked store keeps the rest.
const windowsShare = 4

// openWindowStores opens a pebble store (keyed/durable) for each window
// under dir, emptied first, and sets it as the window's Store: the state
// spills beyond its share of state.memory as parked records do.
func (p *Plan) openWindowStores(dir string, wins []windowPlan) error {
	share, err := p.windowsState(dir)
	if err != nil {
		return err
	}
	for i := range wins {
		st, err := kdurable.Open[keyed.State](filepath.Join(dir, wins[i].w.Spec.Name), keyed.StateCodec{},
			kdurable.Options{MemoryBudget: share / int64(len(wins))})
		if err != nil {
			return Errors{{Path: "state.memory", Msg: fmt.Sprintf("windows[%d]'s state: %v", i, err)}}
		}
		p.windowStores = append(p.windowStores, st)
		wins[i].w.Store = st
	}
	return nil
}

// windowsState empties dir, the windows' state directory, and takes the
// windows' share of state.memory from the parked store's.
func (p *Plan) windowsState(dir string) (share int64, err error) {
	mem := cmp.Or(p.StateMemory, durable.DefaultMemoryBudget)
	share = mem / windowsShare
	p.StateMemory = mem - share
	if err := os.RemoveAll(dir); err != nil {
		return 0, Errors{{Path: "state.dir", Msg: fmt.Sprintf("emptying the windows' state in %s: %v", dir, err)}}
	}
	return share, nil
}

// taskWindowStores is openWindowStores in a group: each task's windows
// keep their state in a keyed/durable store of their own, under
// dir/<window>/task-<partition>, made when the member takes the task and
// closed (its files removed) when it lets go of it. The stores of a
// window share its part of state.memory: each is made with that part
// divided by the tasks the member holds (at least minTaskWindowBudget),
// and whenever the member takes or lets go of a task, the in-memory part
// of every open store of the window (its cache and timers, most of a
// store's memory) is set anew to that division (taskWindows.balance).
// Only the pebble memtables and cache of a store made while the member
// held fewer tasks keep their larger size.
func (p *Plan) taskWindowStores(dir string, wins []windowPlan) error {
	share, err := p.windowsState(dir)
	if err != nil {
		return err
	}
	p.taskStores = &taskStores{open: map[*kdurable.Store[keyed.State]]bool{}}
	for i := range wins {
		wdir := filepath.Join(dir, wins[i].w.Spec.Name)
		tw := &taskWindows{budget: share / int64(len(wins))}
		wins[i].w.TaskStore = func(task int32, tasks int) (keyed.Store[keyed.State], func(), error) {
			tdir := filepath.Join(wdir, fmt.Sprint("task-", task))
			if err := os.RemoveAll(tdir); err != nil {
				return nil, nil, err
			}
			st, err := kdurable.Open[keyed.State](tdir, keyed.StateCodec{},
				kdurable.Options{MemoryBudget: taskWindowBudget(tw.budget, tasks)})
			if err != nil {
				return nil, nil, err
			}
			p.taskStores.add(st)
			tw.taken(st, tasks)
			return st, func() {
				tw.let(st)
				p.taskStores.close(st)
			}, nil
		}
	}
	return nil
}

// minTaskWindowBudget is the least memory a task's window store gets
// (pebble's memtables need some), as tables.MinMemoryBudget for a table.
const minTaskWindowBudget = 4 << 20

// taskWindowBudget is the memory of one task's store of a window whose
// share of state.memory is budget, made while the member holds tasks.
func taskWindowBudget(budget int64, tasks int) int64 {
	return max(budget/int64(max(tasks, 1)), minTaskWindowBudget)
}

// taskWindows are one window's open task stores, which share its budget.
// Used on the run's goroutine only (Window.TaskStore and its release).
type taskWindows struct {
	budget int64
	tasks  int // the tasks the member holds, as last told
	open   []*kdurable.Store[keyed.State]
}

// taken adds st, made while the member holds tasks, and balances.
func (tw *taskWindows) taken(st *kdurable.Store[keyed.State], tasks int) {
	tw.open = append(tw.open, st)
	tw.tasks = tasks
	tw.balance()
}

// let removes st, which the member lets go of, and balances the others.
func (tw *taskWindows) let(st *kdurable.Store[keyed.State]) {
	if i := slices.Index(tw.open, st); i >= 0 {
		tw.open = slices.Delete(tw.open, i, i+1)
		tw.tasks--
		tw.balance()
	}
}

// balance gives every open store the in-memory part of the budget
// divided by the tasks held (or the stores open, if more).
func (tw *taskWindows) balance() {
	c, t := kdurable.InMemory(taskWindowBudget(tw.budget, max(tw.tasks, len(tw.open))))
	for _, st := range tw.open {
		st.SetMemory(c, t)
	}
}

// taskStores are the tasks' open window stores: made and closed on the
// run's goroutine, the rest closed by Plan.Close after the run.
type taskStores struct {
	mu   sync.Mutex
	open map[*kdurable.Store[keyed.State]]bool
	errs []error // of closes at a revoke
}

func (t *taskStores) add(st *kdurable.Store[keyed.State]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[st] = true
}

// close closes st, keeping its error for closeAll.
func (t *taskStores) close(st *kdurable.Store[keyed.State]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[st] {
		delete(t.open, st)
		if err := st.Close(); err != nil {
			t.errs = append(t.errs, err)
		}
	}
}

// closeAll closes every store still open, and returns every close's error.
func (t *taskStores) closeAll() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for st := range t.open {
		t.errs = append(t.errs, st.Close())
	}
	clear(t.open)
	return errors.Join(t.errs...)
}

// kafkaKeyed reports whether jw's key is the records' Kafka key: `key` or
// `key_bytes` (a function of the key's bytes, which the producer
// partitioned by), or no key (the ordering key) when every input jw takes
// orders by the Kafka key (inputs[i].key unset or `key`). A binary key is
// refused by `key` (not UTF-8: the record is dead-lettered); no key or
// `key_bytes` take it.
func (j *Job) kafkaKeyed(jw *Window) bool {
	switch strings.TrimSpace(jw.Key) {
	case "key", "key_bytes":
		return true
	case "":
	default:
		return false
	}
	for i := range j.Inputs {
		in := &j.Inputs[i]
		if len(jw.Inputs) > 0 && !slices.Contains(jw.Inputs, in.Topic) {
			continue
		}
		if in.Key != "" && in.Key != "key" {
			return false
		}
	}
	return true
}
