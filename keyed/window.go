package keyed

// Windows: tumbling, hopping and session windows with aggregates, as a
// Function of a Processor.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unsafe"
)

// Kind is a window's kind.
type Kind uint8

// The kinds.
const (
	Tumbling Kind = iota + 1 // [k·Size, (k+1)·Size)
	Hopping                  // [k·Every, k·Every + Size): a record is in Size/Every of them
	Session                  // records less than Gap apart, per key
)

// Op is an aggregate function.
type Op uint8

// The aggregates. Count counts the window's records; the others take one
// JSON argument per record (Item.Args): Sum, Min, Max and Avg a number,
// First and Last any JSON value. A null argument is skipped, as in SQL:
// Sum, Min, Max, Avg, First and Last of a window without any non-null
// argument are null.
const (
	Count Op = iota + 1
	Sum
	Min
	Max
	Avg
	First // the argument of the record with the earliest event time, ties by the release order
	Last  // the argument of the record with the latest event time, ties by the release order
)

var opNames = [...]string{Count: "count", Sum: "sum", Min: "min", Max: "max", Avg: "avg", First: "first", Last: "last"}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// ParseOp is the Op named s ("count", "sum", ...).
func ParseOp(s string) (Op, bool) {
	for o, n := range opNames {
		if n != "" && n == s {
			return Op(o), true
		}
	}
	return 0, false
}

// Aggregate is one member of a window's result: Name, computed by Op.
type Aggregate struct {
	Name string
	Op   Op
}

// Spec defines a window. Durations are in milliseconds.
type Spec struct {
	Name       string
	Kind       Kind
	Size       int64 // Tumbling, Hopping
	Every      int64 // Hopping
	Gap        int64 // Session
	Lateness   int64 // allowed lateness: a window is emitted when the time reaches End − 1 + Lateness
	Aggregates []Aggregate
}

// Validate reports what is wrong with s, naming the field.
func (s *Spec) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if s.Name == "" {
		bad("name: empty")
	}
	switch s.Kind {
	case Tumbling, Hopping:
		if s.Size <= 0 {
			bad("size: %dms, must be above 0", s.Size)
		}
		if s.Kind == Hopping && s.Every <= 0 {
			bad("every: %dms, must be above 0", s.Every)
		}
	case Session:
		if s.Gap <= 0 {
			bad("gap: %dms, must be above 0", s.Gap)
		}
	default:
		bad("kind: none of tumbling, hopping, session")
	}
	if s.Lateness < 0 {
		bad("allowed_lateness: %dms, must not be negative", s.Lateness)
	}
	if len(s.Aggregates) == 0 {
		bad("aggregate: none")
	}
	seen := map[string]bool{"key": true, "start": true, "end": true}
	for _, a := range s.Aggregates {
		if seen[a.Name] {
			bad("aggregate.%s: the name is taken (key, start and end are the result's own)", a.Name)
		}
		seen[a.Name] = true
		if a.Op < Count || a.Op > Last {
			bad("aggregate.%s: unknown function", a.Name)
		}
	}
	return errors.Join(errs...)
}

// Arg is one aggregate argument of one record, parsed (Spec.Item).
type Arg struct {
	Null bool
	Num  float64 // Sum, Min, Max, Avg
	JSON []byte  // First, Last
}

// Item is what a window takes of a record.
type Item struct {
	Key  []byte // the window key, as JSON: the state's key is its bytes
	Time int64  // event time
	Args []Arg  // by aggregate (Count's is unused)
}

// Item makes the Item of a record of event time t, its window key and its
// aggregates' arguments (JSON, by aggregate; nil for Count): an error,
// naming the aggregate, when a number is needed and the argument is not
// one. It changes no state, so that a record whose arguments fail is in no
// window.
func (s *Spec) Item(key []byte, t int64, args [][]byte) (Item, error) {
	return s.itemIn(make([]Arg, len(s.Aggregates)), key, t, args)
}

// Item is the Spec's Item (Spec.Item) made in memory of w's own: the Args
// of the Item it returns are those of the next call's, so that taking a
// record allocates nothing. Add keeps nothing of an Item's memory.
func (w *Windows) Item(key []byte, t int64, args [][]byte) (Item, error) {
	if w.args == nil {
		w.args = make([]Arg, len(w.spec.Aggregates))
	}
	clear(w.args)
	return w.spec.itemIn(w.args, key, t, args)
}

// ItemIn is Item made in out, one Arg per aggregate, which it zeroes
// first: for a caller that keeps Items of several records at once (the
// engine's evaluation ahead, design K10).
func (s *Spec) ItemIn(out []Arg, key []byte, t int64, args [][]byte) (Item, error) {
	clear(out)
	return s.itemIn(out[:len(s.Aggregates)], key, t, args)
}

// itemIn is Item, its Args in out (zeroed, one per aggregate).
func (s *Spec) itemIn(out []Arg, key []byte, t int64, args [][]byte) (Item, error) {
	it := Item{Key: key, Time: t, Args: out}
	for i, a := range s.Aggregates {
		if a.Op == Count {
			continue
		}
		raw := args[i]
		if string(raw) == "null" || raw == nil {
			it.Args[i].Null = true
			continue
		}
		switch a.Op {
		case First, Last:
			it.Args[i].JSON = raw
		default:
			f, err := parseNumber(raw)
			if err != nil || raw[0] == '+' || raw[0] == '.' { // JSON numbers only
				return Item{}, fmt.Errorf("aggregate.%s: %s of %.40s, not a number", a.Name, a.Op, raw)
			}
			it.Args[i].Num = f
		}
	}
	return it, nil
}

// parseNumber is strconv.ParseFloat(raw, 64), its result and its error: an
// integer of 1 to 15 digits (exact in a float64; a longer one, up to 18,
// would be rounded as strconv rounds, but is left to it), the usual aggregate
// argument, is read without strconv's general algorithm (and without
// converting raw to a string).
func parseNumber(raw []byte) (float64, error) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return strconv.ParseFloat(string(raw), 64)
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return strconv.ParseFloat(string(raw), 64)
		}
		v = v*10 + int64(c-'0')
	}
	if len(digits) < len(raw) {
		return -float64(v), nil // -0 for "-0", as strconv
	}
	return float64(v), nil
}

// Result is one window's result.
type Result struct {
	Window     string // Spec.Name
	Key        []byte // the window key, as JSON
	Start, End int64  // the window is [Start, End)
	// Value is the JSON object {"key", "start", "end" (RFC 3339, UTC), then
	// each aggregate under its name, in the Spec's order}.
	Value []byte
}

// slot is one aggregate's accumulator.
type slot struct {
	n   int64   // non-null arguments (records, for Count)
	f   float64 // Sum, Avg: the sum; Min, Max: the extreme
	raw []byte  // First, Last
	t   int64   // First, Last: raw's event time
	seq int64   // First, Last: raw's place in the release order
}

// window is one open window of one key.
type window struct {
	start, end int64
	slots      []slot
}

// State is a key's open windows, by start (and so by end): the state of
// Windows in its Store. Its content is the package's; StateCodec encodes
// it for a durable Store.
type State []*window

// Windows computes the windows of a Spec over records in release order: a
// Processor of its Function. Not safe for concurrent use.
type Windows struct {
	spec *Spec
	p    *Processor[State, Item]
	emit func(*Result) error
	seq  int64
	args []Arg // Item's
	// Open is the number of open windows; Results the results emitted;
	// Late the records late for at least one of their windows.
	Open, Results, Late int64
	// keyBytes and rawBytes are StateBytes' parts: the keys with state
	// (with keyOverhead each) and the First and Last values kept.
	keyBytes, rawBytes int64
	gone               func(key string) // WithKeyGone
}

// keyOverhead is what a key with state costs beyond its bytes, about: a
// map entry, the string header and the state's slice header.
const keyOverhead = 64

// StateBytes is the size of the windows' state, about, wherever the store
// keeps it: each open window (StateCodec's fixed size of a window with
// its aggregates), each key with state (its bytes and keyOverhead), and
// the First and Last values kept (their capacity).
func (w *Windows) StateBytes() int64 {
	win := int64(unsafe.Sizeof(&window{})+unsafe.Sizeof(window{})) + int64(len(w.spec.Aggregates))*int64(unsafe.Sizeof(slot{}))
	return w.Open*win + w.keyBytes + max(w.rawBytes, 0) // a store's decoded values may hold less than was counted
}

// rawCap is what win's First and Last values hold.
func rawCap(win *window) int64 {
	n := 0
	for i := range win.slots {
		n += cap(win.slots[i].raw)
	}
	return int64(n)
}

// Option is an option of New.
type Option func(*options)

type options struct {
	store Store[State]
	gone  func(key string)
}

// WithKeyGone makes the Windows call gone with a key once none of its
// windows is open any more (its last one emitted): a caller that holds
// something for the key's open windows (the engine holds its records'
// offsets back for session windows, whose end moves) lets go of it then.
// gone must not keep key beyond the call unless it copies it.
func WithKeyGone(gone func(key string)) Option { return func(o *options) { o.gone = gone } }

// WithStore makes the Windows keep their state in store (empty) instead of
// a MemStore, and their timers too if it is a TimerStore: a durable store
// (keyed/durable) keeps them beyond memory. Results are the same whatever
// the store.
func WithStore(store Store[State]) Option { return func(o *options) { o.store = store } }

// New returns the Windows of s, which pass every result to emit, in the
// order of their ends, ties by key (the key's JSON bytes). State is held
// in memory (MemStore) unless WithStore says otherwise.
func New(s Spec, emit func(*Result) error, opts ...Option) (*Windows, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	if o.store == nil {
		o.store = NewMemStore[State]()
	}
	w := &Windows{spec: &s, emit: emit, gone: o.gone}
	w.p = NewProcessor[State, Item](windowsFn{w}, o.store)
	return w, nil
}

// windowsFn is the Function of a Windows.
type windowsFn struct{ w *Windows }

func (f windowsFn) Process(c *Context[State, Item], it Item) error { return f.w.process(c, it) }
func (f windowsFn) OnTimer(c *Context[State, Item], t int64) error { return f.w.onTimer(c, t) }

// Spec is the Windows' Spec.
func (w *Windows) Spec() *Spec { return w.spec }

// Keys is the number of keys with open windows.
func (w *Windows) Keys() int { return w.p.Keys() }

// Time is the Processor's time (Processor.Time).
func (w *Windows) Time() int64 { return w.p.Time() }

// Add takes one record's Item, released at at (Processor.Process). late
// reports that a window the record belongs in was already emitted
// (its End − 1 + Lateness is at or below Time): the record is in none of
// those, and counted once in Late. Add keeps nothing of it's memory (a
// First or Last argument it keeps is copied): the caller may reuse the
// key's and the arguments' bytes once it returns.
func (w *Windows) Add(it Item, at int64) (late bool, err error) {
	before := w.Late
	err = w.p.processBorrowed(it.Key, at, it)
	return w.Late > before, err
}

// Advance is Processor.Advance: every window whose End − 1 + Lateness is
// at or below wm is emitted.
func (w *Windows) Advance(wm int64) error { return w.p.Advance(wm) }

// Close emits every open window (the end of a bounded input).
func (w *Windows) Close() error { return w.p.Close() }

func (w *Windows) fireAt(end int64) int64 {
	if end > MaxTime-w.spec.Lateness {
		return MaxTime
	}
	return end - 1 + w.spec.Lateness
}

// process adds it to its windows.
func (w *Windows) process(c *Context[State, Item], it Item) error {
	w.seq++
	st, _ := c.Get()
	old := st
	if w.spec.Kind == Session {
		st = w.session(c, st, it)
	} else {
		st = w.fixed(c, st, it)
	}
	if len(old) == 0 && len(st) > 0 {
		w.keyBytes += int64(len(it.Key)) + keyOverhead
	}
	// a MemStore holds old itself: its windows changed in place are seen
	// without a Put when the slice is the same
	if len(st) > 0 && (!c.p.inMemory || len(st) != len(old) || &st[0] != &old[0]) {
		c.Put(st)
	}
	return nil
}

// fixed adds it to its tumbling or hopping windows.
func (w *Windows) fixed(c *Context[State, Item], st State, it Item) State {
	every := w.spec.Size
	if w.spec.Kind == Hopping {
		every = w.spec.Every
	}
	first := floorDiv(it.Time-w.spec.Size, every)*every + every // the earliest start with start + Size > Time
	late := false
	for s := first; s <= it.Time; s += every {
		end := s + w.spec.Size
		fire := w.fireAt(end)
		if fire <= c.Time() {
			late = true
			continue
		}
		i, found := slices.BinarySearchFunc(st, s, func(x *window, s int64) int { return cmp.Compare(x.start, s) })
		if !found {
			st = slices.Insert(st, i, &window{start: s, end: end, slots: make([]slot, len(w.spec.Aggregates))})
			w.Open++
			c.SetTimer(fire)
		}
		w.add(st[i], it)
	}
	if late {
		w.Late++
	}
	return st
}

// session adds it to its session: [Time, Time + Gap), merged with every
// open session of the key it overlaps.
func (w *Windows) session(c *Context[State, Item], st State, it Item) State {
	start, end := it.Time, it.Time+w.spec.Gap
	if w.fireAt(end) <= c.Time() {
		w.Late++
		return st
	}
	nw := &window{start: start, end: end, slots: make([]slot, len(w.spec.Aggregates))}
	w.Open++
	kept := st[:0]
	var merged []*window
	for _, x := range st {
		if x.start < end && start < x.end {
			merged = append(merged, x)
		} else {
			kept = append(kept, x)
		}
	}
	for _, x := range merged {
		w.rawBytes -= rawCap(x) // what nw takes of it is counted again
		nw.start, nw.end = min(nw.start, x.start), max(nw.end, x.end)
		for i := range nw.slots {
			w.merge(i, &nw.slots[i], &x.slots[i])
		}
		c.DeleteTimer(w.fireAt(x.end))
		w.Open--
	}
	w.rawBytes += rawCap(nw) // what it took of the merged sessions
	w.add(nw, it)
	c.SetTimer(w.fireAt(nw.end))
	i, _ := slices.BinarySearchFunc(kept, nw.start, func(x *window, s int64) int { return cmp.Compare(x.start, s) })
	return slices.Insert(kept, i, nw)
}

// add adds it to win.
func (w *Windows) add(win *window, it Item) {
	for i, a := range w.spec.Aggregates {
		arg, sl := &it.Args[i], &win.slots[i]
		if a.Op == Count {
			sl.n++
			continue
		}
		if arg.Null {
			continue
		}
		before := cap(sl.raw)
		w.merge(i, sl, &slot{n: 1, f: arg.Num, raw: arg.JSON, t: it.Time, seq: w.seq})
		if len(arg.JSON) > 0 && len(sl.raw) > 0 && &sl.raw[0] == &arg.JSON[0] {
			sl.raw = bytes.Clone(sl.raw) // the caller's memory: Add keeps none of it
		}
		w.rawBytes += int64(cap(sl.raw) - before)
	}
}

// merge merges b into a, aggregate i's accumulators.
func (w *Windows) merge(i int, a, b *slot) {
	if b.n == 0 {
		return
	}
	op := w.spec.Aggregates[i].Op
	switch {
	case a.n == 0 && op != Count:
		*a = *b
		return
	case op == Sum || op == Avg:
		a.f += b.f
	case op == Min:
		a.f = min(a.f, b.f)
	case op == Max:
		a.f = max(a.f, b.f)
	case op == First:
		if b.t < a.t || b.t == a.t && b.seq < a.seq {
			a.raw, a.t, a.seq = b.raw, b.t, b.seq
		}
	case op == Last:
		if b.t > a.t || b.t == a.t && b.seq > a.seq {
			a.raw, a.t, a.seq = b.raw, b.t, b.seq
		}
	}
	a.n += b.n
}

// onTimer emits the key's windows due at t.
func (w *Windows) onTimer(c *Context[State, Item], t int64) error {
	st, _ := c.Get()
	n := 0
	for _, x := range st {
		if w.fireAt(x.end) > t {
			break // by start, and so by end
		}
		n++
		w.Open--
		w.Results++
		w.rawBytes -= rawCap(x)
		if err := w.emit(w.result([]byte(c.Key()), x)); err != nil {
			return err
		}
	}
	st = slices.Delete(st, 0, n)
	if len(st) == 0 {
		w.keyBytes -= int64(len(c.Key())) + keyOverhead
		c.Delete()
		if w.gone != nil {
			w.gone(c.Key())
		}
	} else {
		c.Put(st)
	}
	return nil
}

// result renders x, of key.
func (w *Windows) result(key []byte, x *window) *Result {
	b := make([]byte, 0, 64+len(key)+16*len(x.slots))
	b = append(b, `{"key":`...)
	b = append(b, key...)
	b = append(b, `,"start":"`...)
	b = time.UnixMilli(x.start).UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","end":"`...)
	b = time.UnixMilli(x.end).UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	for i, a := range w.spec.Aggregates {
		b = append(b, ',')
		b = strconv.AppendQuote(b, a.Name)
		b = append(b, ':')
		sl := &x.slots[i]
		switch {
		case a.Op == Count:
			b = strconv.AppendInt(b, sl.n, 10)
		case sl.n == 0:
			b = append(b, "null"...)
		case a.Op == First || a.Op == Last:
			b = append(b, sl.raw...)
		case a.Op == Avg:
			b = appendNum(b, sl.f/float64(sl.n))
		default:
			b = appendNum(b, sl.f)
		}
	}
	b = append(b, '}')
	return &Result{Window: w.spec.Name, Key: key, Start: x.start, End: x.end, Value: b}
}

// appendNum appends f as a JSON number: an integer without a fraction
// when it is one (and exact), else the shortest form that reads back as f.
func appendNum(b []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) { // a sum that overflowed
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// LastTimer is the timer of the latest window a record of event time t
// belongs in (End − 1 + Lateness): every window it joins is emitted by
// then. ok is false for session windows, whose end moves with the
// session. A record joins no window when this is at or below Time (it is
// late for all of them).
func (w *Windows) LastTimer(t int64) (timer int64, ok bool) {
	switch w.spec.Kind {
	case Tumbling:
		return w.fireAt(floorDiv(t, w.spec.Size)*w.spec.Size + w.spec.Size), true
	case Hopping:
		return w.fireAt(floorDiv(t, w.spec.Every)*w.spec.Every + w.spec.Size), true
	}
	return 0, false
}

// FireAt is the timer of a window ending at end: End − 1 + Lateness, the
// time at which it is emitted.
func (w *Windows) FireAt(end int64) int64 { return w.fireAt(end) }

var kindNames = [...]string{Tumbling: "tumbling", Hopping: "hopping", Session: "session"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}
