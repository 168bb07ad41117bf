package kafka

import (
	"sync"

	"github.com/signalbox/signalbox/record"
)

// recordPool keeps the record arrays the engine gave back (Recycle) for the
// fetchers to fill again, so that a replay does not allocate one array per
// partition answer. It is safe for concurrent use: the engine puts, the
// fetchers get.
//
// Only the arrays are reused: the records' bytes (keys, values, headers)
// alias fetch responses and decompressed batches that are never reused
// (signalbox.Source). An array is cleared when given back, so a pooled
// array keeps nothing else reachable; the pool holds at most poolArrays
// arrays and room for poolRecords records in all. An array is usually
// about PartitionMaxRecords records (a quarter more when new), but a
// broker answers at least one whole producer batch: with 1 MiB batches of
// small records an array holds thousands, and poolArrays of them would
// keep more memory idle than the parked records take.
type recordPool struct {
	mu   sync.Mutex
	free [][]record.Record
	room int // the pooled arrays' capacity, in records
}

// poolArrays is how many arrays the pool keeps: a replay's release step
// gives back many arrays at once and the fetchers take them later, so the
// pool must hold a burst (at 64, a 4M-record replay dropped about one array
// in eight and allocated as many afresh).
const poolArrays = 128

// poolRecords bounds the pooled arrays' capacity in all: poolArrays
// arrays of DefaultPartitionMaxRecords records with a quarter to spare
// (about 25 MiB of 216-byte records).
const poolRecords = poolArrays * DefaultPartitionMaxRecords * 5 / 4

// minPooled is the least answer size (in records) that gets a pooled array.
const minPooled = 64

// put keeps recs for reuse. A full pool lets its oldest array go: the
// arrays that fit the answers are the recent ones (answers' sizes follow
// the fetcher's estimate of bytes per record), and arrays that no longer fit
// must not keep the pool full for good.
func (p *recordPool) put(recs []record.Record) {
	if cap(recs) > poolRecords {
		return
	}
	clear(recs) // what the records point to is not kept reachable
	p.mu.Lock()
	for len(p.free) == poolArrays || p.room+cap(recs) > poolRecords {
		p.room -= cap(p.free[0])
		copy(p.free, p.free[1:])
		p.free[len(p.free)-1] = nil
		p.free = p.free[:len(p.free)-1]
	}
	p.free = append(p.free, recs[:0])
	p.room += cap(recs)
	p.mu.Unlock()
}

// get returns an empty array with room for n records: the most recently
// pooled one that is large enough and at most twice that, else a new one
// with a quarter to spare, so that it fits the next answers too. An answer
// of fewer than minPooled records (live traffic) gets an array of its own
// size: a large one would be held, mostly empty, while the records wait
// for the watermark.
func (p *recordPool) get(n int) []record.Record {
	if n < minPooled {
		return make([]record.Record, 0, n)
	}
	p.mu.Lock()
	for i := len(p.free) - 1; i >= 0; i-- {
		if recs := p.free[i]; cap(recs) >= n && cap(recs) <= 2*n {
			last := len(p.free) - 1
			p.free[i] = p.free[last]
			p.free[last] = nil
			p.free = p.free[:last]
			p.room -= cap(recs)
			p.mu.Unlock()
			return recs
		}
	}
	p.mu.Unlock()
	return make([]record.Record, 0, n+n/4)
}

// Recycle implements signalbox.Recycler: recs, an array of records this
// source delivered, is no longer referred to by the engine, and a fetcher
// may fill it again.
func (s *Source) Recycle(recs []record.Record) { s.pool.put(recs) }
