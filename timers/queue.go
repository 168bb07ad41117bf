package timers

import (
	"github.com/google/btree"
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

// entry holds one parked record in the queue's slab.
type entry[V any] struct {
	pos  Pos
	val  V
	size int
}

// ref is what the btree orders: the event time inline, so that most
// comparisons never leave the node, and the record's index in the slab for
// the tie-break. At 16 bytes, a node's items fit in a few cache lines and
// inserting into or deleting from a node moves little memory.
type ref struct {
	t int64
	i int
}

// Queue is an in-memory timer queue of values of type V. It is not safe for
// concurrent use.
type Queue[V any] struct {
	tree *btree.BTreeG[ref]
	// slab holds the parked records in chunks of chunkLen, so that growing
	// it never copies what is parked; free lists the unused indices below
	// n, the number of indices ever handed out.
	slab  [][]entry[V]
	n     int
	free  []int
	bytes int64
}

// chunkLen is the number of records in one slab chunk.
const chunkLen = 1 << 10

// degree of the btree: with 16-byte items, 32 keeps a node within 1 KiB.
const degree = 32

// freeListSize is how many released btree nodes are kept for reuse. A node
// holds 31 to 63 records, so 256 nodes cover parking and releasing a batch of
// 4096 records (the engine's default batch) without allocating; btree's
// default of 32 nodes does not (invariant 4).
const freeListSize = 256

// keepChunks is how many slab chunks an emptied queue keeps for reuse; it
// gives the rest back to the garbage collector.
const keepChunks = 64

// NewQueue returns an empty queue.
func NewQueue[V any]() *Queue[V] {
	q := &Queue[V]{}
	less := func(a, b ref) bool {
		if a.t != b.t {
			return a.t < b.t
		}
		return a.i != b.i && lessTie(&q.at(a.i).pos, &q.at(b.i).pos)
	}
	q.tree = btree.NewWithFreeListG(degree, less, btree.NewFreeListG[ref](freeListSize))
	return q
}

// lessTie is Less for two positions at the same event time.
func lessTie(a, b *Pos) bool {
	if a.Key != b.Key {
		return a.Key < b.Key
	}
	if a.Input != b.Input {
		return a.Input < b.Input
	}
	if a.Partition != b.Partition {
		return a.Partition < b.Partition
	}
	return a.Offset < b.Offset
}

// Push parks v at p, accounting size bytes. It reports false when a record
// at p was already parked; the new value then replaces it (invariant 1).
func (q *Queue[V]) Push(p Pos, v V, size int) bool {
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
	*q.at(i) = entry[V]{pos: p, val: v, size: size}
	q.bytes += int64(size)
	old, replaced := q.tree.ReplaceOrInsert(ref{t: p.EventTime, i: i})
	if replaced {
		q.bytes -= int64(q.at(old.i).size)
		q.release(old.i)
	}
	return !replaced
}

// at returns the slab entry of index i.
func (q *Queue[V]) at(i int) *entry[V] { return &q.slab[i/chunkLen][i%chunkLen] }

// release returns slab index i to the free list, dropping its value so that
// the queue does not keep it reachable.
func (q *Queue[V]) release(i int) {
	*q.at(i) = entry[V]{}
	q.free = append(q.free, i)
}

// reset forgets every slab index, keeping at most keepChunks chunks, which
// must already be cleared.
func (q *Queue[V]) reset() {
	if len(q.slab) > keepChunks {
		clear(q.slab[keepChunks:])
		q.slab = q.slab[:keepChunks]
	}
	q.n, q.free = 0, q.free[:0]
	if cap(q.free) > keepChunks*chunkLen {
		q.free = nil
	}
}

// PopUntil removes every value with event time ≤ watermark, in order, and
// appends it to dst (invariant 2). At most max values are popped when max > 0.
func (q *Queue[V]) PopUntil(watermark int64, max int, dst []V) []V {
	for n := 0; max <= 0 || n < max; n++ {
		r, ok := q.tree.Min()
		if !ok || r.t > watermark {
			break
		}
		q.tree.DeleteMin()
		e := q.at(r.i)
		q.bytes -= int64(e.size)
		dst = append(dst, e.val)
		q.release(r.i)
	}
	if q.tree.Len() == 0 && q.n > keepChunks*chunkLen {
		q.reset() // released entries are cleared already
	}
	return dst
}

// Min returns the first position in release order.
func (q *Queue[V]) Min() (Pos, bool) {
	r, ok := q.tree.Min()
	if !ok {
		return Pos{}, false
	}
	return q.at(r.i).pos, true
}

// Len is the number of parked records.
func (q *Queue[V]) Len() int { return q.tree.Len() }

// Bytes is the accounted size of the parked records.
func (q *Queue[V]) Bytes() int64 { return q.bytes }

// Ascend calls fn for every parked record in release order until fn returns
// false. The queue must not be modified during the walk.
func (q *Queue[V]) Ascend(fn func(p Pos, v V) bool) {
	q.tree.Ascend(func(r ref) bool {
		e := q.at(r.i)
		return fn(e.pos, e.val)
	})
}

// Clear removes everything, keeping the nodes for reuse.
func (q *Queue[V]) Clear() {
	q.tree.Clear(true)
	for _, c := range q.slab {
		clear(c)
	}
	q.reset()
	q.bytes = 0
}
