package tables

// The storage in memory: an index built for lookups of random keys in a
// big table, and that the garbage collector never has to visit.

import (
	"hash/maphash"
	"unsafe"

	"github.com/signalbox/signalbox/internal/prefetch"
)

// mem keeps a table's keys in an open-addressing index (linear probing,
// at most three quarters full): a slot holds its key's hash, where its
// key's bytes are in the arena, and the key's version when it has only
// one; the value's bytes follow the key's there. So a lookup of a key of one
// version reads two places, its slot and its bytes, and a slot holds no
// pointer: the index and the arena are memory the garbage collector does
// not scan, whatever the number of keys. A key of several versions keeps
// them in an entry of exts, as in pebble's cache (the same code changes
// and answers both: entry), their values in the arena too, until a trim
// leaves it one.
type mem struct {
	seed  maphash.Seed
	slots []slot // a power of two long, at most 2³² slots; hash 0: free
	used  int
	arena arena
	exts  []entry // the entries of keys of several versions, by slot.at
	free  []int64 // exts' indexes not in use
	// compactions and inlined count the arena's compactions and the keys
	// made one-version slots again (tests)
	compactions, inlined int
}

// slot is one key, in 32 bytes: hash (never 0 when in use: its low bits
// are the slot where the key's probe starts), its bytes at kv in the
// arena, klen long, then, for a key of one version, the version at at,
// its value vlen long after the key's bytes; for a key of several
// (multi), its entry is exts[at] and vlen is 0.
type slot struct {
	kv               uint64 // arena reference
	at               int64
	hash, klen, vlen uint32
	flags            uint8
}

// A slot's flags: its one version is a tombstone; a trim dropped older
// versions of the key (entry.trimmed); its versions are in exts.
const (
	tomb uint8 = 1 << iota
	trimmed
	multi
)

func (s *slot) is(f uint8) bool { return s.flags&f != 0 }

// set sets or clears f.
func (s *slot) set(f uint8, on bool) {
	if s.flags &^= f; on {
		s.flags |= f
	}
}

func newMem() *mem {
	return &mem{seed: maphash.MakeSeed(), slots: make([]slot, 16)}
}

func (m *mem) hash(key string) uint32 {
	return max(uint32(maphash.String(m.seed, key)), 1)
}

// find is the slot of key, or (ok false) the free slot where it would go;
// h is key's hash.
func (m *mem) find(key string) (i int, h uint32, ok bool) {
	h = m.hash(key)
	mask := len(m.slots) - 1
	for i = int(h) & mask; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.hash == 0 {
			return i, h, false
		}
		if s.hash == h && int(s.klen) == len(key) && m.arena.str(s.kv, s.klen) == key {
			return i, h, true
		}
	}
}

// hintSlot asks the CPU for the slot where a lookup of the key of hash h
// starts (Table.HintKey).
func (m *mem) hintSlot(h uint32) {
	s := &m.slots[int(h)&(len(m.slots)-1)]
	prefetch.Bytes(unsafe.Slice((*byte)(unsafe.Pointer(s)), unsafe.Sizeof(*s)))
}

// hintBytes asks the CPU for the bytes of the key of hash h and its
// value, when that key is among the hintProbe slots where its lookup
// starts (most keys are; the first of them hintSlot asked for).
func (m *mem) hintBytes(h uint32) {
	mask := len(m.slots) - 1
	for i, n := int(h)&mask, 0; n < hintProbe; i, n = (i+1)&mask, n+1 {
		switch s := &m.slots[i]; s.hash {
		case h:
			prefetch.Bytes(m.arena.bytes(s.kv, s.klen+s.vlen))
			return
		case 0:
			return
		}
	}
}

// hintProbe is how many slots hintBytes looks at: two cache lines' worth.
const hintProbe = 4

// entry is slot i's versions as an entry: exts' own for a multi slot,
// else one made for the call (its value aliasing the arena).
func (m *mem) entry(i int, one *[1]version) *entry {
	s := &m.slots[i]
	if s.is(multi) {
		return &m.exts[s.at]
	}
	one[0] = version{at: s.at, tomb: s.is(tomb)}
	if !s.is(tomb) {
		one[0].value = m.arena.bytes(s.kv+uint64(s.klen), s.vlen)
	}
	return &entry{versions: one[:1:1], trimmed: s.is(trimmed)}
}

// asOf is key's version as of at, as entry.asOf answers.
func (m *mem) asOf(key string, at int64) (v version, ok, beyond bool) {
	i, _, found := m.find(key)
	if !found {
		return version{}, false, false
	}
	s := &m.slots[i]
	if s.is(multi) {
		return m.exts[s.at].asOf(at)
	}
	switch { // entry.asOf of one version, by hand
	case s.at <= at:
	case s.is(trimmed):
		beyond = true
	default:
		return version{}, false, false
	}
	v = version{at: s.at, tomb: s.is(tomb)}
	if !v.tomb {
		v.value = m.arena.bytes(s.kv+uint64(s.klen), s.vlen)
	}
	return v, true, beyond
}

// put puts v for key, as entry.put; v.value is copied (nil for a
// tombstone).
func (m *mem) put(key string, v version) (newKey, added bool, dbytes int64) {
	i, h, found := m.find(key)
	if !found {
		if 4*(m.used+1) > 3*len(m.slots) {
			m.grow()
			i, h, _ = m.find(key)
		}
		s := &m.slots[i]
		*s = slot{hash: h, klen: uint32(len(key)), at: v.at}
		s.set(tomb, v.tomb)
		s.kv, s.vlen = m.arena.add(key, v.value)
		m.used++
		return true, true, int64(len(v.value))
	}
	s := &m.slots[i]
	if s.is(multi) {
		e := &m.exts[s.at]
		if j, found := e.search(v.at); found {
			m.arena.drop(int64(len(e.versions[j].value))) // replaced
		}
		v.value = m.arena.value(v.value)
		added, dbytes = e.put(v)
		m.compacted()
		return false, added, dbytes
	}
	if s.at == v.at { // replaced, as entry.put replaces: still one version
		dbytes = int64(len(v.value)) - int64(s.vlen)
		m.arena.drop(int64(s.klen + s.vlen))
		s.kv, s.vlen = m.arena.add(m.arena.str(s.kv, s.klen), v.value)
		s.set(tomb, v.tomb)
		m.compacted()
		return false, false, dbytes
	}
	// A second version: both go to an entry, the first's value where it
	// is in the arena, after the key's bytes.
	var one [1]version
	e := *m.entry(i, &one)
	e.versions = append(make([]version, 0, 2), e.versions[0])
	v.value = m.arena.value(v.value)
	added, dbytes = e.put(v)
	s.vlen, s.flags = 0, multi
	if n := len(m.free); n > 0 {
		s.at, m.free = m.free[n-1], m.free[:n-1]
		m.exts[s.at] = e
	} else {
		s.at = int64(len(m.exts))
		m.exts = append(m.exts, e)
	}
	m.compacted()
	return false, added, dbytes
}

// trim trims every key to bound as entry.trim, calling counted with each
// outcome, and forgets the keys it says to.
func (m *mem) trim(bound int64, counted func(dropped int, dbytes int64, forget bool)) {
	for i := 0; i < len(m.slots); {
		s := &m.slots[i]
		if s.hash == 0 {
			i++
			continue
		}
		var one [1]version
		e := m.entry(i, &one)
		dropped, dbytes, forget := e.trim(bound)
		counted(dropped, dbytes, forget)
		if s.is(multi) {
			m.arena.drop(dbytes) // the dropped versions' values
		}
		if !forget {
			switch {
			case !s.is(multi): // one version before bound stays: unchanged
				s.set(trimmed, e.trimmed)
			case len(e.versions) == 1:
				m.inline(s)
			}
			i++
			continue
		}
		if s.is(multi) {
			m.exts[s.at] = entry{}
			m.free = append(m.free, s.at)
		}
		m.arena.drop(int64(s.klen + s.vlen))
		m.remove(i) // a later key may move into i: look at i again
	}
	m.compacted()
}

// inline makes the multi slot s, whose entry a trim left one version,
// a slot of one version again: its key's bytes and its value's together
// in the arena, its entry freed.
func (m *mem) inline(s *slot) {
	ext := s.at
	e := &m.exts[ext]
	v := e.versions[0]
	m.arena.drop(int64(s.klen) + int64(len(v.value)))
	s.kv, s.vlen = m.arena.add(m.arena.str(s.kv, s.klen), v.value) // the old bytes stay where they are until a compaction
	s.at, s.flags = v.at, 0
	s.set(tomb, v.tomb)
	s.set(trimmed, e.trimmed)
	*e = entry{}
	m.free = append(m.free, ext)
	m.inlined++
}

// remove frees slot i, moving back the keys after it that probed past it
// (backward-shift deletion: the index keeps no tombstones).
func (m *mem) remove(i int) {
	mask := len(m.slots) - 1
	for j := (i + 1) & mask; m.slots[j].hash != 0; j = (j + 1) & mask {
		home := int(m.slots[j].hash) & mask
		// j stays unless its home is cyclically outside (i, j]
		if (j-home)&mask >= (j-i)&mask {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = slot{}
	m.used--
}

// grow doubles the index.
func (m *mem) grow() {
	old := m.slots
	m.slots = make([]slot, 2*len(old))
	hugePages(unsafe.Slice((*byte)(unsafe.Pointer(&m.slots[0])), uintptr(len(m.slots))*unsafe.Sizeof(slot{})))
	mask := len(m.slots) - 1
	for _, s := range old {
		if s.hash == 0 {
			continue
		}
		i := int(s.hash) & mask
		for m.slots[i].hash != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
}

// compacted compacts the arena once it holds more bytes given up than in
// use (and more than a chunk of them), so that it is never more than
// about twice the bytes in use.
func (m *mem) compacted() {
	if m.arena.dead > max(m.arena.live, arenaChunk) {
		m.compact()
	}
}

// compact copies the keys' and values' bytes in use into a new arena.
func (m *mem) compact() {
	old := m.arena
	m.arena = arena{}
	m.compactions++
	for i := range m.slots {
		s := &m.slots[i]
		if s.hash == 0 {
			continue
		}
		s.kv, _ = m.arena.add(old.str(s.kv, s.klen), old.bytes(s.kv+uint64(s.klen), s.vlen))
		if s.is(multi) {
			vs := m.exts[s.at].versions
			for j := range vs {
				vs[j].value = m.arena.value(vs[j].value)
			}
		}
	}
}

// entryOf is key's versions as an entry (a copy), nil when the table does
// not know key.
func (m *mem) entryOf(key string) *entry {
	i, _, found := m.find(key)
	if !found {
		return nil
	}
	var one [1]version
	e := *m.entry(i, &one)
	e.versions = append([]version(nil), e.versions...)
	return &e
}

// The arena's chunks: the first is firstChunk bytes, each next one twice
// the last up to arenaChunk (so that a small table stays small and a big
// one is in chunks of huge pages); a key and value longer than that get a
// chunk of their own.
const (
	firstChunk = 64 << 10
	arenaChunk = 4 << 20
)

// arena holds keys' and values' bytes in big chunks: a reference is a
// chunk's index times 2³² plus an offset in it. Bytes given up (drop) stay
// until a compaction; live and dead count both.
type arena struct {
	chunks     [][]byte
	live, dead int64
}

// add appends key's bytes and then value's; ref is where key's start, n
// is len(value).
func (a *arena) add(key string, value []byte) (ref uint64, n uint32) {
	size := len(key) + len(value)
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < size {
		n := firstChunk
		if last >= 0 {
			n = min(2*cap(a.chunks[last]), arenaChunk)
		}
		c := make([]byte, max(n, size))
		hugePages(c)
		a.chunks = append(a.chunks, c[:0])
		last++
	}
	c := a.chunks[last]
	ref = uint64(last)<<32 | uint64(len(c))
	a.chunks[last] = append(append(c, key...), value...)
	a.live += int64(size)
	return ref, uint32(len(value))
}

// drop gives up n bytes of the arena.
func (a *arena) drop(n int64) {
	a.live -= n
	a.dead += n
}

// value is a copy of b in the arena (nil for nil, empty for empty).
func (a *arena) value(b []byte) []byte {
	if b == nil {
		return nil
	}
	ref, n := a.add("", b)
	return a.bytes(ref, n)
}

func (a *arena) bytes(ref uint64, n uint32) []byte {
	c, off := a.chunks[ref>>32], uint32(ref)
	return c[off : off+n : off+n]
}

func (a *arena) str(ref uint64, n uint32) string {
	b := a.bytes(ref, n)
	return unsafe.String(unsafe.SliceData(b), len(b))
}
