package durable

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/signalbox/signalbox/keyed"
)

// Timers is the TimerQueue of a Store: the earliest timers in memory (a
// keyed.MemTimers of at most limit bytes), the others in pebble. Memory
// and pebble hold disjoint sets; pmin is at or below every timer in
// pebble (exactly the least one after a read), so that Due reads pebble
// only when its least timer may come first.
type Timers struct {
	db     *pebble.DB
	err    *error  // the Store's
	filter *filter // the Store's
	mem    *keyed.MemTimers
	bytes  int64 // of mem (timerCost)
	limit  int64
	pn     int // timers in pebble
	pmin   keyed.Timer
	buf    []byte
	// readAhead is how many timers read moves from pebble to memory.
	readAhead int
}

// timerCost is what a timer costs in memory: the heap's entry, the live
// map's, and the key.
func timerCost(t keyed.Timer) int64 { return 80 + int64(len(t.Key)) }

// Err is the first error of the Store.
func (q *Timers) Err() error { return *q.err }

func (q *Timers) error(err error) {
	if *q.err == nil {
		*q.err = fmt.Errorf("keyed/durable: timers: %w", err)
	}
}

// Len is the number of timers set.
func (q *Timers) Len() int { return q.mem.Len() + q.pn }

// mayBeOnDisk reports whether pebble may hold t.
func (q *Timers) mayBeOnDisk(t keyed.Timer) bool { return q.pn > 0 && !t.Less(q.pmin) }

// onDisk reports whether pebble holds t.
func (q *Timers) onDisk(t keyed.Timer) bool {
	if !q.mayBeOnDisk(t) || *q.err != nil {
		return false
	}
	q.buf = timerKey(q.buf[:0], t)
	if !q.filter.mayHave(q.buf) {
		return false
	}
	_, closer, err := q.db.Get(q.buf)
	if err == nil {
		_ = closer.Close()
		return true
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		q.error(err)
	}
	return false
}

// Set adds t.
func (q *Timers) Set(t keyed.Timer) {
	if *q.err != nil || q.mem.Has(t) || q.onDisk(t) {
		return
	}
	q.mem.Set(t)
	q.bytes += timerCost(t)
	if q.bytes > q.limit {
		q.spill()
	}
}

// Delete removes t.
func (q *Timers) Delete(t keyed.Timer) {
	if q.mem.Has(t) {
		q.mem.Delete(t)
		q.bytes -= timerCost(t)
		return
	}
	if q.onDisk(t) {
		if err := q.db.Delete(q.buf, pebble.NoSync); err != nil {
			q.error(err)
			return
		}
		q.filter.deleted()
		q.pn--
	}
}

// Due removes and returns the least timer at or below now: from memory,
// unless pebble may hold one before memory's first (then it reads).
func (q *Timers) Due(now int64) (keyed.Timer, bool) {
	for *q.err == nil {
		if q.pn > 0 && q.pmin.At <= now {
			if m, ok := q.mem.Peek(); !ok || q.pmin.Less(m) {
				q.read()
				continue
			}
		}
		t, ok := q.mem.Due(now)
		if ok {
			q.bytes -= timerCost(t)
		}
		return t, ok
	}
	return keyed.Timer{}, false
}

// spill moves the later half of the timers in memory to pebble.
func (q *Timers) spill() {
	ts := q.mem.TakeLast(max(q.mem.Len()/2, 1))
	b := q.db.NewBatch()
	defer func() { _ = b.Close() }()
	for _, t := range ts {
		q.bytes -= timerCost(t)
		q.buf = timerKey(q.buf[:0], t)
		if err := b.Set(q.buf, nil, nil); err != nil {
			q.error(err)
			return
		}
		q.filter.add(q.buf)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		q.error(err)
		return
	}
	if err := q.filter.maybeRebuild(); err != nil {
		q.error(err)
		return
	}
	if q.pn == 0 || ts[0].Less(q.pmin) {
		q.pmin = ts[0]
	}
	q.pn += len(ts)
}

// read moves the least readAhead timers in pebble to memory, and sets
// pmin to the least one left.
func (q *Timers) read() {
	// From pmin, not the prefix: the timers read before are deleted, and
	// an iterator would step over each of their tombstones.
	it, err := q.db.NewIter(&pebble.IterOptions{LowerBound: timerKey(nil, q.pmin), UpperBound: []byte{prefixTimer + 1}})
	if err != nil {
		q.error(err)
		return
	}
	defer func() { _ = it.Close() }()
	b := q.db.NewBatch()
	defer func() { _ = b.Close() }()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		t := decodeTimer(it.Key())
		if n == q.readAhead {
			q.pmin = t
			break
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			q.error(err)
			return
		}
		q.filter.deleted()
		q.mem.Set(t)
		q.bytes += timerCost(t)
		n++
	}
	if err := it.Error(); err != nil {
		q.error(err)
		return
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		q.error(err)
		return
	}
	q.pn -= n
	if n < q.readAhead && q.pn != 0 {
		q.error(errors.New("timers in pebble: fewer than counted"))
	}
}

func decodeTimer(k []byte) keyed.Timer {
	return keyed.Timer{At: int64(binary.BigEndian.Uint64(k[1:9]) ^ 1<<63), Key: string(k[9:])}
}
