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
package offsets

import "sort"

type entry struct {
	off  int64
	done bool
}

// Partition is the outstanding-offset window of one partition. The zero
// value is not usable; use New.
type Partition struct {
	pending  []entry // increasing offsets; pending[head:] is live
	head     int
	position int64
	low      int64
}

// New returns a window starting at position start.
func New(start int64) *Partition { return &Partition{position: start, low: start} }

// Add marks offset off outstanding. off must be ≥ the position and greater
// than any offset added before (invariant 3); the position moves past it.
func (p *Partition) Add(off int64) {
	p.pending = append(p.pending, entry{off: off})
	if off+1 > p.position {
		p.position = off + 1
	}
	p.settle() // the offsets skipped below off are complete
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
	if len(live) == 0 {
		return false
	}
	// Offsets are added in increasing order and mostly without gaps, so
	// off usually sits at its distance from the head; else search.
	i := int(min(max(off-live[0].off, 0), int64(len(live))))
	if i == len(live) || live[i].off != off {
		i = sort.Search(len(live), func(i int) bool { return live[i].off >= off })
	}
	if i == len(live) || live[i].off != off || live[i].done {
		return false
	}
	live[i].done = true
	p.settle()
	return true
}

func (p *Partition) settle() {
	for p.head < len(p.pending) && p.pending[p.head].done {
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
		low = p.pending[p.head].off
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
func (p *Partition) Outstanding() int {
	n := 0
	for _, e := range p.pending[p.head:] {
		if !e.done {
			n++
		}
	}
	return n
}
