package process

// Set: several expressions evaluated over one record with one activation,
// for a window's where, key and aggregate arguments (package config).

import (
	"unsafe"

	"github.com/signalbox/signalbox/record"
)

// Set evaluates several expressions over records, one record at a time,
// with one activation for all of them: whatever the number of expressions,
// a record's value is looked at once and its top-level members are scanned
// at most once (invariant 6), and the fast path allocates nothing per
// record. Each function it makes (Bool, Apply) evaluates one expression
// exactly as the expression's own Bool or Apply does: the same results and
// the same errors (TestSetIsSeparate). Only the record's reads are shared,
// never an expression's state: each evaluation that needs `value` as a CEL
// value converts it anew, as a separate evaluation does.
//
// The first of the set's functions called with a record starts the set on
// it; the set moves on when one is called with another record (another
// pointer, or the same one with another place, event time, late flag or
// value). An Apply function computes its result once per record however
// often it is asked, and the bytes it returns are the set's: valid until
// the set moves on, and never to be written through. A Set is not safe for
// concurrent use, and keeps a reference to its last record until the next.
type Set struct {
	a    activation
	at   recordID
	memo []memo // by Apply function
}

// memo is an Apply function's result for the set's record.
type memo struct {
	done bool
	out  []byte
	err  error
}

// recordID is what tells the set's record from the next one.
type recordID struct {
	rec       *record.Record
	topic     string
	partition int32
	offset    int64
	eventTime int64
	late      bool
	doc       *byte
	n         int
}

// on makes r the set's record, unless it is.
func (s *Set) on(r *record.Record) {
	doc := Doc(r)
	if at := &s.at; r == at.rec && r.Offset == at.offset && r.Partition == at.partition && r.EventTime == at.eventTime &&
		r.Late == at.late && unsafe.SliceData(doc) == at.doc && len(doc) == at.n && r.Topic == at.topic {
		return
	}
	s.a.clear()
	s.a.start(r)
	s.at = recordID{r, r.Topic, r.Partition, r.Offset, r.EventTime, r.Late, unsafe.SliceData(doc), len(doc)}
	for i := range s.memo {
		m := &s.memo[i]
		if cap(m.out) > maxPooledBuf {
			m.out = nil
		}
		m.done, m.err = false, nil
	}
}

// Bool is a function that evaluates the filter or where x over a record
// as x.Bool does, reading it with the set.
func (s *Set) Bool(x *Expr) func(*record.Record) (bool, error) {
	return func(r *record.Record) (bool, error) {
		s.on(r)
		s.a.value = nil // converted anew: what a separate evaluation reads
		return x.boolOf(&s.a)
	}
}

// Apply is a function that evaluates the map x over a record as
// x.Apply(nil, r) does, reading it with the set; its result is the set's
// (Set).
func (s *Set) Apply(x *Expr) func(*record.Record) ([]byte, error) {
	i := len(s.memo)
	s.memo = append(s.memo, memo{})
	return func(r *record.Record) ([]byte, error) {
		s.on(r)
		m := &s.memo[i]
		if !m.done {
			s.a.value = nil
			out, err := x.apply(m.out[:0], &s.a)
			m.out, m.err, m.done = out, err, true
			if err != nil {
				m.out = out[:0]
			}
		}
		if m.err != nil {
			return nil, m.err
		}
		return m.out[:len(m.out):len(m.out)], nil
	}
}
