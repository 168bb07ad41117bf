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
//
// Records at the same Pos always share a bucket (the bucket is a function
// of the event time) and keep their push order within it, so a stable sort
// of bucket 0 puts the latest push of a Pos next to its earlier ones.
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
	split     []item[V] // scratch: the released part of a split bucket
}

// shrinkCap is the bucket capacity (in records) above which an emptied
// queue gives a bucket's memory back to the garbage collector.
const shrinkCap = 1 << 16

// keepFloor is the capacity (in records) a bucket always keeps; beyond it,
// the buckets keep their arrays only while their capacity in all stays
// within keepFactor times the records parked, plus the floors (trim).
// Without that bound every bucket would keep the largest array it ever
// needed: after a burst, up to 64 times the parked set.
const (
	keepFloor  = 1 << 10
	keepFactor = 8
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
func (q *Queue[V]) Push(v V, size int) {
	q.len++
	q.bytes += int64(size)
	p := q.pos(v)
	u := key(p.EventTime)
	if u < q.last {
		q.rebase()
	}
	q.put(item[V]{u: u, v: v, size: size})
	if q.minOK && (p.EventTime < q.minPos.EventTime || p.EventTime == q.minPos.EventTime && lessTie(&p, &q.minPos)) {
		q.minPos = p
	}
}

// put files it in its bucket relative to last.
func (q *Queue[V]) put(it item[V]) {
	k := bits.Len64(it.u ^ q.last)
	if k == 0 {
		q.buckets[0] = append(q.buckets[0], it)
		q.b0sorted = len(q.buckets[0]) == 1
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
		for _, it := range items {
			q.put(it) // always below k: it agrees with the new last above bit k-1
		}
		clear(items) // drop the values, so that the queue keeps nothing reachable
	}
	if q.last > limit {
		return false
	}
	q.sort0()
	return true
}

// sort0 sorts bucket 0 if a push has disordered it.
//
// It reads each record's position once, into a scratch slice, rather than
// twice per comparison, and notes whether two records share a Pos (b0dups),
// so that releasing looks for earlier pushes only then.
func (q *Queue[V]) sort0() {
	if q.b0sorted {
		return
	}
	q.b0sorted = true
	q.b0dups = q.sortTies(q.buckets[0])
}

// sortTies sorts records of one event time in descending release order,
// stably (of equal positions the latest push is nearest the end), and
// reports whether two share a Pos.
func (q *Queue[V]) sortTies(b []item[V]) (dups bool) {
	if len(b) < 2 {
		return false
	}
	t, perm := q.ties[:0], q.perm[:0]
	for i, it := range b {
		t = append(t, tie[V]{p: q.pos(it.v), it: it})
		perm = append(perm, int32(i))
	}
	// Sorting indices moves 4 bytes where a tie is 80.
	slices.SortStableFunc(perm, func(x, y int32) int { return cmpTie(&t[y].p, &t[x].p) })
	for i, j := range perm {
		b[i] = t[j].it
		if i > 0 && t[j].p == t[perm[i-1]].p {
			dups = true
		}
	}
	clear(t)
	q.ties, q.perm = t[:0], perm[:0]
	return dups
}

// tie is a record of bucket 0 with its position, for sorting.
type tie[V any] struct {
	p  Pos
	it item[V]
}

// PopUntil removes every value with event time ≤ watermark, in order, and
// appends it to dst (invariant 2). At most max values are popped when max > 0.
func (q *Queue[V]) PopUntil(watermark int64, max int, dst []V) []V {
	limit := key(watermark)
	popped := 0
	if max <= 0 {
		n := len(dst)
		if dst = q.release(limit, dst); len(dst) > n {
			popped += len(dst) - n
			q.minOK = false
		}
	}
	for (max <= 0 || popped < max) && q.settle(limit) {
		b0 := q.buckets[0]
		for len(b0) > 0 && (max <= 0 || popped < max) {
			n := len(b0) - 1
			it := b0[n]
			b0[n] = item[V]{}
			b0 = b0[:n]
			q.len--
			q.bytes -= int64(it.size)
			dst = append(dst, it.v)
			popped++
			if q.b0dups {
				b0 = q.dropEarlier(b0, it.v)
			}
		}
		q.buckets[0] = b0
		q.minOK = false
	}
	if q.sinceTrim += popped; q.sinceTrim > q.len && q.sinceTrim > keepFloor {
		q.sinceTrim = 0
		q.trim() // once per turnover of the parked set
	}
	if q.len == 0 {
		q.shrink()
	}
	return dst
}

// release releases records at or below limit, in order, in whole buckets:
// bucket 0 (its records are at last); then, while the lowest bucket's least
// key is at or below limit, either all of it (its greatest key is too; last
// becomes that key) or, when limit is at least a quarter of the way into
// its keys, the part at or below limit, the rest filed again below it
// relative to last = limit+1. It leaves a bucket of which little is due to
// PopUntil's step-by-step release (settle). Every record left
// is above limit, and so is every later push the engine makes, so a record
// moves down a bucket only when the watermark comes within its bucket's
// span, and the released ones are sorted once (radixSort), not filed down
// level by level.
func (q *Queue[V]) release(limit uint64, dst []V) []V {
	if b0 := q.buckets[0]; len(b0) > 0 {
		if q.last > limit {
			return dst
		}
		q.sort0()
		dst = q.emit(b0, q.b0dups, dst)
		clear(b0)
		q.buckets[0] = b0[:0]
	}
	for q.mask != 0 {
		k := bits.TrailingZeros64(q.mask) + 1
		if q.bmin[k] > limit {
			break
		}
		if q.bmax[k] > limit && limit-q.bmin[k] < (q.bmax[k]-q.bmin[k])/4 {
			break // little of it is due: PopUntil files it down step by step
		}
		b := q.buckets[k]
		q.mask &^= 1 << (k - 1)
		if q.bmax[k] <= limit {
			dst = q.emitSorted(b, k, dst)
			clear(b)
			q.buckets[k] = b[:0]
			q.last = q.bmax[k]
			continue
		}
		// Split: the records above limit keep b's array while they are
		// filed again below k (nothing is filed into k meanwhile).
		rel, keep := q.split[:0], b[:0]
		for _, it := range b {
			if it.u <= limit {
				rel = append(rel, it)
			} else {
				keep = append(keep, it)
			}
		}
		q.last = limit + 1 // ≤ every record kept, and above every one released
		for _, it := range keep {
			q.put(it)
		}
		clear(b)
		q.buckets[k] = b[:0]
		dst = q.emitSorted(rel, k, dst)
		clear(rel)
		q.split = rel[:0]
	}
	return dst
}

// emitSorted appends the values of b, records of bucket k, in release order:
// a stable radix sort on the low k bits of the keys (the bits above are
// shared), then the tie-break within each event time.
func (q *Queue[V]) emitSorted(b []item[V], k int, dst []V) []V {
	s, spare := radixSort(b, q.scratch, k)
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j].u == s[i].u {
			j++
		}
		g := s[i:j]
		dst = q.emit(g, q.sortTies(g), dst)
		i = j
	}
	tmp := spare // the scratch array is whichever of the two is not b's
	if &s[0] != &b[0] {
		tmp = s
	}
	clear(tmp)
	q.scratch = tmp[:0]
	return dst
}

// emit appends the values of records of one event time, sorted in
// descending release order (sortTies), from the end; of several pushes of
// one Pos (dups) only the latest, and counts them all out.
func (q *Queue[V]) emit(g []item[V], dups bool, dst []V) []V {
	for n := len(g) - 1; n >= 0; n-- {
		dst = append(dst, g[n].v)
		q.len--
		q.bytes -= int64(g[n].size)
		if dups {
			for p := q.pos(g[n].v); n > 0 && q.pos(g[n-1].v) == p; n-- {
				q.len-- // an earlier push of the same Pos: dropped
				q.bytes -= int64(g[n-1].size)
			}
		}
	}
	return dst
}

// radixSort sorts b stably by the low bits of the keys, eight at a time,
// using tmp's memory (a short b by insertion, in place). It returns the sorted slice and the other one (each is
// b's array or tmp's).
func radixSort[V any](b, tmp []item[V], bits int) (sorted, other []item[V]) {
	if len(b) <= 32 { // an insertion sort beats the passes' 2 KiB counts
		for i := 1; i < len(b); i++ {
			for j := i; j > 0 && b[j].u < b[j-1].u; j-- {
				b[j], b[j-1] = b[j-1], b[j]
			}
		}
		return b, tmp[:0]
	}
	tmp = slices.Grow(tmp[:0], len(b))[:len(b)]
	for shift := 0; shift < bits && len(b) > 1; shift += 8 {
		var count [257]int
		for i := range b {
			count[int(byte(b[i].u>>shift))+1]++
		}
		if count[int(byte(b[0].u>>shift))+1] == len(b) {
			continue // every key has the same digit here
		}
		for d := 1; d < 257; d++ {
			count[d] += count[d-1]
		}
		for i := range b {
			d := byte(b[i].u >> shift)
			tmp[count[d]] = b[i]
			count[d]++
		}
		b, tmp = tmp, b
	}
	return b, tmp
}

// dropEarlier drops from the end of the sorted bucket 0 the earlier pushes of
// the Pos of v, which was just released.
func (q *Queue[V]) dropEarlier(b0 []item[V], v V) []item[V] {
	if len(b0) == 0 {
		return b0
	}
	p := q.pos(v)
	for n := len(b0) - 1; n >= 0 && q.pos(b0[n].v) == p; n-- {
		q.len--
		q.bytes -= int64(b0[n].size)
		b0[n] = item[V]{}
		b0 = b0[:n]
	}
	return b0
}

// trim gives bucket memory back to the garbage collector when the buckets
// hold more than their bound of capacity: an empty bucket drops its array, a
// mostly empty one moves to a smaller one.
func (q *Queue[V]) trim() {
	total := 0
	for k := range q.buckets {
		total += cap(q.buckets[k])
	}
	if total <= keepFactor*q.len+len(q.buckets)*keepFloor {
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
	q.len, q.bytes = 0, 0
	q.shrink()
}
