// Package offsets tracks, per partition, the offsets that are still
// outstanding (parked, or released but not yet acknowledged), and from them
// the offset that is safe to commit.
//
// Invariants:
//
//  1. Low() never passes an outstanding offset: every offset below Low() is
//     completed. Offsets the source skipped (transaction markers, compacted
//     records, filtered or dropped records) complete as soon as the position
//     passes them.
//  2. Low() is monotonic and ≤ the position.
//  3. Offsets are added in increasing order (the order of the partition); Done
//     may come in any order.
//  4. The window costs 16 bytes per 64 consecutive offsets (an aligned
//     word) from Low to the position in which one was added: about a bit
//     per parked record, so that a parked set spilled beyond memory does
//     not come back here.
package offsets

import (
	"math/bits"
	"sort"
)

// word holds 64 consecutive offsets: bit i is set while offset base+i is
// outstanding (invariant 4).
type word struct {
	base int64 // a multiple of 64
	bits uint64
}

// Partition is the outstanding-offset window of one partition. The zero
// value is not usable; use New.
type Partition struct {
	pending  []word // increasing bases; pending[head:] is live
	head     int
	count    int // outstanding offsets
	position int64
	low      int64
}

// New returns a window starting at position start.
func New(start int64) *Partition { return &Partition{position: start, low: start} }

// Add marks offset off outstanding. off must be ≥ the position and greater
// than any offset added before (invariant 3); the position moves past it.
func (p *Partition) Add(off int64) {
	base := off &^ 63
	n := len(p.pending)
	if n > p.head && p.pending[n-1].base == base {
		p.pending[n-1].bits |= 1 << (off & 63)
	} else {
		p.pending = append(p.pending, word{base: base, bits: 1 << (off & 63)})
	}
	p.count++
	if off+1 > p.position {
		p.position = off + 1
	}
	if n == p.head {
		p.settle() // the offsets skipped below off are complete
	}
	// Else the head word, and with it Low, is unchanged (invariant 3).
}

// Advance moves the position: every offset below it that was not added is
// complete (invariant 1).
func (p *Partition) Advance(position int64) {
	if position > p.position {
		p.position = position
	}
	p.settle()
}

// Done completes an outstanding offset. It reports false if off was not
// outstanding.
func (p *Partition) Done(off int64) bool {
	live := p.pending[p.head:]
	if len(live) == 0 || off < live[0].base {
		return false
	}
	base := off &^ 63
	// Words are added in increasing order and mostly without gaps, so off's
	// word usually sits at its distance from the head; else search.
	i := int(min((base-live[0].base)/64, int64(len(live))))
	if i == len(live) || live[i].base != base {
		i = sort.Search(len(live), func(i int) bool { return live[i].base >= base })
	}
	bit := uint64(1) << (off & 63)
	if i == len(live) || live[i].base != base || live[i].bits&bit == 0 {
		return false
	}
	live[i].bits &^= bit
	p.count--
	if i == 0 {
		p.settle()
	} // else the head word, and with it Low, is unchanged
	return true
}

func (p *Partition) settle() {
	for p.head < len(p.pending) && p.pending[p.head].bits == 0 {
		p.head++
	}
	if p.head == len(p.pending) {
		p.pending, p.head = p.pending[:0], 0
	} else if p.head > 1024 && p.head*2 > len(p.pending) {
		n := copy(p.pending, p.pending[p.head:])
		p.pending, p.head = p.pending[:n], 0
	}
	low := p.position
	if p.head < len(p.pending) {
		w := p.pending[p.head]
		low = w.base + int64(bits.TrailingZeros64(w.bits))
	}
	if low > p.low {
		p.low = low
	}
}

// Low is the lowest offset that is not complete: the offset to commit.
func (p *Partition) Low() int64 { return p.low }

// Position is the next offset the source will deliver.
func (p *Partition) Position() int64 { return p.position }

// Outstanding is the number of offsets not yet complete.
func (p *Partition) Outstanding() int { return p.count }
