package tables

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// version is one version of a key: valid from at (ms) on; tomb marks a
// deletion.
type version struct {
	at    int64
	value []byte
	tomb  bool
}

// entry is the versions of one key, ascending by at; trimmed says a trim
// dropped older ones (invariant 4).
type entry struct {
	versions []version
	trimmed  bool
}

// Table is one versioned table.
type Table struct {
	name    string
	history time.Duration
	keys    map[string]*entry
	nvers   int
	bytes   int64
	beyond  atomic.Int64
}

// New returns an empty table named name that keeps versions history
// behind the watermark (Trim); history must be positive.
func New(name string, history time.Duration) (*Table, error) {
	if name == "" {
		return nil, fmt.Errorf("tables: a table needs a name")
	}
	if history <= 0 {
		return nil, fmt.Errorf("tables: table %q: history must be positive, got %v", name, history)
	}
	return &Table{name: name, history: history, keys: make(map[string]*entry)}, nil
}

// Name is the table's name.
func (t *Table) Name() string { return t.name }

// History is how long versions are kept behind the watermark.
func (t *Table) History() time.Duration { return t.history }

// Put records that key has value from version time at (ms) on; tomb true
// deletes the key from at on (value is then ignored). value is copied.
func (t *Table) Put(key string, at int64, value []byte, tomb bool) {
	v := version{at: at, tomb: tomb}
	if !tomb {
		v.value = append(make([]byte, 0, len(value)), value...)
	}
	e := t.keys[key]
	if e == nil {
		e = &entry{}
		t.keys[strings.Clone(key)] = e // key may alias a record's memory
	}
	i, found := slices.BinarySearchFunc(e.versions, at, func(v version, at int64) int { return cmpInt(v.at, at) })
	if found {
		t.bytes += int64(len(v.value) - len(e.versions[i].value))
		e.versions[i] = v
		return
	}
	e.versions = slices.Insert(e.versions, i, v)
	t.nvers++
	t.bytes += int64(len(v.value))
}

// AsOf returns key's value as of time at (invariant 1): found is false
// when there is no version at or before at, or that version is a
// tombstone. The value must not be written into; it is valid until the
// next Put or Trim.
func (t *Table) AsOf(key string, at int64) (value []byte, found bool) {
	e := t.keys[key]
	if e == nil {
		return nil, false
	}
	i, exact := slices.BinarySearchFunc(e.versions, at, func(v version, at int64) int { return cmpInt(v.at, at) })
	if !exact {
		if i == 0 {
			if !e.trimmed {
				return nil, false
			}
			t.beyond.Add(1) // invariant 4: the oldest version kept
			i = 1
		}
		i--
	}
	v := e.versions[i]
	return v.value, !v.tomb
}

// Trim drops the versions older than watermark − history, keeping the
// newest of them for each key (invariant 3).
func (t *Table) Trim(watermark int64) {
	bound := watermark - t.history.Milliseconds()
	if bound > watermark { // overflow near the minimum time
		return
	}
	for k, e := range t.keys {
		// n versions before bound; keep the newest of them
		n, _ := slices.BinarySearchFunc(e.versions, bound, func(v version, at int64) int { return cmpInt(v.at, at) })
		if n <= 1 {
			if n == 1 && len(e.versions) == 1 && e.versions[0].tomb {
				t.forget(k, e)
			}
			continue
		}
		for _, v := range e.versions[:n-1] {
			t.bytes -= int64(len(v.value))
		}
		t.nvers -= n - 1
		e.versions = slices.Delete(e.versions, 0, n-1)
		e.trimmed = true
		if len(e.versions) == 1 && e.versions[0].tomb {
			t.forget(k, e)
		}
	}
}

func (t *Table) forget(k string, e *entry) {
	t.nvers -= len(e.versions)
	for _, v := range e.versions {
		t.bytes -= int64(len(v.value))
	}
	delete(t.keys, k)
}

// Keys, Versions and Bytes are the table's size: keys known, versions
// kept, and the bytes of their values.
func (t *Table) Keys() int     { return len(t.keys) }
func (t *Table) Versions() int { return t.nvers }
func (t *Table) Bytes() int64  { return t.bytes }

// Beyond counts the lookups older than the history kept (invariant 4).
func (t *Table) Beyond() int64 { return t.beyond.Load() }

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
