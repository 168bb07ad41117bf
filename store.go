package signalbox

// The ParkedStore contracts: where parked records wait (the default in
// memory, internal/engine; timers/durable spills to pebble).

import (
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// ParkedStore holds parked records in timer order. The default keeps them in
// memory (timers.Queue); durable.Store (package timers/durable) spills to
// pebble beyond a budget.
//
// Lifecycle: Park and Release from the engine goroutine only; the engine
// never closes a store it did not create.
type ParkedStore interface {
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

// ParkCopier is a ParkedStore that may say its Park copies the record it is
// given (durable.Store does): the engine then gives the record's memory back
// to the source (Recycler) as soon as Park returns, instead of leaving it to
// the garbage collector. A store that is neither the default one nor a
// ParkCopier answering true never gets a source's memory back early.
//
// Lifecycle: the engine calls ParkCopies once, when Run starts, and relies on
// the answer for the whole run; from then on, after Park(p, r) returns, the
// store must not refer to r or to the memory r's slices point into.
type ParkCopier interface {
	ParkedStore
	ParkCopies() bool
}

// DurableStore is a ParkedStore that survives restarts (durable.Store). With
// one, signalbox checkpoints the parked set itself: at each checkpoint it
// waits until the sinks have acknowledged everything released so far, then
// stores the parked set with the checkpoint, then commits. A restart restores
// the parked set and resumes every partition from its saved position, so
// re-reads stay short however much was parked.
//
// Lifecycle: the caller opens and closes the store; Run calls Restore and
// then ParkedByPartition once each before opening the source, then Park,
// Release, Min and Checkpoint from the engine goroutine.
type DurableStore interface {
	ParkedStore
	Restore() (*record.Checkpoint, map[string][]byte, error)
	Checkpoint(cp record.Checkpoint, blobs map[string][]byte) error
	ParkedByPartition() map[record.TopicPartition]record.Parked
}
