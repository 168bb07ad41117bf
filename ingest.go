package signalbox

import (
	"fmt"
	"strconv"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// ingest takes one record from a fetch: filter, decode, skip what a restart
// found emitted, pass timeless records through, flag late ones, park the rest.
func (r *run) ingest(ps *partState, rec *record.Record, now time.Time) error {
	r.stats.In++
	if f := r.cfg.metaFilter; f != nil && !f(rec) {
		r.stats.Filtered++
		return nil
	}
	if err := ps.dec.decode(rec); err != nil {
		return r.dead(rec, err.Error())
	}
	if ps.restoring && rec.Offset < ps.restorePos && (rec.Timeless || rec.EventTime <= ps.restoreWM) {
		r.stats.Skipped++
		return nil
	}
	if f := r.cfg.filter; f != nil && !f(rec) {
		r.stats.Filtered++
		return nil
	}
	if t := r.cfg.transform; t != nil {
		if err := t(rec); err != nil {
			return r.dead(rec, "transform: "+err.Error())
		}
	}
	if rec.Timeless {
		r.stats.Timeless++
		r.emitNow(rec)
		return nil
	}
	ps.task.strat.Observe(ps.wid, rec.EventTime, now)
	if rec.EventTime <= ps.task.rel {
		return r.late(ps, rec)
	}
	ps.offs.Add(rec.Offset)
	return r.store.Park(timers.Pos{EventTime: rec.EventTime, Key: rec.OrderKey, Input: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}, rec)
}

func (r *run) late(ps *partState, rec *record.Record) error {
	lateBy := ps.task.rel - rec.EventTime
	ps.late.add(lateBy, r.cfg.late)
	r.emit(Event{Kind: EventLate, Partition: ps.tp, Offset: rec.Offset, LateBy: lateBy, Watermark: ps.task.rel})
	switch r.cfg.late {
	case LateDrop:
		return nil
	case LateDeadLetter:
		return r.dead(rec, "late by "+strconv.FormatInt(lateBy, 10)+"ms")
	}
	rec.Late, rec.LateBy = true, lateBy
	r.emitNow(rec)
	return nil
}

func (r *run) emitNow(rec *record.Record) {
	r.cur.records = append(r.cur.records, *rec)
	r.stats.Out++
}

func (r *run) dead(rec *record.Record, reason string) error {
	if r.cfg.deadLetter == nil {
		return fmt.Errorf("%w: %s/%d@%d: %s", ErrNoDeadLetter, rec.Topic, rec.Partition, rec.Offset, reason)
	}
	d := *rec
	d.Headers = append(d.Headers[:len(d.Headers):len(d.Headers)], record.Header{Key: record.ReasonHeader, Value: []byte(reason)})
	r.cur.dead = append(r.cur.dead, d)
	r.stats.Dead++
	r.emit(Event{Kind: EventDead, Partition: record.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}, Offset: rec.Offset, Reason: reason})
	return nil
}
