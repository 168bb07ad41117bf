// Package strategy is the watermark-strategy hook the benchmark baselines and
// the engine's tests plug into; it is internal so that the library's public
// API names neither watermark.ID nor catchup.Phase.
//
// Invariants:
//
//  1. The offset gate (OffsetGate) is the product: a pipeline uses it unless
//     a strategy is given through Option, which only this module can call.
//  2. All calls to a Strategy come from the engine goroutine.
package strategy

import (
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/watermark"
)

// Strategy decides the watermark from what the engine observes. The default
// is the offset gate (package watermark fed by package catchup); the
// benchmark baselines implement timeout idleness and fixed windows with it.
//
// Lifecycle: Add when a partition is assigned → Observe / SetPhase as
// records and evidence arrive → Advance at least once per batch and on every
// tick → Remove on revoke.
type Strategy interface {
	Add(id watermark.ID, timeless bool, now time.Time)
	Remove(id watermark.ID)
	Observe(id watermark.ID, eventTime int64, now time.Time)
	SetPhase(id watermark.ID, phase catchup.Phase, behind int64, now time.Time)
	// Advance returns the watermark at now. It must be monotonic.
	Advance(now time.Time) int64
	// Restore raises the watermark to a checkpointed value.
	Restore(wm int64)
	// Holders explains the current value (may be nil).
	Holders() []watermark.Hold
}

// Option returns a signalbox.Option that makes each co-partitioned task
// (partition number p of every input) call newStrategy once for its own
// watermark; a nil newStrategy is refused by New, naming "strategy". Package
// signalbox sets it when it is initialised (it cannot be imported from here);
// callers convert the result with .(signalbox.Option).
var Option func(newStrategy func() Strategy) any

// offsetGate is the product's strategy: only evidence releases the clock.
type offsetGate struct{ t *watermark.Tracker }

// OffsetGate returns the default strategy with the given delay bound.
func OffsetGate(delay time.Duration) Strategy { return offsetGate{watermark.New(delay)} }

func (g offsetGate) Add(id watermark.ID, timeless bool, _ time.Time) { g.t.Add(id, timeless) }
func (g offsetGate) Remove(id watermark.ID)                          { g.t.Remove(id) }
func (g offsetGate) Observe(id watermark.ID, et int64, _ time.Time)  { g.t.Observe(id, et) }
func (g offsetGate) SetPhase(id watermark.ID, ph catchup.Phase, behind int64, _ time.Time) {
	g.t.SetHolding(id, ph.Holds(), ph.String(), behind)
}
func (g offsetGate) Advance(now time.Time) int64 { return g.t.Advance(now) }
func (g offsetGate) Restore(wm int64)            { g.t.Restore(wm) }
func (g offsetGate) Holders() []watermark.Hold   { return g.t.Holders() }
