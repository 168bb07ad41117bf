package engine

// Giving a source's record arrays back once nothing refers to them.

import (
	"unsafe"

	"github.com/signalbox/signalbox/record"
)

// parkedArray is one delivered record array with records still parked in
// the store: the store refers to them by pointer (Store.Park), so the
// array goes back to the source only once each of them is released.
type parkedArray struct {
	recs   []record.Record
	lo, hi uintptr // the addresses of recs[0] and recs[len(recs)]
	live   int     // records of recs parked and not yet released
}

// maxParkedArrays bounds a partition's parkedArrays. Beyond it the oldest is
// forgotten (left to the garbage collector): an array whose count cannot
// reach zero, because the store dropped one of its records in favour of a
// later copy (timers invariant 1), then cannot pin the list, and a partition
// parking more answers than this (live traffic held for a long delay)
// simply recycles less.
const maxParkedArrays = 256

// retire is called once the engine has ingested recs, one answer's array
// for ps, of which parked records went into the store: with none parked, or
// a store that copies what it parks, it goes back to the source at once,
// else once they are released (unparked).
func (c *Engine) retire(ps *partState, recs []record.Record, parked int) {
	if !c.cfg.Recycles || cap(recs) == 0 {
		return
	}
	if parked == 0 || !c.cfg.ParkRefs {
		c.fx.Recycle = append(c.fx.Recycle, recs)
		return
	}
	if len(ps.arrays) == maxParkedArrays {
		ps.arrays[0] = parkedArray{}
		ps.arrays = ps.arrays[1:]
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(recs)))
	ps.arrays = append(ps.arrays, parkedArray{recs: recs, lo: lo, hi: lo + uintptr(len(recs))*unsafe.Sizeof(recs[0]), live: parked})
}

// unparked counts rec, a record ps's store released, off its array, and
// gives the array back when it was the last. The engine must be done with
// rec: the source may overwrite it from then on. A record from an array ps
// does not list (copied by the store, parked before a revocation, or
// forgotten) changes nothing.
//
// Records are released in event-time order, which is nearly offset order
// within a partition, so the array is nearly always the oldest listed,
// where the search starts. An array given back out of turn stays listed,
// empty, until the ones before it are given back, so that the list only
// ever loses its first entries.
func (c *Engine) unparked(ps *partState, rec *record.Record) {
	p := uintptr(unsafe.Pointer(rec))
	for i := range ps.arrays {
		a := &ps.arrays[i]
		if p < a.lo || p >= a.hi {
			continue
		}
		if a.live--; a.live == 0 {
			c.fx.Recycle = append(c.fx.Recycle, a.recs)
			*a = parkedArray{}
			for len(ps.arrays) > 0 && ps.arrays[0].recs == nil {
				ps.arrays = ps.arrays[1:]
			}
		}
		return
	}
}
