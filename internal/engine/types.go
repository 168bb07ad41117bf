package engine

// What the engine reports and the ports it calls: events, counters, late
// counters, the parked store, windows.

import (
	"sort"
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// LatePolicy says what happens to a late record (design L1).
type LatePolicy uint8

// The late policies.
const (
	LateEmit LatePolicy = iota
	LateDeadLetter
	LateDrop
)

// EventKind names what an Event reports; the root package's event kinds
// have the same values.
type EventKind uint8

// The event kinds.
const (
	EventAssigned EventKind = iota + 1
	EventRevoked
	EventPhase
	EventLate
	EventDead
	EventCheckpoint
	EventReplayDone
	EventOffsetsReset
	EventFenced
)

// Event is something the engine reports to the observer.
type Event struct {
	Kind      EventKind
	Partition record.TopicPartition
	From, To  catchup.Phase
	Watermark int64
	Offset    int64
	LateBy    int64  // ms, for EventLate
	Reason    string // for EventDead
}

// Counters are the engine's counts of records.
type Counters struct {
	In, Filtered, Out, Timeless, Dead, Skipped, Future int64
	Rebalances                                         int64
	TableVersions                                      int64
	// ExpressionFailed counts records dead-lettered by the name of the
	// expression that failed (ExpressionError).
	ExpressionFailed map[string]int64
	ReplayDone       bool
	ReplayTime       time.Duration
}

// ExpressionError is an error that names the expression that failed.
type ExpressionError interface {
	error
	Expression() string
}

// LateBuckets are the upper bounds, in ms, of the lateness histogram; the
// last bucket counts everything above the last bound.
var LateBuckets = []int64{1, 10, 100, 1_000, 10_000, 60_000, 600_000, 3_600_000}

// LateCounter counts the late records of one partition. It mirrors the
// root package's public LateCounter field for field: the driver converts
// one into the other, so the compiler keeps the two equal.
type LateCounter struct {
	Count        int64
	Emitted      int64
	DeadLettered int64
	Dropped      int64
	MaxLateBy    int64   // ms
	Histogram    []int64 // len(LateBuckets)+1 counts
	SumLateBy    int64   // ms, the sum of every late record's lateness
}

func (l *LateCounter) add(lateBy int64, p LatePolicy) {
	if l.Histogram == nil {
		l.Histogram = make([]int64, len(LateBuckets)+1)
	}
	l.Count++
	switch p {
	case LateEmit:
		l.Emitted++
	case LateDeadLetter:
		l.DeadLettered++
	case LateDrop:
		l.Dropped++
	}
	l.MaxLateBy = max(l.MaxLateBy, lateBy)
	l.SumLateBy += lateBy
	i := sort.Search(len(LateBuckets), func(i int) bool { return lateBy <= LateBuckets[i] })
	l.Histogram[i]++
}

// Store holds parked records in timer order (the root package's
// ParkedStore). Park and Release are called from the steps only; a durable
// store may do I/O in them.
type Store interface {
	// Park parks r at p. r stays owned by the store until released.
	Park(p timers.Pos, r *record.Record) error
	// Release calls fn, in timer order, for every record with event time ≤
	// watermark (at most max when max > 0), removing each.
	Release(watermark int64, max int, fn func(*record.Record) error) error
	// Min returns the first parked position.
	Min() (timers.Pos, bool)
	Len() int
	Bytes() int64
}

// Window is a window computed on the released records: its spec, the
// topics it takes (none: every timed input), its where, key and aggregate
// arguments, and Bits, the route of its results (its own sinks). The
// bytes Key and Args return are used before the next record's evaluation
// and never kept (windowRun.item, keyed invariant 9): they may be memory
// the functions reuse.
type Window struct {
	Spec   keyed.Spec
	Inputs []string
	Where  func(*record.Record) (bool, error)
	Key    func(*record.Record) ([]byte, error)
	Args   []func(*record.Record) ([]byte, error)
	Bits   uint64
	// Store keeps the window's state (nil: in memory, keyed.MemStore).
	Store keyed.Store[keyed.State]
	// TaskStore, in a group, makes the store of one task's windows (its
	// partition number, and how many tasks the member holds as it is
	// made), and what lets go of it when the task does (nil: in memory).
	TaskStore func(task int32, tasks int) (st keyed.Store[keyed.State], release func(), err error)
	// Fork, when set, returns the window again with a Where, Key and Args
	// that share no memory with these or with another Fork's, and that
	// give the same results: a helper goroutine evaluates a long release's
	// records with them, ahead of the engine (ahead.go, design K10). Each
	// fork is used by one goroutine at a time. Nil: the engine evaluates
	// every record itself.
	Fork func() Window
}

// WindowStats is one window's activity.
type WindowStats struct {
	Name    string
	Open    int64
	Keys    int
	Results int64
	Late    int64
	// StateBytes is the size of the window's state, about
	// (keyed.Windows.StateBytes), summed over the scopes.
	StateBytes int64
}
