package tables

import (
	"fmt"
	"slices"
)

// Set is the tables of a job, by name. It answers the lookups of the
// expressions (package process's Tables).
type Set struct {
	byName map[string]*Table
}

// NewSet returns the set of ts; their names must be distinct.
func NewSet(ts ...*Table) (*Set, error) {
	s := &Set{byName: make(map[string]*Table, len(ts))}
	for _, t := range ts {
		if _, dup := s.byName[t.name]; dup {
			return nil, fmt.Errorf("tables: two tables named %q", t.name)
		}
		s.byName[t.name] = t
	}
	return s, nil
}

// Table is the table named name, nil when there is none.
func (s *Set) Table(name string) *Table { return s.byName[name] }

// Names are the tables' names, sorted.
func (s *Set) Names() []string {
	ns := make([]string, 0, len(s.byName))
	for n := range s.byName {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// Sizes are the tables' sizes (Table.Size), by name. Unlike Lookup, it may
// be called from any goroutine.
func (s *Set) Sizes() []Size {
	ss := make([]Size, 0, len(s.byName))
	for _, n := range s.Names() {
		ss = append(ss, s.byName[n].Size())
	}
	return ss
}

// Lookup is the table name's AsOf(key, at); an unknown name is an error.
func (s *Set) Lookup(name, key string, at int64) (value []byte, found bool, err error) {
	t := s.byName[name]
	if t == nil {
		return nil, false, fmt.Errorf("lookup: no table %q (tables: %v)", name, s.Names())
	}
	v, ok := t.AsOf(key, at)
	return v, ok, nil
}

// HintKey is the table name's HintKey(key): 0, doing nothing, for an
// unknown name.
func (s *Set) HintKey(name, key string) uint64 {
	if t := s.byName[name]; t != nil {
		return t.HintKey(key)
	}
	return 0
}

// HintValue is the table name's HintValue(h).
func (s *Set) HintValue(name string, h uint64) {
	if t := s.byName[name]; t != nil {
		t.HintValue(h)
	}
}
