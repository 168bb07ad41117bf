package engine

// The engine's part of windows (WithWindow): the keyed.Windows of each
// scope (the run's without a group, each task's with one: design K9),
// fed as a record is output (windowsTake), advanced when a release is over
// (windowsAdvance), closed at the end of a bounded run (windowsClose); the
// results into the out batch, in one (window, end, key) order across the
// scopes, routed to the window's sinks.

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// windowRun is one window of a run.
type windowRun struct {
	def    *Window
	inputs map[string]bool // nil: every input
	bits   uint64
	args   [][]byte
	// results counts the results emitted (not the ones a restore
	// suppressed, K8); late counts the late records of scopes let go of.
	results, late int64
}

// winScope is the windows of one scope (design K9): the whole run's
// without a group, where a window spans every partition, or one task's
// with a group, where a window is keyed by the Kafka key and a task's
// windows hold only its partitions' records. A scope is made with its
// task and let go of with it: the member that takes the task over
// rebuilds it from the held-back offsets.
type winScope struct {
	ws []*keyed.Windows // by c.wins index
	// rebuild: the scope's partitions re-read below a restored checkpoint
	// and their re-read records come back to the windows in the order of
	// their data (K7); results whose timer is at or below from were
	// emitted before the checkpoint and are not again (K8).
	rebuild bool
	from    int64
	started bool     // a record went in: a restored partition cannot join
	task    *task    // its task with a group; nil: the run's scope
	release []func() // lets go of the task's stores (Window.TaskStore)
	// bound is the highest release watermark applied since the scope was
	// made: every record of its partitions at or below it was released, so
	// its windows may advance that far for another scope's record.
	bound int64
}

// windowsStart makes the run's windows (once per run).
func (c *Engine) windowsStart() {
	c.wins = make([]*windowRun, len(c.cfg.Windows))
	for i := range c.cfg.Windows {
		d := &c.cfg.Windows[i]
		wr := &windowRun{def: d, bits: d.Bits, args: make([][]byte, len(d.Args))}
		if len(d.Inputs) > 0 {
			wr.inputs = map[string]bool{}
			for _, in := range d.Inputs {
				wr.inputs[in] = true
			}
		}
		c.wins[i] = wr
	}
}

// newScope makes a scope's windows. A window's Store keeps the state of
// the run's one scope; a task's scope keeps it in memory.
func (c *Engine) newScope(t *task) *winScope {
	if c.wins == nil {
		c.windowsStart()
	}
	sc := &winScope{ws: make([]*keyed.Windows, len(c.wins)), from: watermark.MinTime, bound: watermark.MinTime, task: t}
	if t != nil {
		c.taskScopes = append(c.taskScopes, sc)
	}
	for i, wr := range c.wins {
		var opts []keyed.Option
		switch {
		case wr.def.Store != nil && !c.cfg.InGroup:
			opts = append(opts, keyed.WithStore(wr.def.Store))
		case wr.def.TaskStore != nil && t != nil:
			st, release, err := wr.def.TaskStore(t.id, max(1, c.taskCount))
			if err != nil {
				c.winErr = cmp.Or(c.winErr, fmt.Errorf("windows[%d] (%s): task %d's state: %w", i, wr.def.Spec.Name, t.id, err))
				break // in memory; the step fails (TakeFetch)
			}
			sc.release = append(sc.release, release)
			opts = append(opts, keyed.WithStore(st))
		}
		if wr.def.Spec.Kind == keyed.Session {
			opts = append(opts, keyed.WithKeyGone(func(key string) { c.keyGone(sc, i, key) }))
		}
		w, err := keyed.New(wr.def.Spec, func(r *keyed.Result) error { return c.windowResult(i, sc, r) }, opts...)
		if err != nil { // validate checked the spec
			panic(err)
		}
		sc.ws[i] = w
	}
	return sc
}

// scopeOf is ps's window scope, made at first use: the run's without a
// group (rebuilt when a checkpoint sink's checkpoint was restored), its
// task's with one (assign sets what a restore asks).
func (c *Engine) scopeOf(ps *partState) *winScope {
	if c.cfg.InGroup {
		if ps.task.win == nil {
			ps.task.win = c.newScope(ps.task)
		}
		return ps.task.win
	}
	if c.winAll == nil {
		c.winAll = c.newScope(nil)
		c.winAll.rebuild, c.winAll.from = c.hasCP, c.cpWM
	}
	return c.winAll
}

// scopes calls fn for every scope of the run.
func (c *Engine) scopes(fn func(*winScope) error) error {
	if c.winAll != nil {
		return fn(c.winAll)
	}
	for _, sc := range c.taskScopes { // in the order made: results are sorted anyway (windowsTo)
		if err := fn(sc); err != nil {
			return err
		}
	}
	return nil
}

// rebuilds reports whether ps's windows are rebuilt from its re-read
// records after a restore (K7): they are parked, not skipped, and come
// back to the windows only, in the order of their data.
func (c *Engine) rebuilds(ps *partState) bool {
	switch {
	case len(c.cfg.Windows) == 0:
		return false
	case !c.cfg.InGroup:
		return c.hasCP
	default:
		return ps.task.win != nil && ps.task.win.rebuild
	}
}

// scopeRestored notes, at ps's assignment, that its task's windows rebuild
// from a restored claim with watermark wm: results at or below the lowest
// such watermark of the task were emitted (K8, K9).
func (c *Engine) scopeRestored(ps *partState, wm int64) {
	if len(c.cfg.Windows) == 0 || !c.cfg.InGroup {
		return
	}
	sc := c.scopeOf(ps)
	if !sc.rebuild {
		sc.rebuild, sc.from = true, wm
	} else {
		sc.from = min(sc.from, wm)
	}
}

// dropScope lets go of a revoked task's windows; their late count stays in
// the run's.
func (c *Engine) dropScope(t *task) {
	if t.win == nil {
		return
	}
	for i, w := range t.win.ws {
		c.wins[i].late += w.Late
	}
	c.taskScopes = slices.DeleteFunc(c.taskScopes, func(sc *winScope) bool { return sc == t.win })
	for _, release := range t.win.release {
		release()
	}
	t.win = nil
}

// windowsTake feeds rec, on its way to the sinks (output), to the windows
// that take it: every window's where, key and arguments are evaluated
// first, so that a record whose evaluation fails goes to the dead-letter
// sink only (keep false) and into no window.
func (c *Engine) windowsTake(ps *partState, rec *record.Record) (keep bool, err error) {
	if rec.Timeless {
		return true, nil
	}
	sc := c.scopeOf(ps)
	if c.winErr != nil {
		return false, c.winErr // a task's window store did not open
	}
	items := c.winItems[:0]
	ahead := c.aheadItems(rec)
	for i, wr := range c.wins {
		var it keyed.Item
		var ok bool
		var err error
		if ahead != nil {
			it, ok, err = ahead[i].it, ahead[i].ok, ahead[i].err
		} else {
			it, ok, err = wr.item(rec, sc.ws[i])
		}
		if err != nil {
			return false, c.failed(rec, err)
		}
		if ok {
			items = append(items, winItem{i, it})
		}
	}
	at := releaseAt(rec)
	if len(items) > 0 && c.cfg.InGroup {
		// The other tasks' windows first, as one scope's would be: every
		// result due before rec comes out before it, in (end, key) order.
		if err := c.windowsTo(at-1, true); err != nil {
			return false, err
		}
	}
	for _, wi := range items {
		w := sc.ws[wi.i]
		late, err := w.Add(wi.it, at)
		if err != nil {
			return false, err
		}
		sc.started = true
		if w.Spec().Kind == keyed.Session {
			if !late {
				c.holdKey(ps, wi.i, wi.it.Key, rec)
			}
		} else if timer, ok := w.LastTimer(wi.it.Time); ok && timer > w.Time() {
			c.holdRecord(ps, rec, timer)
		}
	}
	clear(items)
	c.winItems = items[:0]
	return true, nil
}

// windowsTo advances every scope's windows to t (bounded: to at most the
// scope's bound) and emits their results in order: per window, by timer,
// ties by key, across the scopes as within one (keyed invariant 2).
func (c *Engine) windowsTo(t int64, bounded bool) error {
	if bounded && t <= c.winTo {
		return nil
	}
	c.winBuf = c.winBuf[:0]
	c.buffering = true
	err := c.scopes(func(sc *winScope) error {
		to := t
		if bounded {
			to = min(t, sc.bound)
		}
		for _, w := range sc.ws {
			if err := w.Advance(to); err != nil {
				return err
			}
		}
		return nil
	})
	c.buffering = false
	if bounded && err == nil {
		c.winTo = t
	}
	c.flushResults()
	return err
}

// flushResults puts the results buffered by windowsTo into the out batch,
// sorted by window, timer and key.
func (c *Engine) flushResults() {
	if len(c.winBuf) == 0 {
		return
	}
	slices.SortStableFunc(c.winBuf, func(a, b bufResult) int {
		if a.wr != b.wr {
			return cmp.Compare(a.wr, b.wr)
		}
		if a.fire != b.fire {
			return cmp.Compare(a.fire, b.fire)
		}
		return bytes.Compare(a.key, b.key)
	})
	for i := range c.winBuf {
		c.putResult(c.wins[c.winBuf[i].wr], &c.winBuf[i].r)
	}
	clear(c.winBuf)
	c.winBuf = c.winBuf[:0]
}

// bufResult is a result windowsTo holds until every scope has advanced.
type bufResult struct {
	wr   int
	fire int64
	key  []byte
	r    keyed.Result
}

type winItem struct {
	i  int // c.wins index
	it keyed.Item
}

// item is wr's Item of rec, made by w (the Windows of rec's scope); ok
// false when wr does not take rec.
func (wr *windowRun) item(rec *record.Record, w *keyed.Windows) (it keyed.Item, ok bool, err error) {
	key, ok, err := wr.eval(wr.def, rec, wr.args)
	if !ok || err != nil {
		return it, false, err
	}
	// key and args may be the Window's functions' memory, reused for the
	// next record: w keeps none of it (keyed invariant 9)
	it, err = w.Item(key, rec.EventTime, wr.args)
	return wr.itemErr(it, err)
}

// itemErr is an Item and its error as item returns them.
func (wr *windowRun) itemErr(it keyed.Item, err error) (keyed.Item, bool, error) {
	if err != nil {
		return it, false, &windowError{name: "windows." + wr.def.Spec.Name, err: err}
	}
	return it, true, nil
}

// eval evaluates wr's where, key and arguments on rec with ev's functions
// (wr.def's, or a fork's: Window.Fork), the arguments into args (one per
// aggregate, nil for a Count): ok false when wr does not take rec. The key
// and arguments are the functions' memory, valid until their next call.
func (wr *windowRun) eval(ev *Window, rec *record.Record, args [][]byte) (key []byte, ok bool, err error) {
	if wr.inputs != nil && !wr.inputs[rec.Topic] {
		return nil, false, nil
	}
	if ev.Where != nil {
		if ok, err := ev.Where(rec); err != nil || !ok {
			return nil, false, err
		}
	}
	if ev.Key != nil {
		if key, err = ev.Key(rec); err != nil {
			return nil, false, err
		}
	} else {
		key = orderKeyJSON(rec.OrderKey)
	}
	for i, a := range ev.Spec.Aggregates {
		args[i] = nil
		if a.Op == keyed.Count {
			continue
		}
		if args[i], err = ev.Args[i](rec); err != nil {
			return nil, false, err
		}
	}
	return key, true, nil
}

// windowError is an argument that does not fit its aggregate.
type windowError struct {
	name string
	err  error
}

func (e *windowError) Error() string      { return e.name + "." + e.err.Error() }
func (e *windowError) Expression() string { return e.name }

var _ ExpressionError = (*windowError)(nil)

// orderKeyJSON is the default window key: k as a JSON string, or, when it
// is not UTF-8, {"key_b64": its base64} (never equal to a string key).
func orderKeyJSON(k string) []byte {
	if !utf8.ValidString(k) {
		return []byte(`{"key_b64":"` + base64.StdEncoding.EncodeToString([]byte(k)) + `"}`)
	}
	b, _ := json.Marshal(k) // valid UTF-8: cannot fail
	return b
}

// windowResult takes one result of window i from scope sc: not one the
// scope's restored checkpoint covers (its timer at or below the restored
// watermark: emitted before, K8); buffered while windowsTo advances every
// scope, else put in the current out batch.
func (c *Engine) windowResult(i int, sc *winScope, r *keyed.Result) error {
	fire := sc.ws[i].FireAt(r.End)
	if sc.rebuild && fire <= sc.from {
		return nil
	}
	if c.buffering {
		c.winBuf = append(c.winBuf, bufResult{wr: i, fire: fire, key: r.Key, r: *r})
		return nil
	}
	c.putResult(c.wins[i], r)
	return nil
}

// putResult puts r, of wr, into the current out batch, routed to wr's
// sinks only.
func (c *Engine) putResult(wr *windowRun, r *keyed.Result) {
	wr.results++
	off := resultID(r)
	key := r.Key
	var s string
	if len(key) > 0 && key[0] == '"' && json.Unmarshal(key, &s) == nil {
		key = []byte(s)
	}
	at := r.End - 1
	c.cur.Records = append(c.cur.Records, record.Record{
		Topic: r.Window, Partition: 0, Offset: off,
		Key: key, OrderKey: string(key), Value: r.Value, ValueJSON: true,
		EventTime: at, Timestamp: time.UnixMilli(at),
	})
	c.cur.Routes = append(c.cur.Routes, wr.bits)
	if c.cfg.InflightBytes > 0 {
		c.cur.Bytes += c.cur.Records[len(c.cur.Records)-1].Size()
	}
}

// resultID is a result's Offset, a function of its window key and start
// only, so that a restart gives a result the identity it had (sinks that
// key rows by topic, partition and offset keep one): 63 bits of a mix
// (splitmix64's finalizer, a bijection) of the key's FNV-1a hash and the
// start. Two results of a window share it only when their 64-bit key
// hashes collide or, about once in 2^63 pairs, their mixes' 63 bits do.
func resultID(r *keyed.Result) int64 {
	h := fnv.New64a()
	h.Write(r.Key)
	x := h.Sum64() ^ uint64(r.Start)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int64(x >> 1)
}

// windowsAdvance advances the windows to the release watermark g once a
// release is over (MaxTime under flushAll: every window is emitted).
func (c *Engine) windowsAdvance(g int64) error {
	if len(c.wins) == 0 {
		return nil
	}
	c.scopes(func(sc *winScope) error { sc.bound = max(sc.bound, g); return nil })
	return c.windowsTo(g, false)
}

// windowsClose emits every open window: the end of a bounded run.
func (c *Engine) windowsClose() error {
	if len(c.wins) == 0 {
		return nil
	}
	return c.windowsTo(watermark.MaxTime, false)
}

// windowStats is Stats.Windows: a snapshot, summed over the scopes.
func (c *Engine) windowStats() []WindowStats {
	if len(c.wins) == 0 {
		return nil
	}
	out := make([]WindowStats, len(c.wins))
	for i, wr := range c.wins {
		out[i] = WindowStats{Name: wr.def.Spec.Name, Results: wr.results, Late: wr.late}
	}
	c.scopes(func(sc *winScope) error {
		for i, w := range sc.ws {
			out[i].Open += w.Open
			out[i].Keys += w.Keys()
			out[i].StateBytes += w.StateBytes()
			out[i].Late += w.Late
		}
		return nil
	})
	return out
}
