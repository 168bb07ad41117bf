package process

// A chain of Steps run as its records are decoded (docs/design.md K11):
// Prepare keeps what it found in the record, Release gives it back at
// release.

import (
	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
)

// Early is a Chain split in two (invariant 12 of doc.go). Prepare runs it
// on a record of a JSON input as the record is decoded, on the value the
// decoder just scanned, and keeps the result in the record; Release, the
// run's Process at release, gives that result without running anything,
// or runs the chain when the record holds none. So the result is the
// chain's, whether Prepare ran, failed, or its result was lost.
type Early struct {
	steps []Steps
	chain signalbox.Process
}

// NewEarly is steps' chain as an Early; ok is false when one of them
// reads what is known only at release (Steps.NeedsRelease): it must run
// at release (Chain).
func NewEarly(steps ...Steps) (e Early, ok bool) {
	for _, s := range steps {
		if s.NeedsRelease() {
			return Early{}, false
		}
	}
	return Early{steps: steps, chain: Chain(steps...)}, true
}

// What Prepare keeps in record.Record.DecodedValue besides a mapped value
// (nil there: no result). Neither is a JSON value, and a copy of either
// still reads the same.
var (
	earlyDropped = []byte{}  // the chain dropped the record
	earlyKept    = []byte{0} // it kept the record unchanged
)

// Prepare runs the chain on r, a record of a JSON input just decoded (no
// rendered key or value: DecodedKey and DecodedValue nil; else it does
// nothing). When ok, spans are all the members of r's value, a valid
// object (jsonfield.ScanMembers), and the first steps read them instead
// of scanning the value again. It leaves r's value as it was, and keeps
// the result in r.DecodedValue for Release: the mapped value, or a mark
// that the record was dropped or kept unchanged. On an error it keeps
// nothing (Release runs the chain, which fails again).
func (e Early) Prepare(r *record.Record, spans []jsonfield.Span, ok bool) {
	if r.DecodedValue != nil || r.DecodedKey != nil {
		return
	}
	value, valueJSON, schemaID := r.Value, r.ValueJSON, r.ValueSchemaID
	mapped := false
	for _, s := range e.steps {
		if s.Filter == nil && s.Map == nil {
			continue
		}
		a := getActivation(r)
		if ok && !mapped {
			a.prefill(spans)
		}
		keep, err := s.run(a)
		a.put()
		if err != nil || !keep {
			r.Value, r.ValueJSON, r.ValueSchemaID, r.DecodedValue = value, valueJSON, schemaID, nil
			if err == nil {
				r.DecodedValue = earlyDropped
			}
			return
		}
		mapped = mapped || s.Map != nil
	}
	if !mapped {
		r.DecodedValue = earlyKept
		return
	}
	r.DecodedValue = r.Value
	r.Value, r.ValueJSON, r.ValueSchemaID = value, valueJSON, schemaID
}

// Release is the chain's result for r: the one Prepare kept, else the
// chain's, run now. It is the run's Process for the records of the
// topics whose records Prepare sees (and only for them: another input's
// DecodedValue is its rendering). Used by one goroutine at a time, as
// Chain.
func (e Early) Release(r *record.Record) (keep bool, err error) {
	switch d := r.DecodedValue; {
	case d == nil:
		return e.chain(r)
	case len(d) == 0:
		r.DecodedValue = nil
		return false, nil
	case len(d) == 1 && d[0] == 0:
		r.DecodedValue = nil
		return true, nil
	}
	SetValue(r, r.DecodedValue)
	return true, nil
}
