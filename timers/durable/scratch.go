package durable

import (
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// Scratch is a Store used only to spill parked records beyond its memory
// budget: it has the Store's parking methods and none of its checkpoint
// ones (Restore, Checkpoint), so the engine takes it for a store that
// does not survive a restart (signalbox.ParkedStore, not a DurableStore).
// Open it on an emptied directory (ResetStore): a job whose state is
// rebuilt from Kafka at each start (windows: docs/design.md, K5-K9)
// keeps nothing from one run to the next.
type Scratch struct{ s *Store }

// Scratch is s as a Scratch.
func (s *Store) Scratch() Scratch { return Scratch{s} }

// Park parks r at p (Store.Park).
func (x Scratch) Park(p timers.Pos, r *record.Record) error { return x.s.Park(p, r) }

// Release releases the records at or below watermark (Store.Release).
func (x Scratch) Release(watermark int64, max int, fn func(*record.Record) error) error {
	return x.s.Release(watermark, max, fn)
}

// Min is the first parked position (Store.Min).
func (x Scratch) Min() (timers.Pos, bool) { return x.s.Min() }

// Len is the number of parked records (Store.Len).
func (x Scratch) Len() int { return x.s.Len() }

// Bytes is what the parked records hold in memory (Store.Bytes).
func (x Scratch) Bytes() int64 { return x.s.Bytes() }

// ParkCopies is true: Park copies the record (Store.ParkCopies).
func (x Scratch) ParkCopies() bool { return x.s.ParkCopies() }

// SpilledLen is the number of records in pebble only (Store.SpilledLen).
func (x Scratch) SpilledLen() int { return x.s.SpilledLen() }

// DiskBytes is the store's size on disk (Store.DiskBytes).
func (x Scratch) DiskBytes() int64 { return x.s.DiskBytes() }
