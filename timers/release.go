package timers

// Releasing: the step-by-step and the whole-bucket paths, and the sorts
// they use.

import (
	"math/bits"
	"slices"
)

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
		n := len(dst)
		q.buckets[0], dst = q.emit(q.buckets[0], q.b0dups, max-popped, dst)
		popped += len(dst) - n
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
// relative to last = limit+1, which every record left and every later push
// the engine makes are above. The records taken are sorted once
// (emitSorted) instead of being filed down level by level. It stops at a
// bucket of which little is due, which PopUntil then releases step by step
// (settle).
func (q *Queue[V]) release(limit uint64, dst []V) []V {
	if b0 := q.buckets[0]; len(b0) > 0 {
		if q.last > limit {
			return dst
		}
		q.sort0()
		q.buckets[0], dst = q.emit(b0, q.b0dups, 0, dst)
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
		rel, split := b, q.bmax[k] > limit
		if !split {
			q.last = q.bmax[k]
		} else {
			// The records above limit keep b's array while they are filed
			// again below k (nothing is filed into k meanwhile).
			keep := b[:0]
			rel = q.split[:0]
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
		}
		dst = q.emitSorted(rel, k, dst)
		clear(b)
		q.buckets[k] = b[:0]
		if split {
			clear(rel)
			q.split = rel[:0]
		}
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
		_, dst = q.emit(g, q.sortTies(g), 0, dst)
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

// emit appends from the end of g, records of one event time sorted in
// descending release order (sortTies), up to max values (all when max ≤ 0),
// and counts them out; of several pushes of one Pos (dups) only the latest
// is released, the earlier ones dropped with it. It clears what it takes and
// returns the rest of g.
func (q *Queue[V]) emit(g []item[V], dups bool, max int, dst []V) ([]item[V], []V) {
	take := func() item[V] {
		n := len(g) - 1
		it := g[n]
		g[n], g = item[V]{}, g[:n]
		q.len--
		q.bytes -= int64(it.size)
		return it
	}
	for k := 0; len(g) > 0 && (max <= 0 || k < max); k++ {
		it := take()
		dst = append(dst, it.v)
		if dups {
			for p := q.pos(it.v); len(g) > 0 && q.pos(g[len(g)-1].v) == p; {
				take() // an earlier push of the same Pos: dropped
			}
		}
	}
	return g, dst
}

// radixSort sorts b stably by the low bits of the keys, eight at a time,
// using tmp's memory (a short b by insertion, in place). It returns the
// sorted slice and the other one (each is b's array or tmp's).
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
