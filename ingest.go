package signalbox

import (
	"context"
	"errors"
	"time"

	"github.com/signalbox/signalbox/internal/decode"
	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// prepare runs on the poller goroutine, off the engine's: the meta filter
// and the decoding of every record of f (event time, ordering key), so that
// the engine goroutine only parks and releases. It returns the records that
// were filtered (engine.ErrFiltered) or did not decode (the dead-letter reason);
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
		dec := p.decoders.For(pf.Topic)
		for j := range pf.Records {
			rec := &pf.Records[j]
			err := p.prepareRecord(ctx, dec, rec)
			if err == nil {
				continue
			}
			var hold *decode.HoldError
			if errors.As(err, &hold) {
				h.start(pf, j, hold.Unwrap(), time.Now()) // wall time: the hold's retry backoff (poll.go)
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

// prepareRecord is prepare for one record: engine.ErrFiltered, or decode's error.
// A decoded record's value is marked record.Record.ValueJSON here when a
// sink trusts the mark and decoding did not validate the value already.
func (p *Pipeline) prepareRecord(ctx context.Context, dec *decode.Decoder, rec *record.Record) error {
	if mf := p.cfg.metaFilter; mf != nil && !mf(rec) {
		return engine.ErrFiltered
	}
	if err := dec.Decode(ctx, rec); err != nil {
		return err
	}
	if p.markJSON && !dec.NeedsJSON() && !dec.Schemad() && rec.Value != nil {
		d := jsonfield.Scan(rec.Value, nil)
		rec.ValueJSON = d.Valid && !d.Multiline
	}
	return nil
}

// The three pieces of sending a record to the dead-letter sink, shared by
// the engine (bad input, late, poison) and the sink goroutine (records a
// sink rejects).
