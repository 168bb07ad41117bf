package keyed

// The Processor: per-key state and event-time timers over records taken in
// the engine's release order.

import (
	"math"
	"strings"
	"unsafe"
)

// MinTime and MaxTime bound event time (milliseconds since the Unix
// epoch). Advance(MaxTime) is Close.
const (
	MinTime int64 = math.MinInt64
	MaxTime int64 = math.MaxInt64
)

// Store holds the state of each key. Get returns what the last Put stored
// for the key; a Function that changes a state calls Put (a durable store
// keeps a copy, not the caller's pointer).
type Store[S any] interface {
	Get(key string) (S, bool)
	Put(key string, s S)
	Delete(key string)
	Len() int // keys in state
}

// MemStore is the in-memory Store.
type MemStore[S any] struct{ m map[string]S }

// NewMemStore returns an empty MemStore.
func NewMemStore[S any]() *MemStore[S] { return &MemStore[S]{m: map[string]S{}} }

// Get returns key's state.
func (m *MemStore[S]) Get(key string) (S, bool) { s, ok := m.m[key]; return s, ok }

// Put sets key's state.
func (m *MemStore[S]) Put(key string, s S) { m.m[key] = s }

// Delete removes key's state.
func (m *MemStore[S]) Delete(key string) { delete(m.m, key) }

// Len is the number of keys in state.
func (m *MemStore[S]) Len() int { return len(m.m) }

// TimerStore is a Store that also holds the Processor's timers (a
// durable store, whose timers spill with its state): NewProcessor takes
// them from Timers. A Processor over any other Store keeps its timers in
// memory (MemTimers).
type TimerStore interface {
	Timers() TimerQueue
}

// Failer is a Store or TimerQueue that can fail (a durable one): Err is
// its first error, sticky. The Processor returns it from the call during
// which it happened, and from every later call; its methods are no-ops
// once it has failed.
type Failer interface {
	Err() error
}

// Timer is one key's event-time timer.
type Timer struct {
	At  int64
	Key string
}

// Less orders timers by (At, Key): the order in which they fire.
func (a Timer) Less(b Timer) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return a.Key < b.Key
}

// TimerQueue holds a Processor's timers: a set, in (At, Key) order.
type TimerQueue interface {
	Set(t Timer)    // adds t; setting a timer already set changes nothing
	Delete(t Timer) // removes t, if set
	// Due removes and returns the first timer in (At, Key) order if its At
	// is at or below now.
	Due(now int64) (Timer, bool)
	Len() int // timers set
}

// Function is a keyed process function (Flink's KeyedProcessFunction): the
// Processor calls Process once per record, and OnTimer once per timer that
// fires, both with a Context scoped to the record's or the timer's key.
type Function[S, I any] interface {
	Process(c *Context[S, I], in I) error
	OnTimer(c *Context[S, I], t int64) error
}

// Context is a Function's view of its key during one call. It is valid
// only during that call.
type Context[S, I any] struct {
	p   *Processor[S, I]
	key string
	// borrowed: key is the caller's memory (processBorrowed), copied
	// before anything can keep it (own)
	borrowed bool
}

// own makes c's key a string of its own.
func (c *Context[S, I]) own() {
	if c.borrowed {
		c.key, c.borrowed = strings.Clone(c.key), false
	}
}

// Key is the key of the record or timer being handled.
func (c *Context[S, I]) Key() string { c.own(); return c.key }

// Time is the Processor's time (Processor.Time).
func (c *Context[S, I]) Time() int64 { return c.p.time }

// Get returns the key's state.
func (c *Context[S, I]) Get() (S, bool) {
	if !c.p.inMemory { // a MemStore's lookup keeps nothing of the key
		c.own()
	}
	return c.p.store.Get(c.key)
}

// Put sets the key's state.
func (c *Context[S, I]) Put(s S) { c.own(); c.p.store.Put(c.key, s) }

// Delete removes the key's state.
func (c *Context[S, I]) Delete() { c.own(); c.p.store.Delete(c.key) }

// SetTimer sets an event-time timer at t for the key; setting the same
// (t, key) twice sets one timer. A timer at or below Time fires before the
// next record, or at the next Advance, whichever comes first.
func (c *Context[S, I]) SetTimer(t int64) { c.own(); c.p.timers.Set(Timer{t, c.key}) }

// DeleteTimer deletes the key's timer at t, if set.
func (c *Context[S, I]) DeleteTimer(t int64) { c.own(); c.p.timers.Delete(Timer{t, c.key}) }

// Processor runs a Function over records in release order (invariants 1
// to 4 of the package doc). It is not safe for concurrent use.
type Processor[S, I any] struct {
	fn     Function[S, I]
	store  Store[S]
	timers TimerQueue
	mem    *MemTimers // timers, when they are MemTimers
	fails  []Failer
	time   int64
	ctx    Context[S, I]
	// inMemory: the store is a MemStore, whose states are the Function's
	// own values (a state changed in place needs no Put to be seen)
	inMemory bool
}

// NewProcessor returns a Processor of fn over store, at time MinTime. Its
// timers are the store's if it is a TimerStore, else in memory.
func NewProcessor[S, I any](fn Function[S, I], store Store[S]) *Processor[S, I] {
	p := &Processor[S, I]{fn: fn, store: store, time: MinTime}
	_, p.inMemory = store.(*MemStore[S])
	if ts, ok := store.(TimerStore); ok {
		p.timers = ts.Timers()
	} else {
		p.mem = NewMemTimers()
		p.timers = p.mem
	}
	for _, x := range []any{store, p.timers} {
		if f, ok := x.(Failer); ok {
			p.fails = append(p.fails, f)
		}
	}
	p.ctx.p = p
	return p
}

// err is the first error of the store or the timers.
func (p *Processor[S, I]) err() error {
	if len(p.fails) == 0 {
		return nil
	}
	return p.failed()
}

func (p *Processor[S, I]) failed() error {
	for _, f := range p.fails {
		if err := f.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Time is the Processor's time: every timer at or below it has fired. A
// record released at at raises it to at − 1 (every record at or below
// at − 1 was released before it); Advance raises it to the watermark.
func (p *Processor[S, I]) Time() int64 { return p.time }

// Keys is the number of keys in state.
func (p *Processor[S, I]) Keys() int { return p.store.Len() }

// Timers is the number of timers set and not fired.
func (p *Processor[S, I]) Timers() int { return p.timers.Len() }

// Process takes one record of key, released at at (its place in the
// release order: its event time, or later for a record released out of
// turn): the timers below at fire first, then fn.Process.
func (p *Processor[S, I]) Process(key string, at int64, in I) error {
	if at > MinTime {
		if err := p.Advance(at - 1); err != nil {
			return err
		}
	}
	p.ctx.key, p.ctx.borrowed = key, false
	return p.process(in)
}

// processBorrowed is Process with the key's bytes, which the caller may
// reuse once it returns: the Context copies them before the store or the
// timers can keep them, so that a record of a key already in a MemStore,
// whose state changes in place, allocates nothing.
func (p *Processor[S, I]) processBorrowed(key []byte, at int64, in I) error {
	if at > MinTime {
		if err := p.Advance(at - 1); err != nil {
			return err
		}
	}
	p.ctx.key, p.ctx.borrowed = unsafe.String(unsafe.SliceData(key), len(key)), true
	err := p.process(in)
	p.ctx.key, p.ctx.borrowed = "", false // nothing of the caller's kept
	return err
}

func (p *Processor[S, I]) process(in I) error {
	if err := p.fn.Process(&p.ctx, in); err != nil {
		return err
	}
	return p.err()
}

// Advance raises the time to wm, the release watermark once every record
// at or below it was passed to Process, and fires every timer at or below
// it, in (time, key) order: a timer that a firing timer sets at or below
// the time fires in the same call.
func (p *Processor[S, I]) Advance(wm int64) error {
	p.time = max(p.time, wm)
	for {
		if err := p.err(); err != nil {
			return err
		}
		t, ok := p.due()
		if !ok {
			return p.err()
		}
		p.ctx.key, p.ctx.borrowed = t.Key, false
		if err := p.fn.OnTimer(&p.ctx, t.At); err != nil {
			return err
		}
	}
}

// due is p.timers.Due(p.time), called directly for MemTimers (once per
// record, mostly with nothing due).
func (p *Processor[S, I]) due() (Timer, bool) {
	if p.mem != nil {
		return p.mem.Due(p.time)
	}
	return p.timers.Due(p.time)
}

// Close fires every timer (Advance(MaxTime)): the end of a bounded input.
func (p *Processor[S, I]) Close() error { return p.Advance(MaxTime) }
