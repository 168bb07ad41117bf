package durable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/signalbox/signalbox/keyed"
	parked "github.com/signalbox/signalbox/timers/durable"
)

// Codec encodes and decodes a state for pebble (keyed.StateCodec is the
// codec of window state). Decode must not alias its input.
type Codec[S any] interface {
	Append(b []byte, s S) []byte
	Decode(b []byte) (S, error)
	Size(s S) int // the bytes s takes in memory, about
}

// Options configure Open. The zero value is usable.
type Options struct {
	// MemoryBudget bounds what the store holds in memory: pebble's
	// memtables and block cache are those of a parked store of this
	// budget (timers/durable.StoreOptions), and the parked store's
	// in-memory part (StoreOptions.InMemoryBudget) goes to CacheBytes and
	// TimerBytes. Default 256 MiB.
	MemoryBudget int64
	// CacheBytes bounds the state kept in memory (invariant 3). Default:
	// three quarters of the in-memory part of the budget.
	CacheBytes int64
	// TimerBytes bounds the timers kept in memory. Default: a quarter of
	// the in-memory part of the budget.
	TimerBytes int64
	// TimerReadAhead is how many timers Due moves from pebble to memory
	// at once. Default 1024.
	TimerReadAhead int
	// FilterMinKeys is the fewest keys the Bloom filter of the keys in
	// pebble is sized for (it grows with them; 10 bits a key, counted in
	// CacheBytes). Default 4096.
	FilterMinKeys int
	// FS is the file system; tests pass vfs.NewMem. Default vfs.Default.
	FS vfs.FS
}

// Store is a keyed.Store of S in pebble with a bounded cache, and a
// keyed.TimerStore. It is not safe for concurrent use.
type Store[S any] struct {
	codec  Codec[S]
	db     *pebble.DB
	cache  *pebble.Cache
	fs     vfs.FS
	dir    string
	m      map[string]*entry[S]
	bytes  int64 // what m holds (Codec.Size + key + entryOverhead)
	limit  int64
	n      int // keys with state
	err    error
	buf    []byte
	timers *Timers
	filter *filter // of the keys in pebble
}

// entry is a key's state in the cache. present: the key has state (s);
// onDisk: pebble holds a state of the key; dirty: pebble's is not s.
type entry[S any] struct {
	s                      S
	size                   int64
	present, onDisk, dirty bool
}

// entryOverhead is what an entry costs besides its state and key: the
// map's slot and the entry.
const entryOverhead = 96

// Key prefixes in pebble.
const (
	prefixState = 's'
	prefixTimer = 't'
)

// Open creates an empty Store in dir, which must be absent or empty: its
// state is scratch (the package doc), and Close removes dir.
func Open[S any](dir string, codec Codec[S], o Options) (*Store[S], error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	po := parked.StoreOptions{MemoryBudget: o.MemoryBudget, FS: o.FS}
	po.EnsureDefaults()
	if err := po.Validate(); err != nil {
		return nil, err
	}
	cacheBytes, timerBytes := inMemory(po)
	if o.CacheBytes <= 0 {
		o.CacheBytes = cacheBytes
	}
	if o.TimerBytes <= 0 {
		o.TimerBytes = timerBytes
	}
	if o.FilterMinKeys <= 0 {
		o.FilterMinKeys = 1 << 12
	}
	if o.TimerReadAhead <= 0 {
		o.TimerReadAhead = 1024
	}
	if names, err := o.FS.List(dir); err == nil && len(names) > 0 {
		return nil, fmt.Errorf("keyed/durable: %s is not empty: the state is scratch, give it a directory of its own", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("keyed/durable: %w", err)
	}
	// pebble reserves its memtables in the block cache (Cache.Reserve), so
	// a cache of CacheSize alone, smaller than two memtables, holds no
	// block at all (BlockCache.Hits stays 0): the memtables come on top,
	// so that CacheSize is left for blocks. The memory is the same, as the
	// memtables are allocated apart from the cache.
	cache := pebble.NewCache(po.CacheSize + 2*int64(po.MemTableSize))
	pebbleOpts := &pebble.Options{
		FS:                 o.FS,
		Cache:              cache,
		MemTableSize:       po.MemTableSize,
		DisableWAL:         true, // scratch: nothing is read back after a crash
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quiet{},
	}
	// Most Gets of a new key miss: a bloom filter answers them without
	// reading a block.
	for i := range pebbleOpts.Levels {
		pebbleOpts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, pebbleOpts)
	if err != nil {
		cache.Unref()
		return nil, fmt.Errorf("keyed/durable: open %s: %w", dir, err)
	}
	s := &Store[S]{codec: codec, db: db, cache: cache, fs: o.FS, dir: dir, m: map[string]*entry[S]{}, limit: o.CacheBytes, filter: newFilter(db, o.FilterMinKeys)}
	s.timers = &Timers{db: db, err: &s.err, filter: s.filter, mem: keyed.NewMemTimers(), limit: o.TimerBytes, readAhead: o.TimerReadAhead}
	return s, nil
}

// InMemory is what a Store of memory budget gets by default for its cache
// and its in-memory timers (Options.CacheBytes and TimerBytes): three
// quarters and a quarter of the in-memory part of the budget.
func InMemory(budget int64) (cacheBytes, timerBytes int64) {
	po := parked.StoreOptions{MemoryBudget: budget}
	po.EnsureDefaults()
	return inMemory(po)
}

func inMemory(po parked.StoreOptions) (cacheBytes, timerBytes int64) {
	in := po.InMemoryBudget()
	return in * 3 / 4, in / 4
}

// SetMemory changes what the cache and the in-memory timers may hold
// (Options.CacheBytes and TimerBytes; at least 1 each) and spills what is
// over the new bounds at once; pebble's memtables and block cache keep the
// sizes Open gave them. So a member's stores can share one budget as it
// takes and lets go of tasks.
func (s *Store[S]) SetMemory(cacheBytes, timerBytes int64) {
	s.limit, s.timers.limit = max(cacheBytes, 1), max(timerBytes, 1)
	s.evict(s.limit)
	for q := s.timers; q.bytes > q.limit && q.mem.Len() > 0 && *q.err == nil; {
		q.spill()
	}
}

// Memory is what the cache and the in-memory timers may hold, and what
// they hold now.
func (s *Store[S]) Memory() (cacheLimit, timerLimit, cacheBytes, timerBytes int64) {
	return s.limit, s.timers.limit, s.bytes, s.timers.bytes
}

// Close closes pebble and removes the directory.
func (s *Store[S]) Close() error {
	err := s.db.Close()
	s.cache.Unref()
	return errors.Join(err, s.fs.RemoveAll(s.dir))
}

// Err is the first error (invariant 4).
func (s *Store[S]) Err() error { return s.err }

func (s *Store[S]) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("keyed/durable: state: %w", err)
	}
}

// Timers is the store's TimerQueue (keyed.TimerStore).
func (s *Store[S]) Timers() keyed.TimerQueue { return s.timers }

// Len is the number of keys with state.
func (s *Store[S]) Len() int { return s.n }

// CacheBytes is what the cache holds now, by its count.
func (s *Store[S]) CacheBytes() int64 { return s.bytes }

// Get returns key's state.
func (s *Store[S]) Get(key string) (S, bool) {
	e := s.load(key)
	if e == nil {
		var zero S
		return zero, false
	}
	return e.s, e.present
}

// Put sets key's state.
func (s *Store[S]) Put(key string, st S) {
	e := s.load(key)
	if e == nil {
		return
	}
	if !e.present {
		s.n++
	}
	e.s, e.present, e.dirty = st, true, true
	s.resize(key, e)
	s.evict(s.limit)
}

// Delete removes key's state.
func (s *Store[S]) Delete(key string) {
	e := s.load(key)
	if e == nil || !e.present {
		return
	}
	s.n--
	var zero S
	e.s, e.present, e.dirty = zero, false, e.onDisk
	s.resize(key, e)
	s.evict(s.limit)
}

// load returns key's entry, reading it from pebble into the cache if it is
// not there (after making room); nil after an error.
func (s *Store[S]) load(key string) *entry[S] {
	if e, ok := s.m[key]; ok {
		return e
	}
	if s.err != nil {
		return nil
	}
	s.evict(s.limit)
	e := &entry[S]{}
	s.buf = append(append(s.buf[:0], prefixState), key...)
	v, closer, err := []byte(nil), io.Closer(nil), pebble.ErrNotFound
	if s.filter.mayHave(s.buf) {
		v, closer, err = s.db.Get(s.buf)
	}
	switch {
	case err == nil:
		st, derr := s.codec.Decode(v)
		_ = closer.Close()
		if derr != nil {
			s.fail(fmt.Errorf("state of %q: %w", key, derr))
			return nil
		}
		e.s, e.present, e.onDisk = st, true, true
	case !errors.Is(err, pebble.ErrNotFound):
		s.fail(err)
		return nil
	}
	s.m[key] = e
	s.resize(key, e)
	return e
}

// resize recounts e's bytes.
func (s *Store[S]) resize(key string, e *entry[S]) {
	n := int64(len(key)) + entryOverhead
	if e.present {
		n += int64(s.codec.Size(e.s))
	}
	s.bytes += n - e.size
	e.size = n
}

// evict spills entries, in the map's (random) order, down to half of
// limit once the cache (and the filter) holds more than limit: the dirty
// ones are written to pebble in one batch.
func (s *Store[S]) evict(limit int64) {
	limit -= s.filter.Bytes()
	if s.bytes <= limit || s.err != nil {
		return
	}
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	for k, e := range s.m {
		if e.dirty {
			s.buf = append(append(s.buf[:0], prefixState), k...)
			var err error
			if e.present {
				n := len(s.buf)
				s.buf = s.codec.Append(s.buf, e.s)
				err = b.Set(s.buf[:n], s.buf[n:], nil)
				s.filter.add(s.buf[:n])
			} else {
				err = b.Delete(s.buf, nil)
				s.filter.deleted()
			}
			if err != nil {
				s.fail(err)
				return
			}
		}
		delete(s.m, k)
		s.bytes -= e.size
		if s.bytes <= limit/2 {
			break
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		s.fail(err)
		return
	}
	if err := s.filter.maybeRebuild(); err != nil {
		s.fail(err)
	}
}

// quiet discards pebble's messages; a fatal one panics (a library does
// not exit).
type quiet struct{}

func (quiet) Infof(string, ...any)         {}
func (quiet) Errorf(string, ...any)        {}
func (quiet) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

var _ keyed.TimerStore = (*Store[int])(nil)

func timerKey(b []byte, t keyed.Timer) []byte {
	b = append(b, prefixTimer)
	b = binary.BigEndian.AppendUint64(b, uint64(t.At)^1<<63)
	return append(b, t.Key...)
}
