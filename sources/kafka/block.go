package kafka

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/signalbox/signalbox/internal/kbatch"
	"github.com/signalbox/signalbox/record"
)

// fetchBlock is one partition's answer to a fetch: its record batches as
// the raw bytes of the response, decoded by the fetcher's kbatch.Decoder
// when parsed.
type fetchBlock struct {
	err     error // nil, or the partition's kerr error
	hwm     int64
	lso     int64
	aborted []abortedTxn
	raw     []byte
}

// abortedTxn is one entry of a fetch answer's aborted transactions.
type abortedTxn struct {
	producerID  int64
	firstOffset int64
}

// records extracts the deliverable records of batches, as Scan returned
// them with scanErr, from p.pos on, and moves p.pos past every complete
// batch, control and aborted batches included. Every batch's records are
// decoded, delivered or not, so that a malformed one fails the answer as
// Decode would: the first error of the batches in order, else scanErr,
// and then p.pos does not move and no records are returned.
func (f *fetcher) records(p *partState, blk *fetchBlock, batches []kbatch.Batch, scanErr error) ([]record.Record, error) {
	n := 0
	for i := range batches {
		n += batches[i].Len()
	}
	var recs []record.Record
	if n > 0 {
		recs = f.s.pool.get(n)
	}
	aborted := blk.aborted
	if len(aborted) > 1 {
		slices.SortFunc(aborted, func(a, b abortedTxn) int { return cmp.Compare(a.firstOffset, b.firstOffset) })
	}
	var abortedPIDs map[int64]struct{}
	readCommitted := f.s.cfg.readCommitted()
	pos := p.pos
	for i := range batches {
		batch := &batches[i]
		last := batch.LastOffset()
		var err error
		if last < pos {
			// A batch we already consumed (fetches return whole batches).
			if err = batch.Check(); err != nil {
				return f.dropRecords(recs, err)
			}
			continue
		}
		for len(aborted) > 0 && aborted[0].firstOffset <= last {
			if abortedPIDs == nil {
				abortedPIDs = make(map[int64]struct{})
			}
			abortedPIDs[aborted[0].producerID] = struct{}{}
			aborted = aborted[1:]
		}
		switch {
		case batch.Control:
			if isAbortMarker(batch) {
				delete(abortedPIDs, batch.ProducerID)
			}
		case readCommitted && batch.Transactional && isAborted(abortedPIDs, batch.ProducerID):
			err = batch.Check()
		default:
			recs, err = batch.AppendTo(recs, p.tp.Topic, p.tp.Partition, pos)
		}
		if err != nil {
			return f.dropRecords(recs, err)
		}
		pos = last + 1
	}
	if scanErr != nil {
		return f.dropRecords(recs, scanErr)
	}
	p.pos = pos
	return recs, nil
}

// dropRecords gives recs, an answer's array that is not delivered, back to
// the pool, and returns err.
func (f *fetcher) dropRecords(recs []record.Record, err error) ([]record.Record, error) {
	if cap(recs) > 0 {
		f.s.pool.put(recs)
	}
	return nil, err
}

func isAborted(pids map[int64]struct{}, pid int64) bool {
	_, ok := pids[pid]
	return ok
}

// isAbortMarker reports whether a control batch holds an ABORT marker: a
// control record's key is version int16, type int16 (0 abort, 1 commit).
func isAbortMarker(batch *kbatch.Batch) bool {
	if len(batch.Records) == 0 {
		return false
	}
	k := batch.Records[0].Key
	return len(k) >= 4 && k[2] == 0 && k[3] == 0
}

// largestBatch is the size in bytes of raw's largest record batch, read
// from the batches' headers (base offset, then length): a trailing batch
// cut short counts at the length its header gives, when that much of it
// arrived. A broker answers whole batches only, so a partition's byte limit
// below this cannot carry its next batch.
func largestBatch(raw []byte) int32 {
	var largest int64
	for len(raw) >= 12 {
		n := 12 + int64(binary.BigEndian.Uint32(raw[8:]))
		largest = max(largest, n)
		if n > int64(len(raw)) {
			break
		}
		raw = raw[n:]
	}
	return int32(min(largest, math.MaxInt32))
}
