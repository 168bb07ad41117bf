package timers

import (
	"math/bits"
	"slices"
)

// Pos is a record's place in the release order.
type Pos struct {
	EventTime int64  // milliseconds since the Unix epoch
	Key       string // ordering key
	Input     string // input (topic) name
	Partition int32
	Offset    int64
}

// Less reports whether a is released before b. It is a total order over
// distinct records (invariant 1).
func Less(a, b Pos) bool {
	if a.EventTime != b.EventTime {
		return a.EventTime < b.EventTime
	}
	return lessTie(&a, &b)
}

// lessTie is Less for two positions at the same event time.
func lessTie(a, b *Pos) bool {
	return cmpTie(a, b) < 0
}

// cmpTie compares two positions at the same event time.
func cmpTie(a, b *Pos) int {
	switch {
	case a.Key != b.Key:
		return cmpString(a.Key, b.Key)
	case a.Input != b.Input:
		return cmpString(a.Input, b.Input)
	case a.Partition != b.Partition:
		if a.Partition < b.Partition {
			return -1
		}
		return 1
	case a.Offset != b.Offset:
		if a.Offset < b.Offset {
			return -1
		}
		return 1
	}
	return 0
}

// cmpString compares two strings known to differ.
func cmpString(a, b string) int {
	if a < b {
		return -1
	}
	return 1
}

// entry holds one parked record in the queue's slab. seq orders the pushes,
// so that of two records parked at the same Pos the later one is released.
type entry[V any] struct {
	pos  Pos
	val  V
	size int
	seq  uint64
}

// ref is what the buckets hold: the event time as an order-preserving
// unsigned key, and the record's index in the slab. At 16 bytes, moving refs
// between buckets moves little memory and never touches the slab.
type ref struct {
	u uint64
	i int
}

// key maps an event time to an unsigned key with the same order.
func key(t int64) uint64 { return uint64(t) ^ 1<<63 }

// Queue is an in-memory timer queue of values of type V. It is not safe for
// concurrent use.
//
// It is a radix heap over event times: a record sits in the bucket given by
// the highest bit in which its event time differs from last, the event time
// of the latest release step (bucket 0: equal to it). A push is an append.
// A release step empties the lowest bucket whose least event time the
// watermark has passed, filing its records again into lower buckets, so a
// record moves at most once per bit of the parked set's event-time spread,
// and only the records of one event time (bucket 0) are ever sorted, by the
// tie-break. Records only move down while pushes stay at or above last,
// which the engine guarantees (a record at or below the released watermark
// is late, never parked); a push below it files everything again.
type Queue[V any] struct {
	buckets [65][]ref
	bmin    [65]uint64 // least key in each non-empty bucket above 0
	mask    uint64     // bit k-1 set: buckets[k] (k ≥ 1) is non-empty
	last    uint64
	// b0sorted: buckets[0] is sorted in descending release order, so that
	// releasing pops from its end.
	b0sorted bool
	// minI caches the slab index of the first record in release order.
	minI  int
	minOK bool

	// slab holds the parked records in chunks of chunkLen, so that growing
	// it never copies what is parked; free lists the unused indices below
	// n, the number of indices ever handed out.
	slab    [][]entry[V]
	n       int
	free    []int
	seq     uint64
	len     int
	bytes   int64
	scratch []ref
	cmp     func(a, b ref) int
}

// chunkLen is the number of records in one slab chunk.
const chunkLen = 1 << 10

// keepChunks is how many slab chunks an emptied queue keeps for reuse; it
// gives the rest back to the garbage collector, and likewise bucket
// capacity beyond keepChunks*chunkLen refs.
const keepChunks = 64

// NewQueue returns an empty queue.
func NewQueue[V any]() *Queue[V] {
	q := &Queue[V]{}
	// Descending: the first record to release sorts last. Of two records at
	// the same Pos, the earlier push sorts last, where it is dropped in
	// favour of the later one.
	q.cmp = func(a, b ref) int {
		ea, eb := q.at(a.i), q.at(b.i)
		if c := cmpTie(&eb.pos, &ea.pos); c != 0 {
			return c
		}
		switch {
		case ea.seq > eb.seq:
			return -1
		case ea.seq < eb.seq:
			return 1
		}
		return 0
	}
	return q
}

// Push parks v at p, accounting size bytes. Pushing a Pos that is already
// parked (a re-read after a restart) keeps one copy: the later value is the
// one released, and Len and Bytes count both until then (invariant 1).
func (q *Queue[V]) Push(p Pos, v V, size int) {
	var i int
	if n := len(q.free); n > 0 {
		i, q.free = q.free[n-1], q.free[:n-1]
	} else {
		i = q.n
		q.n++
		if i/chunkLen == len(q.slab) {
			q.slab = append(q.slab, make([]entry[V], chunkLen))
		}
	}
	q.seq++
	*q.at(i) = entry[V]{pos: p, val: v, size: size, seq: q.seq}
	q.len++
	q.bytes += int64(size)
	u := key(p.EventTime)
	if u < q.last {
		q.rebase(u)
	}
	q.put(ref{u: u, i: i})
	if q.minOK {
		if m := q.at(q.minI); p.EventTime < m.pos.EventTime || p.EventTime == m.pos.EventTime && lessTie(&p, &m.pos) {
			q.minI = i
		}
	}
}

// put files r in its bucket relative to last.
func (q *Queue[V]) put(r ref) {
	k := bits.Len64(r.u ^ q.last)
	if k == 0 {
		q.buckets[0] = append(q.buckets[0], r)
		q.b0sorted = len(q.buckets[0]) == 1
		return
	}
	if q.mask&(1<<(k-1)) == 0 {
		q.mask |= 1 << (k - 1)
		q.bmin[k] = r.u
	} else if r.u < q.bmin[k] {
		q.bmin[k] = r.u
	}
	q.buckets[k] = append(q.buckets[k], r)
}

// rebase lowers last to u, below every parked record, and files every record
// again. It costs O(Len); the engine never needs it (invariant 5).
func (q *Queue[V]) rebase(u uint64) {
	s := q.scratch[:0]
	for k := range q.buckets {
		s = append(s, q.buckets[k]...)
		q.buckets[k] = q.buckets[k][:0]
	}
	q.mask, q.last = 0, u
	for _, r := range s {
		q.put(r)
	}
	q.scratch = s[:0]
}

// settle makes bucket 0 hold the records of the least parked event time,
// sorted, provided that event time is ≤ limit; it reports whether bucket 0
// then holds anything to release.
func (q *Queue[V]) settle(limit uint64) bool {
	if len(q.buckets[0]) == 0 {
		if q.mask == 0 {
			return false
		}
		k := bits.TrailingZeros64(q.mask) + 1
		if q.bmin[k] > limit {
			return false
		}
		items := q.buckets[k]
		q.buckets[k] = items[:0]
		q.mask &^= 1 << (k - 1)
		q.last = q.bmin[k]
		for _, r := range items {
			q.put(r) // always below k: r agrees with the new last above bit k-1
		}
	}
	if q.last > limit {
		return false
	}
	if !q.b0sorted {
		slices.SortFunc(q.buckets[0], q.cmp)
		q.b0sorted = true
	}
	return true
}

// at returns the slab entry of index i.
func (q *Queue[V]) at(i int) *entry[V] { return &q.slab[i/chunkLen][i%chunkLen] }

// release takes slab index i out of the counts and returns it to the free
// list, dropping its value so that the queue does not keep it reachable.
func (q *Queue[V]) release(i int) V {
	e := q.at(i)
	v := e.val
	q.len--
	q.bytes -= int64(e.size)
	*e = entry[V]{}
	q.free = append(q.free, i)
	return v
}

// reset forgets every slab index, keeping at most keepChunks chunks, which
// must already be cleared, and drops oversized bucket slices.
func (q *Queue[V]) reset() {
	if len(q.slab) > keepChunks {
		clear(q.slab[keepChunks:])
		q.slab = q.slab[:keepChunks]
	}
	q.n, q.free = 0, q.free[:0]
	if cap(q.free) > keepChunks*chunkLen {
		q.free = nil
	}
	for k := range q.buckets {
		if cap(q.buckets[k]) > keepChunks*chunkLen {
			q.buckets[k] = nil
		}
	}
	if cap(q.scratch) > keepChunks*chunkLen {
		q.scratch = nil
	}
}

// PopUntil removes every value with event time ≤ watermark, in order, and
// appends it to dst (invariant 2). At most max values are popped when max > 0.
func (q *Queue[V]) PopUntil(watermark int64, max int, dst []V) []V {
	limit := key(watermark)
	popped := 0
	for (max <= 0 || popped < max) && q.settle(limit) {
		b0 := q.buckets[0]
		for len(b0) > 0 && (max <= 0 || popped < max) {
			r := b0[len(b0)-1]
			b0 = b0[:len(b0)-1]
			if len(b0) > 0 && q.at(b0[len(b0)-1].i).pos == q.at(r.i).pos {
				q.release(r.i) // parked again later: the later push is released
				continue
			}
			dst = append(dst, q.release(r.i))
			popped++
		}
		q.buckets[0] = b0
		q.minOK = false
	}
	if q.len == 0 && q.n > keepChunks*chunkLen {
		q.reset() // released entries are cleared already
	}
	return dst
}

// Min returns the first position in release order.
func (q *Queue[V]) Min() (Pos, bool) {
	if q.len == 0 {
		return Pos{}, false
	}
	if !q.minOK {
		q.minI, q.minOK = q.first(), true
	}
	return q.at(q.minI).pos, true
}

// first finds the slab index of the first record in release order. It does
// not move last, so that pushes above the released watermark stay O(1).
func (q *Queue[V]) first() int {
	if b0 := q.buckets[0]; len(b0) > 0 {
		if !q.b0sorted {
			slices.SortFunc(b0, q.cmp)
			q.b0sorted = true
		}
		return b0[len(b0)-1].i
	}
	k := bits.TrailingZeros64(q.mask) + 1
	best := ref{i: -1}
	for _, r := range q.buckets[k] {
		if r.u == q.bmin[k] && (best.i < 0 || q.cmp(r, best) > 0) {
			best = r
		}
	}
	return best.i
}

// Len is the number of parked records.
func (q *Queue[V]) Len() int { return q.len }

// Bytes is the accounted size of the parked records.
func (q *Queue[V]) Bytes() int64 { return q.bytes }

// Ascend calls fn for every parked record in release order until fn returns
// false, skipping a record parked again at the same Pos in favour of the
// later push. It sorts a copy of the parked set, O(Len log Len): it is for
// tests and diagnostics. The queue must not be modified during the walk.
func (q *Queue[V]) Ascend(fn func(p Pos, v V) bool) {
	s := q.scratch[:0]
	for k := range q.buckets {
		s = append(s, q.buckets[k]...)
	}
	slices.SortFunc(s, func(a, b ref) int {
		switch {
		case a.u > b.u:
			return -1
		case a.u < b.u:
			return 1
		}
		return q.cmp(a, b)
	})
	q.scratch = s[:0]
	for j := len(s) - 1; j >= 0; j-- {
		e := q.at(s[j].i)
		if j > 0 && q.at(s[j-1].i).pos == e.pos {
			continue
		}
		if !fn(e.pos, e.val) {
			return
		}
	}
}

// Clear removes everything, keeping the buckets' memory for reuse.
func (q *Queue[V]) Clear() {
	for k := range q.buckets {
		q.buckets[k] = q.buckets[k][:0]
	}
	q.mask, q.last, q.b0sorted, q.minOK = 0, 0, false, false
	for _, c := range q.slab {
		clear(c)
	}
	q.reset()
	q.len, q.bytes = 0, 0
}
