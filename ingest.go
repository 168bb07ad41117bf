package signalbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/watermark"
)

// errFiltered marks a record that the meta filter skipped.
var errFiltered = errors.New("filtered")

// prepare runs on the poller goroutine, off the engine's: the meta filter
// and the decoding of every record of f (event time, ordering key), so that
// the engine goroutine only parks and releases. It returns the records that
// were filtered (errFiltered) or did not decode (the dead-letter reason);
// nil when there are none, which is the common case. A record a
// ValueDecoder cannot decode yet starts a hold of its partition, and the
// records of a held partition join the hold (hold.go); the error is the
// context's, when it ends, or a fatal decoder error (retry.IsFatal).
func (p *Pipeline) prepare(ctx context.Context, f *record.Fetch, h *holds) (map[*record.Record]error, error) {
	var marks map[*record.Record]error
	h.forget(f)
	for i := range f.Partitions {
		pf := &f.Partitions[i]
		if h.absorb(pf) || len(pf.Records) == 0 {
			continue
		}
		dec := p.decoderFor(pf.Topic)
		for j := range pf.Records {
			rec := &pf.Records[j]
			err := p.prepareRecord(ctx, dec, rec)
			if err == nil {
				continue
			}
			var hold *holdError
			if errors.As(err, &hold) {
				h.start(pf, j, hold.err, time.Now()) // wall time: the hold's retry backoff (poll.go)
				break
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if retry.IsFatal(err) {
				return nil, err
			}
			if marks == nil {
				marks = make(map[*record.Record]error)
			}
			marks[rec] = err
		}
	}
	return marks, nil
}

// prepareRecord is prepare for one record: errFiltered, or decode's error.
// A decoded record's value is marked record.Record.ValueJSON here when a
// sink trusts the mark and decoding did not validate the value already.
func (p *Pipeline) prepareRecord(ctx context.Context, dec *decoder, rec *record.Record) error {
	if mf := p.cfg.metaFilter; mf != nil && !mf(rec) {
		return errFiltered
	}
	if err := dec.decode(ctx, rec); err != nil {
		return err
	}
	if p.markJSON && !dec.needsJSON && !dec.schemad() && rec.Value != nil {
		d := jsonfield.Scan(rec.Value, nil)
		rec.ValueJSON = d.Valid && !d.Multiline
	}
	return nil
}

// ingest takes one record from a fetch, already decoded by prepare (mark
// says if it was filtered or did not decode): skip what a restart found
// emitted, pass timeless records through, guard against event times from
// the future, flag late ones, park the rest.
func (c *core) ingest(ps *partState, rec *record.Record, mark error, now time.Time) error {
	c.stats.In++
	if mark != nil {
		if mark == errFiltered {
			c.stats.Filtered++
			return nil
		}
		return c.dead(rec, mark.Error())
	}
	byData := ps.dataMark(c.cfg.delay) // before rec raises the partition's newest event time
	reread := ps.restoring && ps.table == nil && rec.Offset < ps.restorePos && (rec.Timeless || parkedAt(rec.EventTime, byData) <= ps.restoreWM)
	if reread && (rec.Timeless || !c.windowsRestored()) {
		c.stats.Skipped++
		return nil
	}
	if f := c.cfg.filter; f != nil && !f(rec) {
		c.stats.Filtered++
		return nil
	}
	if t := c.cfg.transform; t != nil {
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
			" is more than max_future ("+c.cfg.maxFuture.String()+") ahead of the evidence clock: not used to advance time")
	}
	ps.fetchMax = max(ps.fetchMax, rec.EventTime) // observed once per answer (handle)
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
func (c *core) park(ps *partState, rec *record.Record) error {
	ps.offs.Add(rec.Offset)
	return c.store.Park(posOf(rec), rec)
}

// output puts rec, of ps, in the current out batch, with its key and value
// decoded for the sinks when its input has a ValueDecoder (renderOut).
func (c *core) output(ps *partState, rec *record.Record) error {
	if c.p.schemad {
		if ok, err := c.renderOut(ps.dec, rec); !ok || err != nil {
			return err
		}
	}
	if c.cfg.process != nil || c.cfg.routed() {
		if ok, err := c.process(rec); !ok || err != nil {
			return err
		}
		if len(c.cfg.windows) > 0 {
			if ok, err := c.windowsTake(ps, rec); !ok || err != nil {
				return err
			}
		}
		if c.cfg.routed() {
			c.cur.routes = append(c.cur.routes, c.route)
		}
	}
	// One copy, straight into the batch: append(records, *rec) copies the
	// 216-byte record to the stack first, as rec might alias the batch.
	n := len(c.cur.records)
	if n < cap(c.cur.records) {
		c.cur.records = c.cur.records[:n+1]
	} else {
		c.cur.records = append(c.cur.records, record.Record{})
	}
	c.cur.records[n] = *rec
	if c.cfg.inflightBytes > 0 {
		c.cur.bytes += rec.Size()
	}
	c.stats.Out++
	return nil
}

func (c *core) dead(rec *record.Record, reason string) error {
	if c.cfg.deadLetter == nil {
		return errNoDeadLetter(rec, reason)
	}
	c.cur.dead = append(c.cur.dead, deadLetter(rec, reason))
	c.stats.Dead++
	c.event(deadEvent(rec, reason))
	return nil
}

// The three pieces of sending a record to the dead-letter sink, shared by
// the engine (bad input, late, poison) and the sink goroutine (records a
// sink rejects).

// errNoDeadLetter is Run's error when rec must be dead-lettered and no
// dead-letter sink is configured.
func errNoDeadLetter(rec *record.Record, reason string) error {
	return fmt.Errorf("%w: %s/%d@%d: %s", ErrNoDeadLetter, rec.Topic, rec.Partition, rec.Offset, reason)
}

// deadLetter is the copy of rec that goes to the dead-letter sink: its
// reason in a record.ReasonHeader header, rec's headers untouched.
func deadLetter(rec *record.Record, reason string) record.Record {
	d := *rec
	d.DecodedKey, d.DecodedValue = nil, nil // the dead-letter sink keeps the original bytes
	d.Headers = append(d.Headers[:len(d.Headers):len(d.Headers)], record.Header{Key: record.ReasonHeader, Value: []byte(reason)})
	return d
}

func deadEvent(rec *record.Record, reason string) Event {
	return Event{Kind: EventDead, Partition: record.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}, Offset: rec.Offset, Reason: reason}
}
