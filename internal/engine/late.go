package engine

// Late records (design L1-L3): the mark by the data, where a record late
// by the data is parked, and what the late policy does with a late record.

import (
	"strconv"
	"time"

	"github.com/signalbox/signalbox/record"
)

// late takes a late record (design L1): late by the data when its event
// time is at or below byData, its partition's mark by the data before it
// (dataMark); late by timing when it is only at or below mark, the
// release mark it met (its task's, or its partition's restored one). It is
// late by max(byData, mark) − its event time, and flagged so whatever the
// policy. Under LateEmit a record late by the data is parked just after
// byData (posOf, parkedAt), which the release mark cannot have reached
// while its partition holds the watermark: where it lands in the output is
// then a function of the data too. One that mark already passed (late by
// timing, or a restored mark above byData) is released at once.
func (c *Engine) late(ps *partState, rec *record.Record, byData, mark int64) error {
	at := max(byData, mark)
	lateBy := at - rec.EventTime
	ps.late.add(lateBy, c.cfg.Late)
	c.event(Event{Kind: EventLate, Partition: ps.tp, Offset: rec.Offset, LateBy: lateBy, Watermark: at})
	rec.Late, rec.LateBy = true, lateBy // the dead letter says so too
	switch c.cfg.Late {
	case LateDrop:
		return nil
	case LateDeadLetter:
		return c.dead(rec, "late by "+strconv.FormatInt(lateBy, 10)+"ms")
	}
	if mark <= byData || c.rebuilds(ps) {
		// At byData + 1 (at == byData); or, while the windows rebuild
		// after a restart, just after the mark, as it would be released
		// at once: the release is held below the mark meanwhile.
		return c.park(ps, rec)
	}
	return c.output(ps, rec)
}

// dataMark is ps's mark by the data: a record at or below it, more than
// the delay behind the partition's newest event time so far (poison
// records excluded), is late by the data (design L1), whatever the fetch
// timing. It is the partition's contribution to the watermark
// (contribution: newest − delay − 1 ms), which the watermark cannot pass
// while the partition holds it; watermark.MinTime before its first record.
func (ps *partState) dataMark(delay time.Duration) int64 { return ps.contribution(delay) }

// parkedAt is where a record of event time et, read when its partition's
// mark by the data was byData, is released (posOf): at et, or, late by the
// data, just after byData.
func parkedAt(et, byData int64) int64 {
	if et <= byData {
		return byData + 1
	}
	return et
}
