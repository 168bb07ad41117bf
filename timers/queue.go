package timers

import (
	"math/bits"
	"slices"
)

// item is what the buckets hold: the event time as an order-preserving
// unsigned key, the value and its accounted size. Moving items between
// buckets touches nothing else: a record's position is read (through the
// queue's pos function) only to order records of equal event time.
type item[V any] struct {
	u    uint64
	v    V
	size int
}

// key maps an event time to an unsigned key with the same order.
func key(t int64) uint64 { return uint64(t) ^ 1<<63 }

// Queue is an in-memory timer queue of values of type V. It is not safe for
// concurrent use.
//
// It is a radix heap over event times. A record sits in the bucket given by
// the highest bit in which its event time differs from last, a key at or
// below every parked record (bucket 0: equal to it); a push is an append.
// Releasing up to a watermark (release.go) takes whole buckets the
// watermark has passed, or splits the lowest one at the watermark when at
// least a quarter of its span is due, filing the rest below it; the records
// taken are sorted once, by a stable radix sort on the bits their times do
// not share, then by the tie-break within each event time. A bucket of
// which little is due is filed down step by step, the textbook radix heap's
// release. A record only moves down while pushes stay at or above last,
// which the engine guarantees (a record at or below the released watermark
// is late, never parked); a push below it files everything again, once.
//
// Records at the same Pos always share a bucket (the bucket is a function
// of the event time) and keep their push order within it, so the stable
// sorts put the latest push of a Pos next to its earlier ones, and only it
// is released.
type Queue[V any] struct {
	pos     func(V) Pos
	buckets [65][]item[V]
	bmin    [65]uint64 // least key in each non-empty bucket above 0
	bmax    [65]uint64 // greatest key in each non-empty bucket above 0
	mask    uint64     // bit k-1 set: buckets[k] (k ≥ 1) is non-empty
	last    uint64
	// b0sorted: buckets[0] is sorted in descending release order (stable,
	// so of equal positions the latest push is nearest the end), and
	// releasing pops from its end.
	b0sorted bool
	// minPos caches Min while minOK.
	minPos  Pos
	minOK   bool
	len     int
	bytes   int64
	scratch []item[V]
	rebases int // how many times rebase ran, for tests
	// b0dups: sorted bucket 0 holds two pushes of one Pos.
	b0dups    bool
	ties      []tie[V]
	perm      []int32
	sinceTrim int       // records released since the last trim
	peak      int       // the most records parked since the last trim
	split     []item[V] // scratch: the released part of a split bucket
}

// shrinkCap is the bucket capacity (in records) above which an emptied
// queue gives a bucket's memory back to the garbage collector.
const shrinkCap = 1 << 16

// keepFloor is the capacity (in records) a bucket always keeps; beyond it,
// the buckets keep their arrays only while their capacity in all stays
// within keepFactor times the most records parked since the last trim, plus
// the floors (trim). Without that bound every bucket would keep the largest
// array it ever needed: after a burst, up to 64 times the parked set. The
// bound follows the peak rather than what is parked when trim runs (right
// after a release step, the trough): a replay parks a fetch's worth and
// releases most of it at every step, and a bound set by the trough would
// drop, at every turnover, the arrays the next fetch fills again. And as
// last moves, each bucket in turn holds much of the parked set, so a
// replay's buckets need several times the peak in all (about ten times in
// the scaling benchmark): hence a factor of 16.
const (
	keepFloor  = 1 << 10
	keepFactor = 16
)

// NewQueue returns an empty queue of values whose positions pos gives. Push
// reads a value's event time through it; the rest of the position is read
// only to order values of equal event time, and for Min.
func NewQueue[V any](pos func(V) Pos) *Queue[V] {
	return &Queue[V]{pos: pos}
}

// Push parks v, accounting size bytes. Pushing a value at a Pos that is
// already parked (a re-read after a restart) keeps one copy: the later value
// is the one released, and Len and Bytes count both until then (invariant
// 1).
func (q *Queue[V]) Push(v V, size int) { q.PushAt(v, q.pos(v).EventTime, size) }

// PushAt is Push for a caller that has v's event time at hand, which must
// be the queue's pos(v).EventTime: the position is then read only while
// Min's answer is cached, to keep it up to date.
func (q *Queue[V]) PushAt(v V, eventTime int64, size int) {
	q.len++
	q.peak = max(q.peak, q.len)
	q.bytes += int64(size)
	u := key(eventTime)
	if u < q.last {
		q.rebase()
	}
	q.put(item[V]{u: u, v: v, size: size})
	if q.minOK && eventTime <= q.minPos.EventTime {
		if p := q.pos(v); p.EventTime < q.minPos.EventTime || lessTie(&p, &q.minPos) {
			q.minPos = p
		}
	}
}

// put files it in its bucket relative to last.
func (q *Queue[V]) put(it item[V]) {
	k := bits.Len64(it.u ^ q.last)
	if k == 0 {
		q.buckets[0] = append(q.buckets[0], it)
		q.b0sorted = len(q.buckets[0]) == 1
		q.b0dups = q.b0dups && !q.b0sorted
		return
	}
	if q.mask&(1<<(k-1)) == 0 {
		q.mask |= 1 << (k - 1)
		q.bmin[k], q.bmax[k] = it.u, it.u
	} else if it.u < q.bmin[k] {
		q.bmin[k] = it.u
	} else if it.u > q.bmax[k] {
		q.bmax[k] = it.u
	}
	q.buckets[k] = append(q.buckets[k], it)
}

// rebase lowers last to the least possible key, below every parked record
// and any later push, and files every record again, in bucket order, which
// keeps each Pos's pushes in order. It costs O(Len), once until the next
// release step: lowering last only to the pushed key would repeat it for
// every later push below that one (invariant 5).
func (q *Queue[V]) rebase() {
	q.rebases++
	s := q.scratch[:0]
	for k := range q.buckets {
		s = append(s, q.buckets[k]...)
		clear(q.buckets[k])
		q.buckets[k] = q.buckets[k][:0]
	}
	q.mask, q.last = 0, 0
	for _, it := range s {
		q.put(it)
	}
	clear(s)
	q.scratch = s[:0]
}

// trim gives bucket memory back to the garbage collector when the buckets
// hold more than their bound of capacity: an empty bucket drops its array, a
// mostly empty one moves to a smaller one.
func (q *Queue[V]) trim() {
	total := 0
	for k := range q.buckets {
		total += cap(q.buckets[k])
	}
	peak := q.peak // ≥ q.len: Push raises it, only trim and Clear lower it
	q.peak = q.len
	if total <= keepFactor*peak+len(q.buckets)*keepFloor {
		return
	}
	for k, b := range q.buckets {
		switch {
		case cap(b) <= keepFloor || cap(b) <= 2*len(b):
		case len(b) == 0:
			q.buckets[k] = nil
		default:
			q.buckets[k] = append(make([]item[V], 0, 2*len(b)), b...)
		}
	}
}

// shrink gives oversized bucket memory back once the queue is empty.
func (q *Queue[V]) shrink() {
	for k := range q.buckets {
		if cap(q.buckets[k]) > shrinkCap {
			q.buckets[k] = nil
		}
	}
	if cap(q.scratch) > shrinkCap {
		q.scratch = nil
	}
	if cap(q.ties) > shrinkCap {
		q.ties, q.perm = nil, nil
	}
	if cap(q.split) > shrinkCap {
		q.split = nil
	}
}

// Min returns the first position in release order. It does not move last,
// so that pushes above the released watermark stay O(1).
func (q *Queue[V]) Min() (Pos, bool) {
	if q.len == 0 {
		return Pos{}, false
	}
	if !q.minOK {
		q.minPos, q.minOK = q.first(), true
	}
	return q.minPos, true
}

// first finds the first position in release order of a non-empty queue.
func (q *Queue[V]) first() Pos {
	if b0 := q.buckets[0]; len(b0) > 0 {
		q.sort0()
		return q.pos(b0[len(b0)-1].v)
	}
	k := bits.TrailingZeros64(q.mask) + 1
	var best Pos
	found := false
	for _, it := range q.buckets[k] {
		if it.u != q.bmin[k] {
			continue
		}
		if p := q.pos(it.v); !found || lessTie(&p, &best) {
			best, found = p, true
		}
	}
	return best
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
	var t []tie[V]
	for k := range q.buckets { // bucket order keeps each Pos's pushes in order
		for _, it := range q.buckets[k] {
			t = append(t, tie[V]{p: q.pos(it.v), it: it})
		}
	}
	slices.SortStableFunc(t, func(a, b tie[V]) int {
		if a.p.EventTime != b.p.EventTime {
			return cmpInt(a.p.EventTime, b.p.EventTime)
		}
		return cmpTie(&a.p, &b.p)
	})
	for j := range t {
		if j+1 < len(t) && t[j+1].p == t[j].p {
			continue // an earlier push of the same Pos
		}
		if !fn(t[j].p, t[j].it.v) {
			return
		}
	}
}

func cmpInt(a, b int64) int {
	if a < b {
		return -1
	}
	return 1
}

// Clear removes everything, keeping the buckets' memory for reuse.
func (q *Queue[V]) Clear() {
	for k := range q.buckets {
		clear(q.buckets[k])
		q.buckets[k] = q.buckets[k][:0]
	}
	q.mask, q.last, q.b0sorted, q.minOK = 0, 0, false, false
	q.len, q.bytes, q.peak = 0, 0, 0
	q.shrink()
}
