package durable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/btree"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/record"
)

// StoreOptions configure OpenStore. The zero value is usable: EnsureDefaults
// fills every unset field with the default documented on it.
type StoreOptions struct {
	// MemoryBudget bounds, in bytes, everything the store holds in memory
	// (Store invariant 3): pebble's memtables (up to two of MemTableSize),
	// its block cache (CacheSize) and WAL queue (1/64 of the budget,
	// between 1 MiB and MemTableSize; see Store invariant 6), the write
	// buffers (1 MiB), and the in-memory part of the parked set, which
	// gets half the rest (the other half is the garbage collector's);
	// beyond it parked records live only in pebble. When the first four
	// exceed the budget, nothing parked is kept in memory. Default 256 MiB.
	MemoryBudget int64
	// MustExist makes OpenStore fail with ErrMissing unless the directory
	// already holds a store, instead of creating one. Set it when a previous
	// run is known to have written state there. Default false.
	MustExist bool
	// FS is the file system; tests pass vfs.NewMem or an errorfs wrapper.
	// Default vfs.Default.
	FS vfs.FS
	// CacheSize is pebble's block cache, in bytes. Default: MemoryBudget / 32,
	// between 512 KiB and DefaultCacheSize (8 MiB).
	CacheSize int64
	// MemTableSize is the size of one pebble memtable, in bytes; larger
	// memtables make spilling cheaper (most records parked on disk are then
	// deleted before a flush writes them to a table, and fewer flushes make
	// fewer tables to compact). pebble keeps up to two outside the Go heap.
	// Default: MemoryBudget / 8, but at least the smaller of
	// MemoryBudget / 4 and 4 MiB, between 1 MiB and DefaultMemTableSize
	// (64 MiB); must be below 4 GiB.
	MemTableSize uint64
	// DiskReserve is the free space, in bytes, the store keeps on the file
	// system under its directory. OpenStore refuses to open, and a write
	// fails with ErrDiskFull, when less is available: pebble cannot survive
	// running out of space (it panics while creating a WAL file and cannot
	// even be closed), so the store stops first. It is checked before every
	// commit; a file system that cannot report its usage is not checked.
	// Default: 4 × MemTableSize + 32 MiB (room for a WAL, a memtable flush
	// and the compactions that follow it).
	DiskReserve int64
	// Logger receives pebble's messages. Default: discarded. Its Fatalf must
	// not return; the default panics, and the store turns that panic into a
	// sticky error when it happens inside one of its calls.
	Logger pebble.Logger
}

// pebble's L0 thresholds and table block size for the store; see
// OpenStore.
const (
	l0CompactionThreshold = 32
	l0StopWritesThreshold = 64
	tableBlockSize        = 32 << 10
)

// minMemTable is the smallest default memtable of a budget of at least
// 4 × minMemTable (StoreOptions.MemTableSize): smaller memtables flush and
// compact records that are still parked (docs/bench.md).
const minMemTable = 4 << 20

// MaxMemoryBudget bounds StoreOptions.MemoryBudget, as
// signalbox.MaxParkedLimit bounds the parked bytes without a store.
const MaxMemoryBudget = 1 << 40

// Defaults of StoreOptions.
const (
	DefaultMemoryBudget = 256 << 20
	DefaultCacheSize    = 8 << 20
	DefaultMemTableSize = 64 << 20
)

// EnsureDefaults fills the unset fields of o with their defaults.
func (o *StoreOptions) EnsureDefaults() {
	if o.MemoryBudget == 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.CacheSize == 0 {
		o.CacheSize = min(max(o.MemoryBudget/32, 512<<10), DefaultCacheSize)
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = uint64(min(max(o.MemoryBudget/8, min(o.MemoryBudget/4, minMemTable), 1<<20),
			DefaultMemTableSize))
	}
	if o.DiskReserve == 0 {
		o.DiskReserve = 4*int64(o.MemTableSize) + 32<<20
	}
	if o.Logger == nil {
		o.Logger = quietLogger{}
	}
}

// InMemoryBudget is the budget of the in-memory part of the parked set,
// for options with their defaults applied: half of what MemoryBudget leaves
// after pebble's memtables, cache and WAL queue and the write buffers
// (Store invariant 3). The other half is the garbage collector's headroom:
// the Go heap grows past its live size between collections (by the GOGC
// percentage), and the in-memory part is most of the store's live heap.
func (o *StoreOptions) InMemoryBudget() int64 {
	return max(o.MemoryBudget-2*int64(o.MemTableSize)-o.CacheSize-o.walQueue()-2*batchRetain, 0) / 2
}

// walQueue bounds pebble's WAL queue in memory: the most bytes committed
// NoSync between two synced commits (Store invariant 6). 1/64 of the
// budget, between 1 MiB and MemTableSize.
func (o *StoreOptions) walQueue() int64 {
	return max(min(o.MemoryBudget/64, int64(o.MemTableSize)), 1<<20)
}

// Validate reports the first invalid field of o, after defaults.
func (o *StoreOptions) Validate() error {
	switch {
	case o.MemoryBudget < 0 || o.MemoryBudget > MaxMemoryBudget:
		return fmt.Errorf("durable: %w", fielderr.New("memory_budget", "%d bytes is out of range: must be ≥ 0 and at most 1 TiB", o.MemoryBudget))
	case o.CacheSize < 0:
		return fmt.Errorf("durable: CacheSize %d is negative", o.CacheSize)
	case o.DiskReserve < 0:
		return fmt.Errorf("durable: DiskReserve %d is negative", o.DiskReserve)
	case o.MemTableSize >= 4<<30:
		return fmt.Errorf("durable: MemTableSize %d must be below 4 GiB", o.MemTableSize)
	}
	return nil
}

// fatalError is the panic value of quietLogger.Fatalf.
type fatalError struct{ msg string }

func (f fatalError) Error() string { return f.msg }

// quietLogger discards pebble's messages and panics on fatal ones: the core
// logs nothing, and a library must not exit the process.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fatalError{msg: fmt.Sprintf(format, args...)})
}

// markerName is the file that tells a signalbox state directory from any
// other directory. It is written last when a store is created.
const markerName = "SIGNALBOX-STATE"

func markerContent() string { return fmt.Sprintf("signalbox parked store, format %d\n", formatVersion) }

// OpenStore opens the store in dir, creating it if dir is absent or empty
// (unless opts.MustExist), and restores the parked set of the last
// checkpoint (Store invariant 4). Errors wrap ErrMissing, ErrCorrupt or
// ErrIncompatible when the directory is not usable as it is; OpenStore never
// silently starts from scratch over existing state.
func OpenStore(dir string, opts StoreOptions) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	exists, err := checkDir(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	if !exists && opts.MustExist {
		return nil, fmt.Errorf("%w: %s holds no signalbox state", ErrMissing, dir)
	}
	if err := checkSpace(opts.FS, dir, opts.DiskReserve); err != nil {
		return nil, err
	}
	cache := pebble.NewCache(opts.CacheSize)
	po := &pebble.Options{
		FS:                 opts.FS,
		Cache:              cache,
		MemTableSize:       opts.MemTableSize,
		Logger:             opts.Logger,
		ErrorIfNotExists:   exists,
		FormatMajorVersion: pebble.FormatNewest,
		// Spilled records are deleted soon after they are flushed, so
		// compacting L0 eagerly mostly rewrites data a range deletion is
		// about to drop. Every flush carries a checkpoint's DeleteRange of
		// old keys and new keys above the parked ones, so its table spans
		// the whole parked range and is an L0 sublevel of its own: with
		// low thresholds (pebble's 4 and 12, or the 8 and 32 used before)
		// an L0 compaction rewrites every parked record after a few
		// flushes. 32 and 64 cut the CPU of BenchmarkStore/spilled-16MiB
		// by about a third (docs/bench.md).
		L0CompactionThreshold: l0CompactionThreshold,
		L0StopWritesThreshold: l0StopWritesThreshold,
	}
	// Release reads tables sequentially: 32 KiB blocks (pebble's default
	// is 4 KiB) take an eighth of the block loads, reads and decompressions.
	po.Levels[0].BlockSize = tableBlockSize
	db, err := pebble.Open(dir, po)
	if err != nil {
		cache.Unref()
		if errors.Is(err, pebble.ErrDBDoesNotExist) || errors.Is(err, os.ErrNotExist) ||
			pebble.IsCorruptionError(err) {
			return nil, fmt.Errorf("%w: open %s: %v", ErrCorrupt, dir, err)
		}
		// Anything else (the directory lock is held, permissions, I/O) is
		// not a statement about the content.
		return nil, fmt.Errorf("durable: open store %s: %w", dir, err)
	}
	s := &Store{
		opts:     opts,
		dir:      dir,
		db:       db,
		cache:    cache,
		index:    btree.NewWithFreeListG(degree, lessSlot, btree.NewFreeListG[*slot](freeListSize)),
		memLimit: opts.InMemoryBudget(),
		walQueue: opts.walQueue(),
		maxOff:   map[record.TopicPartition]*int64{},
		wb:       db.NewBatch(pebble.WithMaxRetainedSizeBytes(batchRetain)),
	}
	if err = s.init(dir, exists); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// checkSpace returns ErrDiskFull when the file system under dir (or, while
// dir does not exist yet, under its parent) has less than reserve bytes
// available. A file system that cannot tell passes.
func checkSpace(fs vfs.FS, dir string, reserve int64) error {
	path := dir
	if _, err := fs.Stat(dir); err != nil {
		path = fs.PathDir(dir)
	}
	u, err := fs.GetDiskUsage(path)
	if err != nil || u.AvailBytes >= uint64(reserve) {
		return nil
	}
	return fmt.Errorf("%w: %s has %d bytes free, below the reserve of %d: free space there and restart (nothing parked is lost)",
		ErrDiskFull, dir, u.AvailBytes, reserve)
}

// checkDir reports whether dir holds a store. An absent or empty directory
// holds none; a directory with other content but no marker is incompatible.
func checkDir(fs vfs.FS, dir string) (bool, error) {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("durable: read state directory: %w", err)
	}
	if len(names) == 0 {
		return false, nil
	}
	data, err := readFile(fs, fs.PathJoin(dir, markerName))
	if errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("%w: %s is not empty and is not a signalbox state directory (no %s)",
			ErrIncompatible, dir, markerName)
	}
	if err != nil {
		return false, fmt.Errorf("%w: read %s: %v", ErrCorrupt, markerName, err)
	}
	if string(data) != markerContent() {
		return false, fmt.Errorf("%w: %s says %q, want %q", ErrIncompatible, markerName, data, markerContent())
	}
	return true, nil
}

func readFile(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, 1<<10))
}

// init creates a new store's metadata, or checks and loads an existing one.
func (s *Store) init(dir string, exists bool) error {
	if !exists {
		return s.create(dir)
	}
	v, closer, err := s.db.Get(keyFormat)
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("%w: format key missing", ErrCorrupt)
	}
	if err != nil {
		return fmt.Errorf("%w: read format: %v", ErrCorrupt, err)
	}
	ok := len(v) == 8 && binary.BigEndian.Uint64(v) == formatVersion
	got := fmt.Sprintf("%x", v)
	_ = closer.Close()
	if !ok {
		return fmt.Errorf("%w: format %s, want %d", ErrIncompatible, got, formatVersion)
	}
	if err := s.loadCheckpoint(); err != nil {
		return err
	}
	return s.loadParked()
}

// create writes the format key (synced), then the marker file.
func (s *Store) create(dir string) error {
	if err := s.db.Set(keyFormat, binary.BigEndian.AppendUint64(nil, formatVersion), pebble.Sync); err != nil {
		return fmt.Errorf("durable: create store: %w", err)
	}
	fs := s.opts.FS
	f, err := fs.Create(fs.PathJoin(dir, markerName), vfs.WriteCategoryUnspecified)
	if err == nil {
		_, err = io.WriteString(f, markerContent())
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		var d vfs.File
		if d, err = fs.OpenDir(dir); err == nil {
			err = d.Sync()
			_ = d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("durable: create store marker: %w", err)
	}
	return nil
}

func binaryGen(gen uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 64), gen) }

// loadCheckpoint reads the checkpoint and its blobs.
func (s *Store) loadCheckpoint() error {
	v, closer, err := s.db.Get(keyCheckpoint)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: read checkpoint: %v", ErrCorrupt, err)
	}
	defer func() { _ = closer.Close() }()
	var cp record.Checkpoint
	if len(v) < genLen {
		return fmt.Errorf("%w: checkpoint of %d bytes", ErrCorrupt, len(v))
	}
	if err := record.DecodeCheckpoint(v[genLen:], &cp); err != nil {
		return fmt.Errorf("%w: checkpoint: %v", ErrCorrupt, err)
	}
	s.gen, s.cp = binary.BigEndian.Uint64(v), &cp
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: blobLower, UpperBound: blobUpper})
	if err != nil {
		return fmt.Errorf("%w: read blobs: %v", ErrCorrupt, err)
	}
	s.blobs = map[string][]byte{}
	for it.First(); it.Valid(); it.Next() {
		s.blobs[string(it.Key()[len(blobLower):])] = append([]byte{}, it.Value()...)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("%w: read blobs: %v", ErrCorrupt, err)
	}
	return nil
}

// loadParked rebuilds the index from the parked range, loading payloads into
// memory in release order up to the budget, and deletes values written after
// the last checkpoint (Store invariant 4).
func (s *Store) loadParked() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: parkedLower, UpperBound: parkedUpper})
	if err != nil {
		return fmt.Errorf("%w: scan: %v", ErrCorrupt, err)
	}
	err = s.scanParked(it)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%w: scan: %v", ErrCorrupt, cerr)
	}
	if err != nil {
		return err
	}
	return s.flush()
}

func (s *Store) scanParked(it *pebble.Iterator) error {
	spill := false
	for it.First(); it.Valid(); it.Next() {
		p, err := decodePosKey(it.Key())
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("%w: read %+v: %v", ErrCorrupt, p, err)
		}
		gen, _, err := cutGen(v)
		if err != nil {
			return fmt.Errorf("%w: %+v: %v", ErrCorrupt, p, err)
		}
		if gen > s.gen {
			if err := s.wb.Delete(it.Key(), nil); err != nil {
				return s.fail(err)
			}
			continue
		}
		s.seen(p)
		if !spill {
			r, _, err := decodeValue(v)
			if err != nil {
				return fmt.Errorf("%w: %+v: %v", ErrCorrupt, p, err)
			}
			if size := slotOverhead + len(p.Key) + r.Size(); s.memBytes+int64(size) <= s.memLimit {
				s.index.ReplaceOrInsert(&slot{pos: p, rec: r, size: size, state: slotPersisted})
				s.memBytes += int64(size)
				continue
			}
			spill = true // keep release order: everything after stays on disk
			s.diskMin, s.diskMinOK = p, true
		}
		s.diskLen++
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("%w: scan: %v", ErrCorrupt, err)
	}
	return nil
}

// ResetStore removes the store in dir so that the next OpenStore starts
// empty (the --reset-state path: the engine then rebuilds from Kafka's
// committed offsets). It removes only files a store writes and refuses, with
// an error, a directory holding anything else. A missing dir is not an error.
func ResetStore(dir string) error { return resetStore(vfs.Default, dir) }

func resetStore(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("durable: reset state: %w", err)
	}
	for _, n := range names {
		if !isStoreFile(n) {
			return fmt.Errorf("durable: reset state: refusing to remove %s: %q is not a store file",
				dir, n)
		}
	}
	lock, err := fs.Lock(fs.PathJoin(dir, "LOCK"))
	if err != nil {
		return fmt.Errorf("durable: reset state: %s is in use: %w", dir, err)
	}
	// The marker goes first: an interrupted reset leaves no half store that
	// could pass for a complete one.
	for _, n := range append([]string{markerName}, names...) {
		if n == "LOCK" {
			continue
		}
		if err := fs.Remove(fs.PathJoin(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			_ = lock.Close()
			return fmt.Errorf("durable: reset state: %w", err)
		}
	}
	if err := lock.Close(); err != nil {
		return fmt.Errorf("durable: reset state: %w", err)
	}
	if err := fs.RemoveAll(dir); err != nil {
		return fmt.Errorf("durable: reset state: %w", err)
	}
	return nil
}

// isStoreFile reports whether name is a file pebble or the store writes.
func isStoreFile(name string) bool {
	switch {
	case name == markerName, name == "LOCK", name == "CURRENT":
		return true
	case strings.HasPrefix(name, "MANIFEST-"), strings.HasPrefix(name, "OPTIONS-"),
		strings.HasPrefix(name, "marker."):
		return true
	}
	for _, ext := range []string{".sst", ".log", ".blob", ".dbtmp"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}
