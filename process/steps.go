package process

// What the root package runs: a filter then a map as a signalbox.Process,
// a where as a signalbox.Where, a map as a signalbox.Transform.

import (
	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
)

// Steps are a filter, then a map; either may be nil.
type Steps struct {
	Filter *Expr // records for which it is false are dropped
	Map    *Expr // its result becomes the record's value
}

// Run runs the steps on r, reading `value` once for both: keep is false
// when the filter is false; after the map, r's value is the map's result
// (SetValue). On an error r is unchanged.
func (s Steps) Run(r *record.Record) (keep bool, err error) {
	if s.Filter == nil && s.Map == nil {
		return true, nil
	}
	a := getActivation(r)
	keep, err = s.run(a)
	a.put()
	return keep, err
}

func (s Steps) run(a *activation) (keep bool, err error) {
	if s.Filter != nil {
		if ok, err := s.Filter.boolOf(a); err != nil || !ok {
			return false, err
		}
	}
	if s.Map != nil {
		v, err := s.Map.newValue(a)
		if err != nil {
			return false, err
		}
		SetValue(a.rec, v)
	}
	return true, nil
}

// NeedsRelease reports whether either step reads what is only known once
// the record is released (Expr.NeedsRelease): when it does not, the steps
// may run before parking, on a JSON value, with the same results.
func (s Steps) NeedsRelease() bool {
	return s.Filter != nil && s.Filter.NeedsRelease() || s.Map != nil && s.Map.NeedsRelease()
}

// SetValue makes v, one line of JSON, r's value: what every sink writes,
// and what `value` reads from here on (a where sees the mapped value). A
// schema'd value's rendering and schema id are cleared: the new value is
// plain JSON.
func SetValue(r *record.Record, v []byte) {
	r.Value, r.DecodedValue, r.ValueSchemaID, r.ValueJSON = v, nil, 0, true
}

// Chain runs each Steps in turn (an input's, then the job's); a record one
// of them drops goes no further. On an error r is unchanged, as it came
// (what an input's map made of it undone): the dead-letter sink gets the
// record's own value.
func Chain(steps ...Steps) signalbox.Process {
	return func(r *record.Record) (bool, error) {
		value, decoded, schemaID, valueJSON := r.Value, r.DecodedValue, r.ValueSchemaID, r.ValueJSON
		for _, s := range steps {
			ok, err := s.Run(r)
			if err != nil {
				r.Value, r.DecodedValue, r.ValueSchemaID, r.ValueJSON = value, decoded, schemaID, valueJSON
			}
			if !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
}

// Process is s.Run as a signalbox.Process (signalbox.WithProcess).
func (s Steps) Process() signalbox.Process { return s.Run }

// Where is x as a signalbox.Where (signalbox.WithRoutedSink).
func (x *Expr) Where() signalbox.Where { return x.Bool }

// Transform is a map x as a signalbox.Transform (signalbox.WithTransform),
// for a program that maps JSON values at ingest: a Transform runs before
// parking, where `late` is always false and a schema'd value is not
// rendered yet (`value` reads its original bytes and fails). WithProcess
// has neither limit.
func (x *Expr) Transform() signalbox.Transform {
	s := Steps{Map: x}
	return func(r *record.Record) error {
		_, err := s.Run(r)
		return err
	}
}

// Expression names the failing expression (signalbox.ExpressionError).
func (e *Error) Expression() string { return e.Expr }

var _ signalbox.ExpressionError = (*Error)(nil)
