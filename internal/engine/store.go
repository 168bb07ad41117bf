package engine

import (
	"github.com/signalbox/signalbox/internal/prefetch"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

type memStore struct {
	q *timers.Queue[*record.Record]
	// buf[next:] are records the queue released that Release has not yet
	// passed on (its max was reached): the next Release passes them first.
	buf  []*record.Record
	next int
	// values: the engine reads released values itself (a Process, a
	// where, a window: New sets it), so Release asks for the first lines
	// of what it reads of each (readAtRelease) too, ahead of the record
	// being emitted.
	values bool
	// ahead, when set, is told each chunk Release is about to pass on,
	// recs[:n], and what follows it (the engine's evaluation ahead,
	// ahead.go).
	ahead func(recs []*record.Record, n int)
}

// readAtRelease is the bytes of r a release reads first: the value as
// decoded or processed ahead (record.Record.DecodedValue: a Process's
// result, or an Avro value's JSON) when there is one, else the value.
func readAtRelease(r *record.Record) []byte {
	if r.DecodedValue != nil {
		return r.DecodedValue
	}
	return r.Value
}

func newMemStore() *memStore { return &memStore{q: timers.NewQueue(posOf)} }

// posOf is a record's place in the release order: the Pos the engine parks
// it at (releaseAt, then the tie-break).
func posOf(r *record.Record) timers.Pos {
	return timers.Pos{EventTime: releaseAt(r), Key: r.OrderKey, Input: r.Topic, Partition: r.Partition, Offset: r.Offset}
}

// releaseAt is the event time a parked record is released at: its own, or,
// for a record parked late (late by the data, ingest.go's late), just after
// its partition's mark by the data when it was read, which is its event
// time plus its lateness (parkedAt). The record keeps its event time.
func releaseAt(r *record.Record) int64 {
	if r.Late {
		return r.EventTime + r.LateBy + 1
	}
	return r.EventTime
}

// Park parks r; p is posOf(r), which the queue reads from r itself.
func (m *memStore) Park(_ timers.Pos, r *record.Record) error {
	m.q.PushAt(r, releaseAt(r), r.Size())
	return nil
}

// prefetchAhead is how many released records ahead of the one being
// emitted the release loop asks the CPU to load (internal/prefetch).
const prefetchAhead = 8

// Release takes everything due from the queue at once, in whole buckets
// (the queue's fast path, which a max would turn off), and passes on at
// most max of it; the rest goes first at the next call, which the engine
// makes with the same watermark (it finishes one release before the next).
func (m *memStore) Release(wm int64, max int, fn func(*record.Record) error) error {
	if m.next == len(m.buf) {
		m.buf, m.next = m.q.PopUntil(wm, 0, m.buf[:0]), 0
	}
	end := len(m.buf)
	if max > 0 {
		end = min(end, m.next+max)
	}
	if m.ahead != nil {
		m.ahead(m.buf[m.next:], end-m.next)
	}
	for i := m.next; i < end; i++ {
		if j := i + prefetchAhead; j < len(m.buf) {
			prefetch.Record(m.buf[j])
		}
		if j := i + prefetchAhead/2; m.values && j < len(m.buf) {
			prefetch.Bytes(readAtRelease(m.buf[j])) // its record's lines were asked for four records ago
		}
		r := m.buf[i]
		m.buf[i], m.next = nil, i+1
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Min, Len and Bytes count the records Release has not passed on yet as
// parked; Bytes does not count their bytes.
func (m *memStore) Min() (timers.Pos, bool) {
	if m.next < len(m.buf) {
		return posOf(m.buf[m.next]), true
	}
	return m.q.Min()
}

func (m *memStore) Len() int { return m.q.Len() + len(m.buf) - m.next }

func (m *memStore) Bytes() int64 { return m.q.Bytes() }

// MemStore is the default, in-memory Store: it refers to the parked
// records rather than copying them (Config.ParkRefs).
type MemStore = memStore

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return newMemStore() }

// PosOf is a record's place in the release order (design O1, L1).
func PosOf(r *record.Record) timers.Pos { return posOf(r) }
