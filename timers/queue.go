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

type item[V any] struct {
	pos  Pos
	val  V
	size int
}

// Queue is an in-memory timer queue of values of type V. It is not safe for
// concurrent use.
type Queue[V any] struct {
	tree  *btree.BTreeG[item[V]]
	bytes int64
}

// degree of the btree: 32 keeps nodes within a few cache lines for Pos items.
const degree = 32

// freeListSize is how many released btree nodes are kept for reuse. A node
// holds 31 to 63 records, so 256 nodes cover parking and releasing a batch of
// 4096 records (the engine's default batch) without allocating; btree's
// default of 32 nodes does not (invariant 4).
const freeListSize = 256

// NewQueue returns an empty queue.
func NewQueue[V any]() *Queue[V] {
	less := func(a, b item[V]) bool { return Less(a.pos, b.pos) }
	fl := btree.NewFreeListG[item[V]](freeListSize)
	return &Queue[V]{tree: btree.NewWithFreeListG(degree, less, fl)}
}

// Push parks v at p, accounting size bytes. It reports false when a record
// at p was already parked; the new value then replaces it (invariant 1).
func (q *Queue[V]) Push(p Pos, v V, size int) bool {
	old, replaced := q.tree.ReplaceOrInsert(item[V]{pos: p, val: v, size: size})
	if replaced {
		q.bytes -= int64(old.size)
	}
	q.bytes += int64(size)
	return !replaced
}

// PopUntil removes every value with event time ≤ watermark, in order, and
// appends it to dst (invariant 2). At most max values are popped when max > 0.
func (q *Queue[V]) PopUntil(watermark int64, max int, dst []V) []V {
	for n := 0; max <= 0 || n < max; n++ {
		it, ok := q.tree.Min()
		if !ok || it.pos.EventTime > watermark {
			break
		}
		q.tree.DeleteMin()
		q.bytes -= int64(it.size)
		dst = append(dst, it.val)
	}
	return dst
}

// Min returns the first position in release order.
func (q *Queue[V]) Min() (Pos, bool) {
	it, ok := q.tree.Min()
	return it.pos, ok
}

// Len is the number of parked records.
func (q *Queue[V]) Len() int { return q.tree.Len() }

// Bytes is the accounted size of the parked records.
func (q *Queue[V]) Bytes() int64 { return q.bytes }

// Ascend calls fn for every parked record in release order until fn returns
// false. The queue must not be modified during the walk.
func (q *Queue[V]) Ascend(fn func(p Pos, v V) bool) {
	q.tree.Ascend(func(it item[V]) bool { return fn(it.pos, it.val) })
}

// Clear removes everything, keeping the nodes for reuse.
func (q *Queue[V]) Clear() {
	q.tree.Clear(true)
	q.bytes = 0
}
