package keyed

// The Processor: per-key state and event-time timers over records taken in
// the engine's release order.

import (
	"container/heap"
	"math"
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
}

// Key is the key of the record or timer being handled.
func (c *Context[S, I]) Key() string { return c.key }

// Time is the Processor's time (Processor.Time).
func (c *Context[S, I]) Time() int64 { return c.p.time }

// Get returns the key's state.
func (c *Context[S, I]) Get() (S, bool) { return c.p.store.Get(c.key) }

// Put sets the key's state.
func (c *Context[S, I]) Put(s S) { c.p.store.Put(c.key, s) }

// Delete removes the key's state.
func (c *Context[S, I]) Delete() { c.p.store.Delete(c.key) }

// SetTimer sets an event-time timer at t for the key; setting the same
// (t, key) twice sets one timer. A timer at or below Time fires before the
// next record, or at the next Advance, whichever comes first.
func (c *Context[S, I]) SetTimer(t int64) { c.p.timers.set(timer{t, c.key}) }

// DeleteTimer deletes the key's timer at t, if set.
func (c *Context[S, I]) DeleteTimer(t int64) { c.p.timers.del(timer{t, c.key}) }

// Processor runs a Function over records in release order (invariants 1
// to 4 of the package doc). It is not safe for concurrent use.
type Processor[S, I any] struct {
	fn     Function[S, I]
	store  Store[S]
	timers timerSet
	time   int64
	ctx    Context[S, I]
}

// NewProcessor returns a Processor of fn over store, at time MinTime.
func NewProcessor[S, I any](fn Function[S, I], store Store[S]) *Processor[S, I] {
	p := &Processor[S, I]{fn: fn, store: store, time: MinTime, timers: timerSet{live: map[timer]bool{}}}
	p.ctx.p = p
	return p
}

// Time is the Processor's time: every timer at or below it has fired. A
// record released at at raises it to at − 1 (every record at or below
// at − 1 was released before it); Advance raises it to the watermark.
func (p *Processor[S, I]) Time() int64 { return p.time }

// Keys is the number of keys in state.
func (p *Processor[S, I]) Keys() int { return p.store.Len() }

// Timers is the number of timers set and not fired.
func (p *Processor[S, I]) Timers() int { return len(p.timers.live) }

// Process takes one record of key, released at at (its place in the
// release order: its event time, or later for a record released out of
// turn): the timers below at fire first, then fn.Process.
func (p *Processor[S, I]) Process(key string, at int64, in I) error {
	if at > MinTime {
		if err := p.Advance(at - 1); err != nil {
			return err
		}
	}
	p.ctx.key = key
	return p.fn.Process(&p.ctx, in)
}

// Advance raises the time to wm, the release watermark once every record
// at or below it was passed to Process, and fires every timer at or below
// it, in (time, key) order: a timer that a firing timer sets at or below
// the time fires in the same call.
func (p *Processor[S, I]) Advance(wm int64) error {
	p.time = max(p.time, wm)
	for {
		t, ok := p.timers.due(p.time)
		if !ok {
			return nil
		}
		p.ctx.key = t.key
		if err := p.fn.OnTimer(&p.ctx, t.at); err != nil {
			return err
		}
	}
}

// Close fires every timer (Advance(MaxTime)): the end of a bounded input.
func (p *Processor[S, I]) Close() error { return p.Advance(MaxTime) }

// timer is one key's timer at one event time.
type timer struct {
	at  int64
	key string
}

func (a timer) less(b timer) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.key < b.key
}

// timerSet is the set timers: a heap in (at, key) order, deleted entries
// dropped when they reach its top, or all at once when they outnumber the
// live ones (a session that a record extends moves its timer each time).
type timerSet struct {
	h    timerHeap
	live map[timer]bool
}

func (s *timerSet) set(t timer) {
	if s.live[t] {
		return
	}
	s.live[t] = true
	heap.Push(&s.h, t)
}

func (s *timerSet) del(t timer) {
	if !s.live[t] {
		return
	}
	delete(s.live, t)
	if len(s.h) > 64 && len(s.h) > 2*len(s.live) {
		h := s.h[:0]
		for _, t := range s.h {
			if s.live[t] {
				h = append(h, t)
			}
		}
		clear(s.h[len(h):])
		s.h = h
		heap.Init(&s.h)
	}
}

// due pops the first timer at or below now.
func (s *timerSet) due(now int64) (timer, bool) {
	for len(s.h) > 0 && s.h[0].at <= now {
		t := heap.Pop(&s.h).(timer)
		if s.live[t] {
			delete(s.live, t)
			return t, true
		}
	}
	return timer{}, false
}

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].less(h[j]) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
