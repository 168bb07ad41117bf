package tables

import (
	"fmt"
	"slices"
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
// dropped older ones (invariant 4). Both storages answer and change a key
// through its entry's methods, so they keep the invariants alike.
type entry struct {
	versions []version
	trimmed  bool
}

// search is the index of the first version of e at or after at, and
// whether it is exactly at at.
func (e *entry) search(at int64) (int, bool) {
	return slices.BinarySearchFunc(e.versions, at, func(v version, at int64) int { return cmpInt(v.at, at) })
}

// put adds v, or replaces the version at v.at (invariant 2): added says a
// version was added, dbytes is the change of the values' bytes.
func (e *entry) put(v version) (added bool, dbytes int64) {
	i, found := e.search(v.at)
	if found {
		dbytes = int64(len(v.value) - len(e.versions[i].value))
		e.versions[i] = v
		return false, dbytes
	}
	e.versions = slices.Insert(e.versions, i, v)
	return true, int64(len(v.value))
}

// asOf is the version as of at (invariants 1 and 4): ok is false when
// there is none; beyond says at is older than what a trim kept.
func (e *entry) asOf(at int64) (v version, ok, beyond bool) {
	i, exact := e.search(at)
	if !exact {
		if i == 0 {
			if !e.trimmed {
				return version{}, false, false
			}
			beyond = true // invariant 4: the oldest version kept
			i = 1
		}
		i--
	}
	return e.versions[i], true, beyond
}

// trim drops the versions older than bound except the newest of them
// (invariant 3): dropped versions of dbytes bytes; forget says the key is
// to be forgotten (its only version left is a tombstone older than bound),
// its remaining versions counted in dropped and dbytes too.
func (e *entry) trim(bound int64) (dropped int, dbytes int64, forget bool) {
	// n versions before bound; keep the newest of them
	n, _ := e.search(bound)
	if n > 1 {
		for _, v := range e.versions[:n-1] {
			dbytes += int64(len(v.value))
		}
		dropped = n - 1
		e.versions = slices.Delete(e.versions, 0, n-1)
		e.trimmed = true
	}
	if n >= 1 && len(e.versions) == 1 && e.versions[0].tomb {
		dropped++
		dbytes += int64(len(e.versions[0].value))
		return dropped, dbytes, true
	}
	return dropped, dbytes, false
}

// Table is one versioned table, kept in memory (New) or in pebble
// (Open with a Dir).
type Table struct {
	name    string
	history time.Duration
	mem     *mem // in memory; nil with disk
	disk    *disk
	// the table's size, written by its goroutine, read from any (Size)
	nkeys, nvers, bytes atomic.Int64
	beyond              atomic.Int64
}

// New returns an empty table named name, kept in memory, that keeps
// versions history behind the watermark (Trim); history must be positive.
func New(name string, history time.Duration) (*Table, error) {
	return Open(name, history, Options{})
}

func newTable(name string, history time.Duration) (*Table, error) {
	if name == "" {
		return nil, fmt.Errorf("tables: a table needs a name")
	}
	if history <= 0 {
		return nil, fmt.Errorf("tables: table %q: history must be positive, got %v", name, history)
	}
	return &Table{name: name, history: history}, nil
}

// Name is the table's name.
func (t *Table) Name() string { return t.name }

// History is how long versions are kept behind the watermark.
func (t *Table) History() time.Duration { return t.history }

// Put records that key has value from version time at (ms) on; tomb true
// deletes the key from at on (value is then ignored). value is copied.
// With pebble, a failure of the storage makes Put do nothing and Err
// report it.
func (t *Table) Put(key string, at int64, value []byte, tomb bool) {
	v := version{at: at, tomb: tomb}
	if t.disk != nil {
		if !tomb {
			v.value = append(make([]byte, 0, len(value)), value...)
		}
		t.disk.put(t, key, v)
		return
	}
	if !tomb {
		v.value = value // the storage copies it
	}
	newKey, added, dbytes := t.mem.put(key, v)
	if newKey {
		t.nkeys.Add(1)
	}
	t.count(added, dbytes)
}

// count adds a put's outcome to the table's size.
func (t *Table) count(added bool, dbytes int64) {
	if added {
		t.nvers.Add(1)
	}
	t.bytes.Add(dbytes)
}

// AsOf returns key's value as of time at (invariant 1): found is false
// when there is no version at or before at, or that version is a
// tombstone. The value must not be written into; it is valid until the
// next Put or Trim. With pebble, after a failure (Err) nothing is found.
func (t *Table) AsOf(key string, at int64) (value []byte, found bool) {
	var v version
	var ok, beyond bool
	if t.disk != nil {
		e := t.disk.entry(key, true)
		if e == nil {
			return nil, false
		}
		v, ok, beyond = e.asOf(at)
	} else if t.mem != nil { // nil after Close: nothing found, as the map it was found nothing
		v, ok, beyond = t.mem.asOf(key, at)
	}
	if beyond {
		t.beyond.Add(1)
	}
	return v.value, ok && !v.tomb
}

// HintKey asks the CPU for the first memory a lookup of key reads, so
// that lookups of many keys wait for memory together rather than one
// after the other: call it for each key a little ahead of its AsOf, then
// HintValue with the hash it returns, then AsOf. Hints change nothing and
// read nothing a Put or Trim writes, so they may run on any goroutine
// while no Put or Trim does; in pebble they do nothing (h is 0).
func (t *Table) HintKey(key string) (h uint64) {
	if t.mem == nil {
		return 0
	}
	h32 := t.mem.hash(key)
	t.mem.hintSlot(h32)
	return uint64(h32)
}

// HintValue asks the CPU for the bytes of the key whose HintKey returned
// h, and its value's, once its slot is at hand (see HintKey).
func (t *Table) HintValue(h uint64) {
	if t.mem != nil && h != 0 {
		t.mem.hintBytes(uint32(h))
	}
}

// Trim drops the versions older than watermark − history, keeping the
// newest of them for each key (invariant 3). In memory it visits every
// key. In pebble it visits only the keys with a version to drop, and at
// most about a thousand of them: the rest of the trim goes on at the next
// Trims, while Trimming (invariant 9).
func (t *Table) Trim(watermark int64) {
	bound := watermark - t.history.Milliseconds()
	if bound > watermark { // overflow near the minimum time
		return
	}
	if t.disk != nil {
		t.disk.trim(t, bound)
		return
	}
	if t.mem != nil {
		t.mem.trim(bound, t.counted)
	}
}

// Trimming says a trim is under way, to go on at the next Trim (in
// pebble, invariant 9); the caller should call Trim again soon, with the
// same watermark or a later one.
func (t *Table) Trimming() bool { return t.disk != nil && t.disk.trimFrom != nil }

// trimmed trims e and counts it; it reports whether e's key is forgotten.
func (t *Table) trimmed(e *entry, bound int64) (forget bool) {
	dropped, dbytes, forget := e.trim(bound)
	t.counted(dropped, dbytes, forget)
	return forget
}

// counted counts a trim's outcome for one key.
func (t *Table) counted(dropped int, dbytes int64, forget bool) {
	t.nvers.Add(-int64(dropped))
	t.bytes.Add(-dbytes)
	if forget {
		t.nkeys.Add(-1)
	}
}

// Size is a table's size at one moment (Table.Size).
type Size struct {
	Name     string
	Keys     int64 // keys known
	Versions int64 // versions kept
	Bytes    int64 // the bytes of their values
	// Pebble says the table is in pebble (Options.Dir); then DiskBytes
	// are its files, and MemoryBytes what it holds in memory (pebble's
	// memtables and block cache, the pending writes, the cache of
	// entries), as of its last write to pebble. Both 0 in memory.
	Pebble                 bool
	DiskBytes, MemoryBytes int64
	// Beyond is Table.Beyond.
	Beyond int64
}

// Size is the table's size now. Unlike the table's other methods, it may
// be called from any goroutine, even after Close (the last size).
func (t *Table) Size() Size {
	s := Size{Name: t.name, Keys: t.nkeys.Load(), Versions: t.nvers.Load(), Bytes: t.bytes.Load(), Beyond: t.beyond.Load()}
	if t.disk != nil {
		s.Pebble, s.DiskBytes, s.MemoryBytes = true, t.disk.diskBytes.Load(), t.disk.memBytes.Load()
	}
	return s
}

// Keys, Versions and Bytes are Size's.
func (t *Table) Keys() int { return int(t.nkeys.Load()) }

func (t *Table) Versions() int { return int(t.nvers.Load()) }

func (t *Table) Bytes() int64 { return t.bytes.Load() }

// Beyond counts the lookups older than the history kept (invariant 4).
func (t *Table) Beyond() int64 { return t.beyond.Load() }

// Err is the failure of the table's pebble storage, nil in memory: once
// it is not nil, the table answers nothing more and the run must stop.
func (t *Table) Err() error {
	if t.disk == nil {
		return nil
	}
	return t.disk.err
}

// Close releases the table's storage: pebble's files and memory. The table
// must not be used after.
func (t *Table) Close() error {
	if t.disk == nil {
		t.mem = nil
		return nil
	}
	return t.disk.close()
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
