package kafka

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"time"

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

// millisTime is a batch timestamp: a negative one (none) is the zero time.
func millisTime(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// records extracts the deliverable records of batches from p.pos on and
// moves p.pos past every complete batch, control and aborted batches
// included.
func (f *fetcher) records(p *partState, blk *fetchBlock, batches []kbatch.Batch) []record.Record {
	n := 0
	for i := range batches {
		n += len(batches[i].Records)
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
	for i := range batches {
		batch := &batches[i]
		last := batch.LastOffset()
		if last < p.pos {
			continue // a batch we already consumed (fetches return whole batches)
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
		default:
			recs = appendBatch(recs, p, batch)
		}
		p.pos = last + 1
	}
	return recs
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

func appendBatch(recs []record.Record, p *partState, batch *kbatch.Batch) []record.Record {
	base := millisTime(batch.FirstTimestamp) // CreateTime: plus each record's delta
	if batch.LogAppendTime {
		base = millisTime(batch.MaxTimestamp)
	}
	for i := range batch.Records {
		r := &batch.Records[i]
		off := batch.FirstOffset + int64(r.OffsetDelta)
		if off < p.pos {
			continue
		}
		ts := base
		if !batch.LogAppendTime {
			ts = base.Add(time.Duration(r.TimestampDelta) * time.Millisecond)
		}
		recs = append(recs, record.Record{
			Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: off,
			Key: r.Key, Value: r.Value, Timestamp: ts, Headers: r.Headers,
		})
	}
	return recs
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
