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
	// last is the last step's map when it reads the release only through
	// lookups of keys that do not (invariant 13): Prepare leaves a
	// template of its result, whose lookups Release makes.
	last *Expr
}

// NewEarly is steps' chain as an Early; ok is false when one of them
// reads what is known only at release (Steps.NeedsRelease) other than
// through the lookups of the last step's map that a template leaves
// holes for (invariant 13): that chain must run at release (Chain).
func NewEarly(steps ...Steps) (e Early, ok bool) {
	last := -1
	for i, s := range steps {
		if s.Filter != nil || s.Map != nil {
			last = i
		}
	}
	for i, s := range steps {
		if !s.NeedsRelease() {
			continue
		}
		if i != last || s.Filter != nil && s.Filter.NeedsRelease() || s.Map.partial == nil {
			return Early{}, false
		}
		e.last = s.Map
	}
	e.steps, e.chain = steps, Chain(steps...)
	return e, true
}

// Complete reports whether Prepare leaves Release nothing to compute: no
// template's lookups.
func (e Early) Complete() bool { return e.last == nil }

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
		if s.Map != nil && s.Map == e.last {
			e.prepareTemplate(r, s, a, value, valueJSON, schemaID)
			return
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

// prepareTemplate runs the last step s, whose map leaves a template, over
// a (its activation, which it puts back), and ends Prepare: r's value as
// it came (value, valueJSON, schemaID), and in its DecodedValue the
// template, a drop's mark, or nothing.
func (e Early) prepareTemplate(r *record.Record, s Steps, a *activation, value []byte, valueJSON bool, schemaID int32) {
	keep, err := true, error(nil)
	if s.Filter != nil {
		keep, err = s.Filter.boolOf(a)
	}
	var tmpl []byte
	if keep && err == nil {
		if t := s.Map.template(a); t != nil {
			tmpl = a.newValue(t)
		}
	}
	a.put()
	r.Value, r.ValueJSON, r.ValueSchemaID, r.DecodedValue = value, valueJSON, schemaID, tmpl
	if err == nil && !keep {
		r.DecodedValue = earlyDropped
	}
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
	case isTemplate(d) && e.last != nil:
		r.DecodedValue = nil // what the chain reads, if it runs
		if v, ok := e.fill(r, d); ok {
			SetValue(r, v)
			return true, nil
		}
		return e.chain(r)
	}
	SetValue(r, r.DecodedValue)
	return true, nil
}

// fill is the last step's result from its template d, in memory of its
// own; ok is false when the fast path gave up on it.
func (e Early) fill(r *record.Record, d []byte) ([]byte, bool) {
	a := getActivation(r)
	defer a.put()
	buf, ok := e.last.fill(a.buf[:0], d, r)
	if cap(buf) <= maxPooledBuf {
		a.buf = buf[:0]
	}
	if !ok {
		return nil, false
	}
	return a.newValue(buf), true
}
