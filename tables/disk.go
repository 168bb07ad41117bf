package tables

// The pebble storage of a table (Options.Dir): every version in pebble,
// the entries of the keys last used (and the keys looked up that have
// none) in an in-memory cache bounded by the budget. Nothing is durable:
// Open wipes the directory, and the engine rebuilds a table by re-reading
// its topic from the earliest offset.

import (
	"bytes"
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options choose a table's storage. The zero value keeps it in memory.
type Options struct {
	// Dir, when set, keeps the table in pebble in this directory, which is
	// the table's alone: Open wipes it (it must be absent, empty, or a
	// table's directory). The Go heap then holds at most about
	// MemoryBudget of the table, whatever its size.
	Dir string
	// MemoryBudget bounds, in bytes, what the table keeps in memory with a
	// Dir: pebble's memtables (up to three of a sixteenth each, outside the
	// Go heap with cgo) and block cache (an eighth, likewise), the pending
	// writes (a thirty-second) and the cache of entries (a quarter); the
	// rest is the garbage collector's headroom.
	// Default DefaultMemoryBudget; at least MinMemoryBudget.
	MemoryBudget int64
	// FS is the file system; tests may pass vfs.NewMem. Default vfs.Default.
	FS vfs.FS
}

// Budgets of Options.MemoryBudget.
const (
	DefaultMemoryBudget = 64 << 20
	MinMemoryBudget     = 4 << 20
)

// markerName marks a directory as a table's: Open wipes only such a
// directory, an absent or an empty one.
const markerName = "SIGNALBOX-TABLE"

// Open returns an empty table named name that keeps versions history
// behind the watermark (Trim), in memory, or in pebble under opts.Dir.
// Close it after use.
func Open(name string, history time.Duration, opts Options) (*Table, error) {
	t, err := newTable(name, history)
	if err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		t.mem = newMem()
		return t, nil
	}
	if t.disk, err = openDisk(opts); err != nil {
		return nil, fmt.Errorf("tables: table %q: %w", name, err)
	}
	return t, nil
}

// disk is a table's pebble storage. Keys:
//
//	'k' uvarint(len(key)) key         the key lost versions to a trim (entry.trimmed)
//	'k' uvarint(len(key)) key time    a version: a byte 1 for a tombstone, else 0, then the value
//	'x' time uvarint(len(key)) key    the key has a version at time that no trim has seen
//
// times big-endian with the sign bit flipped, so that they sort as
// numbers. A put reads the key's entry (cached, or loaded and cached),
// to count the table's size as in memory, and writes its version and its
// 'x' key. A trim to bound reads the 'x' keys below bound: the keys with a
// version a trim may drop, and only those (a key none of whose versions
// below bound is new since the last trim has at most one there, which a
// trim keeps, invariant 3); it trims each, and deletes its 'x' keys below
// bound. Writes go to an indexed batch, read through with the DB,
// committed (without a WAL: nothing is durable) once large.
type disk struct {
	fs    vfs.FS
	dir   string
	db    *pebble.DB
	cache *pebble.Cache
	b     *pebble.Batch
	it    *pebble.Iterator
	stale bool // b was written since it was refreshed
	// batchMax is the size at which b is committed.
	batchMax int
	// the entries of the keys used last, by key, nil for a key looked up
	// that has none; lru's front is the newest, cached the bytes they
	// hold (entrySize), at most cacheMax; loads counts the reads of an
	// entry from pebble.
	entries          map[string]*list.Element
	lru              list.List
	cached, cacheMax int64
	loads            int64
	err              error
	// the table's files and memory (Size), as of the last commit
	diskBytes, memBytes atomic.Int64
	// the trim pass under way (trim): its bound, the 'x' key it resumes
	// at (nil: none under way), and whether a put wrote an 'x' key below
	// its bound behind it; trimMax is how many keys a Trim visits at most
	trimBound  int64
	trimFrom   []byte
	trimBehind bool
	trimMax    int
}

// cachedEntry is an element of disk.lru.
type cachedEntry struct {
	key  string
	e    *entry
	size int64
}

func openDisk(o Options) (*disk, error) {
	if o.MemoryBudget == 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.MemoryBudget < MinMemoryBudget {
		return nil, fmt.Errorf("memory budget %d is below the minimum %d", o.MemoryBudget, MinMemoryBudget)
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if err := wipe(o.FS, o.Dir); err != nil {
		return nil, err
	}
	memTable := min(o.MemoryBudget/16, 64<<20)
	// pebble reserves its memtables (up to two, and one being flushed)
	// and large batches in the block cache: room for four
	cache := pebble.NewCache(min(o.MemoryBudget/8, 256<<20) + 4*memTable)
	d := &disk{
		fs:       o.FS,
		dir:      o.Dir,
		cache:    cache,
		batchMax: int(min(o.MemoryBudget/32, 16<<20)),
		cacheMax: o.MemoryBudget / 4,
		trimMax:  trimKeys,
		entries:  make(map[string]*list.Element),
	}
	po := &pebble.Options{
		FS:                 noSyncFS{o.FS},
		Cache:              d.cache,
		MemTableSize:       uint64(memTable),
		DisableWAL:         true,
		Logger:             quietLogger{},
		FormatMajorVersion: pebble.FormatNewest,
	}
	// fewer, larger files: a lookup at random finds its file open (pebble
	// keeps up to MaxOpenFiles, 1,000, open); pebble's default of 2 MB
	// for L0 makes 1,300 files of a 10M-key table
	po.TargetFileSizes[0] = 8 << 20
	for i := range po.Levels {
		// a lookup reads a block: no decompression, the OS caches the files
		po.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	db, err := pebble.Open(o.Dir, po)
	if err != nil {
		d.cache.Unref()
		return nil, fmt.Errorf("open %s: %w", o.Dir, err)
	}
	d.db = db
	if err := d.newBatch(); err != nil {
		_ = d.close()
		return nil, err
	}
	return d, nil
}

// wipe empties dir for a new table, creating it, and marks it as a
// table's; it refuses a directory with content but no marker.
func wipe(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", dir, err)
	case len(names) > 0:
		if !slicesContains(names, markerName) {
			return fmt.Errorf("%s is not empty and is not a table's directory (no %s): refusing to wipe it", dir, markerName)
		}
		if err := fs.RemoveAll(dir); err != nil {
			return fmt.Errorf("wipe %s: %w", dir, err)
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := fs.Create(fs.PathJoin(dir, markerName), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, "signalbox table, rebuilt from its topic at every start: wiped by the next\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// quietLogger discards pebble's messages and panics on fatal ones: a
// library must not exit the process.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("tables: pebble: "+format, args...))
}

func (d *disk) fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("tables: pebble: %w", err)
	}
}

// newBatch starts a batch and the iterator that reads through it.
func (d *disk) newBatch() error {
	d.b = d.db.NewIndexedBatch()
	it, err := d.b.NewIter(nil)
	if err != nil {
		return err
	}
	d.it, d.stale = it, false
	return nil
}

// commit writes the batch to the DB once it is large.
func (d *disk) commit(force bool) {
	if d.err != nil || (!force && d.b.Len() < d.batchMax) {
		return
	}
	err := d.it.Close()
	if err == nil {
		err = d.b.Commit(pebble.NoSync)
	}
	_ = d.b.Close()
	d.b, d.it = nil, nil
	if err == nil {
		err = d.newBatch()
	}
	if err != nil {
		d.fail(err)
		return
	}
	d.measure()
}

// measure updates the table's files and memory (Size) from pebble's
// metrics.
func (d *disk) measure() {
	m := d.db.Metrics()
	d.diskBytes.Store(int64(m.DiskSpaceUsage()))
	d.memBytes.Store(int64(m.MemTable.Size) + m.BlockCache.Size + d.cached + int64(d.b.Len()))
}

// iter is the iterator, seeing every write, bounded to [lower, upper):
// it reads no block beyond them. The bounds must not change until the
// next call.
func (d *disk) iter(lower, upper []byte) *pebble.Iterator {
	if d.stale {
		d.it.SetOptions(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		d.stale = false
	} else {
		d.it.SetBounds(lower, upper)
	}
	return d.it
}

// upperOf is the least key above every key with prefix p.
func upperOf(p []byte) []byte {
	return append(bytes.Clone(p), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
}

func (d *disk) close() error {
	var err error
	if d.it != nil {
		err = d.it.Close()
	}
	if d.b != nil {
		_ = d.b.Close()
	}
	if d.db != nil {
		if cerr := d.db.Close(); err == nil {
			err = cerr
		}
	}
	if d.cache != nil {
		d.cache.Unref()
	}
	d.it, d.b, d.db, d.cache = nil, nil, nil, nil
	if err == nil {
		err = d.fs.RemoveAll(d.dir)
	}
	if d.err == nil {
		d.err = errors.New("tables: the table is closed")
	}
	return err
}

// prefix is key's prefix in pebble, in buf.
func prefix(buf []byte, c byte, key string) []byte {
	buf = binary.AppendUvarint(append(buf[:0], c), uint64(len(key)))
	return append(buf, key...)
}

func appendTime(buf []byte, at int64) []byte {
	return binary.BigEndian.AppendUint64(buf, uint64(at)^1<<63)
}

func readTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ 1<<63) }

// entry is key's entry, from the cache or loaded; nil when the key has
// none (or after a failure). absent caches that it has none, if so: a
// lookup's next miss of the key reads nothing (a put makes the key's
// entry, and a trim never forgets a cached absence, as the key has none).
func (d *disk) entry(key string, absent bool) *entry {
	if el := d.entries[key]; el != nil {
		d.lru.MoveToFront(el)
		return el.Value.(*cachedEntry).e
	}
	if d.err != nil {
		return nil
	}
	e, err := d.load(key)
	if err != nil {
		d.fail(err)
		return nil
	}
	if e != nil || absent {
		d.remember(key, e)
	}
	return e
}

// load reads key's entry from pebble.
func (d *disk) load(key string) (*entry, error) {
	d.loads++
	p := prefix(nil, 'k', key)
	it := d.iter(p, upperOf(p))
	var e *entry
	for ok := it.First(); ok; ok = it.Next() {
		if e == nil {
			e = &entry{}
		}
		k := it.Key()[len(p):]
		if len(k) == 0 {
			e.trimmed = true
			continue
		}
		val, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		if len(k) != 8 || len(val) == 0 {
			return nil, fmt.Errorf("corrupt version of %q: key %x, value %x", key, it.Key(), val)
		}
		v := version{at: readTime(k), tomb: val[0] == 1}
		if !v.tomb {
			v.value = bytes.Clone(val[1:])
		}
		e.versions = append(e.versions, v)
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if e != nil && len(e.versions) == 0 {
		return nil, fmt.Errorf("corrupt entry of %q: trimmed without versions", key)
	}
	return e, nil
}

// entrySize is about what e of key holds in memory, cached.
func entrySize(key string, e *entry) int64 {
	n := int64(len(key)) + 160 // the map's, the list's and the entry's
	if e == nil {
		return n - 40 // a key known to have none
	}
	for _, v := range e.versions {
		n += int64(len(v.value)) + 40
	}
	return n
}

// remember caches key's entry e (again: its size may have changed), and
// forgets the least recently used ones beyond the budget.
func (d *disk) remember(key string, e *entry) {
	if el := d.entries[key]; el != nil {
		c := el.Value.(*cachedEntry)
		d.cached -= c.size
		c.e, c.size = e, entrySize(key, e)
		d.cached += c.size
		d.lru.MoveToFront(el)
	} else {
		key = string([]byte(key)) // key may alias a record's memory
		c := &cachedEntry{key: key, e: e, size: entrySize(key, e)}
		d.entries[key] = d.lru.PushFront(c)
		d.cached += c.size
	}
	for d.cached > d.cacheMax && d.lru.Len() > 0 {
		d.forget(d.lru.Back().Value.(*cachedEntry).key)
	}
}

// forget drops key's entry from the cache.
func (d *disk) forget(key string) {
	if el := d.entries[key]; el != nil {
		d.cached -= el.Value.(*cachedEntry).size
		d.lru.Remove(el)
		delete(d.entries, key)
	}
}

// put is Table.Put's: key's entry, from the cache or read, changed as in
// memory, counted in t's size, and cached; the version and its 'x' key
// written.
func (d *disk) put(t *Table, key string, v version) {
	e := d.entry(key, false)
	if d.err != nil {
		return
	}
	if e == nil {
		e = &entry{}
		t.nkeys.Add(1)
	}
	t.count(e.put(v))
	d.remember(key, e)
	p := prefix(nil, 'k', key)
	d.write(d.b.Set(appendTime(p, v.at), encodeVersion(nil, v), nil))
	x := indexKey(v.at, key)
	d.write(d.b.Set(x, nil, nil))
	if d.trimFrom != nil && v.at < d.trimBound && bytes.Compare(x, d.trimFrom) < 0 {
		d.trimBehind = true // the pass under way has gone past it
	}
	d.commit(false)
}

// write notes a write to the batch.
func (d *disk) write(err error) {
	if err != nil {
		d.fail(err)
	}
	d.stale = true
}

// indexKey is the 'x' key of key's version at at.
func indexKey(at int64, key string) []byte {
	return append(appendTime([]byte{'x'}, at), prefix(nil, 0, key)[1:]...)
}

// parseIndex is the key of an 'x' key.
func parseIndex(k []byte) (string, error) {
	rest := k[min(len(k), 9):]
	n, w := binary.Uvarint(rest)
	if len(k) < 9 || w <= 0 || uint64(len(rest)-w) != n {
		return "", fmt.Errorf("corrupt index key %x", k)
	}
	return string(rest[w:]), nil
}

// trimChunk is how many 'x' keys a trim reads before it writes.
const trimChunk = 1024

// trimKeys is how many keys a Trim visits at most (disk.trimMax): the trim
// of a large table spreads over the Trims that follow it, each a bounded
// pause of the engine's goroutine.
const trimKeys = 1024

// trim is Table.Trim's: it starts a trim pass to bound, or moves the pass
// under way on to bound, and goes on with it for at most trimMax keys.
// A pass trims each key with an 'x' key below its bound as in memory, in
// the 'x' keys' order, and writes the change; it ends when no 'x' key
// below its bound is left, after a second pass from the start if a put
// wrote one behind it meanwhile (trimBehind).
func (d *disk) trim(t *Table, bound int64) {
	if d.trimFrom == nil {
		d.trimFrom, d.trimBound = []byte{'x'}, bound
	}
	d.trimBound = max(d.trimBound, bound)
	seen := map[string]bool{}
	for budget := d.trimMax; d.err == nil && budget > 0; {
		var keys []string
		clear(seen)
		it := d.iter(bytes.Clone(d.trimFrom), appendTime([]byte{'x'}, d.trimBound))
		for ok := it.First(); ok && len(keys) < min(trimChunk, budget); ok = it.Next() {
			key, err := parseIndex(it.Key())
			if err != nil {
				d.fail(err)
				return
			}
			if !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
			// the next chunk starts after this key: progress even if a
			// trim left it
			d.trimFrom = append(append(d.trimFrom[:0], it.Key()...), 0)
		}
		if err := it.Error(); err != nil {
			d.fail(err)
		}
		if d.err != nil {
			return
		}
		if len(keys) == 0 { // the pass is over
			if d.trimBehind {
				d.trimFrom, d.trimBehind = append(d.trimFrom[:0], 'x'), false
				continue
			}
			d.trimFrom = nil
			return
		}
		for _, key := range keys {
			d.trimKey(t, key, d.trimBound)
		}
		budget -= len(keys)
	}
}

// trimKey trims key, which has an 'x' key below bound: the versions it
// drops, its 'x' keys below bound and its trimmed mark written.
func (d *disk) trimKey(t *Table, key string, bound int64) {
	e := d.entry(key, false)
	if e == nil {
		if d.err == nil {
			d.fail(fmt.Errorf("corrupt: %q is indexed but has no version", key))
		}
		return
	}
	old := append([]version(nil), e.versions...)
	wasTrimmed := e.trimmed
	forget := t.trimmed(e, bound)
	p := prefix(nil, 'k', key)
	kept := e.versions
	if forget {
		kept = nil
		d.forget(key)
	} else {
		d.remember(key, e)
	}
	for _, v := range old {
		if _, found := slices.BinarySearchFunc(kept, v.at, func(k version, at int64) int { return cmpInt(k.at, at) }); !found {
			d.write(d.b.Delete(appendTime(p, v.at), nil))
		}
		if v.at < bound {
			d.write(d.b.Delete(indexKey(v.at, key), nil))
		}
	}
	switch {
	case forget && wasTrimmed:
		d.write(d.b.Delete(p, nil))
	case !forget && e.trimmed && !wasTrimmed:
		d.write(d.b.Set(p, nil, nil))
	}
	d.commit(false)
}

// sizes are the table's keys, versions and their values' bytes, read
// from pebble: a scan of the whole table.
func (d *disk) sizes() (keys, versions int, bytes int64) {
	if d.err != nil {
		return 0, 0, 0
	}
	it := d.iter([]byte{'k'}, []byte{'k' + 1})
	var last []byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		n, w := binary.Uvarint(k[1:])
		if w <= 0 || len(k) < 1+w+int(n) {
			d.fail(fmt.Errorf("corrupt key %x", k))
			return 0, 0, 0
		}
		if p := k[:1+w+int(n)]; !slicesEqual(p, last) {
			keys++
			last = append(last[:0], p...)
		}
		if len(k) == 1+w+int(n) {
			continue // the trimmed mark
		}
		versions++
		v, err := it.ValueAndErr()
		if err != nil {
			d.fail(err)
			return 0, 0, 0
		}
		if len(v) > 0 && v[0] == 0 {
			bytes += int64(len(v) - 1)
		}
	}
	if err := it.Error(); err != nil {
		d.fail(err)
	}
	return keys, versions, bytes
}

func slicesEqual(a, b []byte) bool { return string(a) == string(b) }

func encodeVersion(buf []byte, v version) []byte {
	if v.tomb {
		return append(buf, 1)
	}
	return append(append(buf, 0), v.value...)
}
