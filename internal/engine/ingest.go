package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// ErrFiltered marks a record that the meta filter skipped (TakeFetch's
// marks).
var ErrFiltered = errors.New("filtered")

// ingest takes one record from a fetch, already decoded by prepare (mark
// says if it was filtered or did not decode): skip what a restart found
// emitted, pass timeless records through, guard against event times from
// the future, flag late ones, park the rest.
func (c *Engine) ingest(ps *partState, rec *record.Record, mark error, now time.Time) error {
	c.stats.In++
	if mark != nil {
		if mark == ErrFiltered {
			c.stats.Filtered++
			return nil
		}
		return c.dead(rec, mark.Error())
	}
	byData := ps.dataMark(c.cfg.Delay) // before rec raises the partition's newest event time
	reread := ps.restoring && ps.table == nil && rec.Offset < ps.restorePos && (rec.Timeless || parkedAt(rec.EventTime, byData) <= ps.restoreWM)
	if reread && (rec.Timeless || !c.rebuilds(ps)) {
		c.stats.Skipped++
		return nil
	}
	if f := c.cfg.Filter; f != nil && !f(rec) {
		c.stats.Filtered++
		return nil
	}
	if t := c.cfg.Transform; t != nil {
		rec.ValueJSON = false // the transform may change Value (record.Record.ValueJSON)
		if err := t(rec); err != nil {
			if reread {
				return c.skipReread()
			}
			return c.dead(rec, "transform: "+err.Error())
		}
	}
	if rec.Timeless {
		c.stats.Timeless++
		return c.output(ps, rec)
	}
	if rec.EventTime > c.future {
		if reread {
			return c.skipReread()
		}
		c.stats.Future++
		return c.dead(rec, "event time "+time.UnixMilli(rec.EventTime).UTC().Format(time.RFC3339Nano)+
			" is more than max_future ("+c.cfg.MaxFuture.String()+") ahead of the evidence clock: not used to advance time")
	}
	ps.fetchMax = max(ps.fetchMax, rec.EventTime) // observed once per answer (take)
	if rec.EventTime > ps.maxET {
		if ps.maxET == watermark.MinTime {
			ps.firstET = rec.EventTime
		}
		ps.maxET = rec.EventTime
	}
	if ps.table != nil {
		return c.version(ps, rec, byData) // late by the data or not; never by timing (table.go)
	}
	if reread {
		return c.parkReread(ps, rec, byData)
	}
	if rel := max(ps.task.rel, ps.lateAt); rec.EventTime <= byData || rec.EventTime <= rel {
		return c.late(ps, rec, byData, rel)
	}
	return c.park(ps, rec)
}

// park parks rec, of ps, at posOf(rec).
func (c *Engine) park(ps *partState, rec *record.Record) error {
	ps.offs.Add(rec.Offset)
	return c.store.Park(posOf(rec), rec)
}

// output puts rec, of ps, in the current out batch, with its key and value
// decoded for the sinks when its input is schema'd (render).
func (c *Engine) output(ps *partState, rec *record.Record) error {
	if ok, err := c.render(ps, rec); !ok || err != nil {
		return err
	}
	if c.cfg.Process != nil || c.routed() {
		if ok, err := c.process(rec); !ok || err != nil {
			return err
		}
		if len(c.cfg.Windows) > 0 {
			if ok, err := c.windowsTake(ps, rec); !ok || err != nil {
				return err
			}
		}
		if c.routed() {
			c.cur.Routes = append(c.cur.Routes, c.route)
		}
	}
	// One copy, straight into the batch: append(records, *rec) copies the
	// 216-byte record to the stack first, as rec might alias the batch.
	n := len(c.cur.Records)
	if n < cap(c.cur.Records) {
		c.cur.Records = c.cur.Records[:n+1]
	} else {
		c.cur.Records = append(c.cur.Records, record.Record{})
	}
	c.cur.Records[n] = *rec
	if c.cfg.InflightBytes > 0 {
		c.cur.Bytes += rec.Size()
	}
	c.stats.Out++
	return nil
}

// render decodes rec, of ps, for the sinks when its input is schema'd
// (Config.Render): ok is false when rec was dead-lettered instead.
func (c *Engine) render(ps *partState, rec *record.Record) (ok bool, err error) {
	if ps.render == nil {
		return true, nil
	}
	reason, err := ps.render(rec)
	switch {
	case err != nil:
		return false, err
	case reason != "":
		return false, c.dead(rec, reason)
	}
	return true, nil
}

// dead sends rec to the dead-letter sink with its reason; without one, it
// is the run's error (ErrNoDeadLetter).
func (c *Engine) dead(rec *record.Record, reason string) error {
	if !c.cfg.DeadLetter {
		return NoDeadLetter(rec, reason)
	}
	c.cur.Dead = append(c.cur.Dead, DeadLetter(rec, reason))
	c.stats.Dead++
	c.event(DeadEvent(rec, reason))
	return nil
}

// ErrNoDeadLetter surfaces from a step when a record must go to the
// dead-letter sink but none is configured (Config.DeadLetter).
var ErrNoDeadLetter = errors.New("signalbox: record rejected and no dead-letter sink configured")

// NoDeadLetter is the error of a record that must be dead-lettered when
// there is no dead-letter sink.
func NoDeadLetter(rec *record.Record, reason string) error {
	return fmt.Errorf("%w: %s/%d@%d: %s", ErrNoDeadLetter, rec.Topic, rec.Partition, rec.Offset, reason)
}

// DeadLetter is the copy of rec that goes to the dead-letter sink: its
// reason in a record.ReasonHeader header, rec's headers untouched.
func DeadLetter(rec *record.Record, reason string) record.Record {
	d := *rec
	d.DecodedKey, d.DecodedValue = nil, nil // the dead-letter sink keeps the original bytes
	d.Headers = append(d.Headers[:len(d.Headers):len(d.Headers)], record.Header{Key: record.ReasonHeader, Value: []byte(reason)})
	return d
}

// DeadEvent is the event of a dead-lettered record.
func DeadEvent(rec *record.Record, reason string) Event {
	return Event{Kind: EventDead, Partition: record.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}, Offset: rec.Offset, Reason: reason}
}
