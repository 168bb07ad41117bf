package engine

// The engine's part of windows (WithWindow): each run's keyed.Windows,
// fed as a record is output (windowsTake), advanced when a release is over
// (windowsAdvance), closed at the end of a bounded run (windowsClose); the
// results into the out batch, routed to the window's sinks.

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"time"
	"unicode/utf8"

	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/record"
)

// windowRun is one window of a run.
type windowRun struct {
	def    *Window
	w      *keyed.Windows
	inputs map[string]bool // nil: every input
	bits   uint64
	args   [][]byte
	// suppressed counts the results a restored checkpoint covered: computed
	// again and not emitted (windowResult), so not in Stats.Windows.
	suppressed int64
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
		var opts []keyed.Option
		if d.Store != nil {
			opts = append(opts, keyed.WithStore(d.Store))
		}
		w, err := keyed.New(d.Spec, func(r *keyed.Result) error { return c.windowResult(wr, r) }, opts...)
		if err != nil { // validate checked the spec
			panic(err)
		}
		wr.w = w
		c.wins[i] = wr
	}
}

// windowsTake feeds rec, on its way to the sinks (output), to the windows
// that take it: every window's where, key and arguments are evaluated
// first, so that a record whose evaluation fails goes to the dead-letter
// sink only (keep false) and into no window.
func (c *Engine) windowsTake(ps *partState, rec *record.Record) (keep bool, err error) {
	if c.wins == nil {
		c.windowsStart()
	}
	if rec.Timeless {
		return true, nil
	}
	items := c.winItems[:0]
	for _, wr := range c.wins {
		it, ok, err := wr.item(rec)
		if err != nil {
			return false, c.failed(rec, err)
		}
		if ok {
			items = append(items, winItem{wr, it})
		}
	}
	at := releaseAt(rec)
	for _, wi := range items {
		w := wi.wr.w
		if _, err := w.Add(wi.it, at); err != nil {
			return false, err
		}
		if timer, ok := w.LastTimer(wi.it.Time); ok && timer > w.Time() {
			c.holdRecord(ps, rec, timer)
		}
	}
	clear(items)
	c.winItems = items[:0]
	return true, nil
}

type winItem struct {
	wr *windowRun
	it keyed.Item
}

// item is wr's Item of rec; ok false when wr does not take rec.
func (wr *windowRun) item(rec *record.Record) (it keyed.Item, ok bool, err error) {
	d := wr.def
	if wr.inputs != nil && !wr.inputs[rec.Topic] {
		return it, false, nil
	}
	if d.Where != nil {
		if ok, err := d.Where(rec); err != nil || !ok {
			return it, false, err
		}
	}
	var key []byte
	if d.Key != nil {
		if key, err = d.Key(rec); err != nil {
			return it, false, err
		}
	} else {
		key = orderKeyJSON(rec.OrderKey)
	}
	for i, a := range d.Spec.Aggregates {
		wr.args[i] = nil
		if a.Op == keyed.Count {
			continue
		}
		if wr.args[i], err = d.Args[i](rec); err != nil {
			return it, false, err
		}
	}
	// key and args may be the Window's functions' memory, reused for the
	// next record: wr.w keeps none of it (keyed invariant 9)
	it, err = wr.w.Item(key, rec.EventTime, wr.args)
	if err != nil {
		return it, false, &windowError{name: "windows." + d.Spec.Name, err: err}
	}
	return it, true, nil
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

// windowResult puts one result of wr into the current out batch, routed
// to wr's sinks only; after a restart, not one the restored checkpoint
// covers (its timer at or below the restored watermark: emitted before).
func (c *Engine) windowResult(wr *windowRun, r *keyed.Result) error {
	if c.windowsRestored() && wr.w.FireAt(r.End) <= c.cpWM {
		wr.suppressed++
		return nil
	}
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
	return nil
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
	for _, wr := range c.wins {
		if err := wr.w.Advance(g); err != nil {
			return err
		}
	}
	return nil
}

// windowsClose emits every open window: the end of a bounded run.
func (c *Engine) windowsClose() error {
	for _, wr := range c.wins {
		if err := wr.w.Close(); err != nil {
			return err
		}
	}
	return nil
}

// windowStats is Stats.Windows: a snapshot.
func (c *Engine) windowStats() []WindowStats {
	if len(c.wins) == 0 {
		return nil
	}
	out := make([]WindowStats, len(c.wins))
	for i, wr := range c.wins {
		out[i] = WindowStats{Name: wr.def.Spec.Name, Open: wr.w.Open, Keys: wr.w.Keys(), Results: wr.w.Results - wr.suppressed, Late: wr.w.Late}
	}
	return out
}
