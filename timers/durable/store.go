package durable

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/btree"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// Sentinel errors of the Store. They are wrapped with detail; test with
// errors.Is.
var (
	// ErrMissing surfaces from OpenStore with StoreOptions.MustExist when the
	// directory does not hold a store (absent or empty): state that was
	// expected is gone, and starting from scratch would silently re-emit or
	// lose records.
	ErrMissing = errors.New("durable: state directory missing")
	// ErrCorrupt surfaces from OpenStore when the directory is a signalbox
	// store but its content cannot be read back (damaged or missing pebble
	// files, an undecodable key, value or checkpoint), and from Release when
	// a spilled record cannot be loaded. Recover with ResetStore.
	ErrCorrupt = errors.New("durable: state directory corrupt")
	// ErrIncompatible surfaces from OpenStore when the directory holds
	// something else: a store of another format version, a pebble database
	// not written by signalbox, or unrelated files.
	ErrIncompatible = errors.New("durable: state directory incompatible")
	// ErrDiskFull surfaces from OpenStore, and from Park, Release and
	// Checkpoint through the sticky failure, when the file system under the
	// directory has less free space than StoreOptions.DiskReserve. Nothing
	// acknowledged is lost: free space and reopen to restart from the last
	// checkpoint.
	ErrDiskFull = errors.New("durable: state directory full")
	// ErrClosed surfaces from every method called after Close.
	ErrClosed = errors.New("durable: store closed")
)

// formatVersion is stored under keyFormat and in the marker file. Bump it on
// any change of the key or value layout, including the checkpoint encoding
// of record.AppendCheckpoint. Version 2: checkpoints carry a watermark per
// partition.
const formatVersion = 2

// slot states.
const (
	slotDirty     = iota // payload in memory only; written at the next checkpoint
	slotPersisted        // payload in memory and on disk
	slotReleased         // gone; still referenced from the dirty list
)

// slot is one record of the in-memory part.
type slot struct {
	pos     timers.Pos
	rec     *record.Record
	size    int // bytes accounted for this slot in Bytes
	state   uint8
	inDirty bool // referenced from Store.dirty
}

// lessSlot orders slots by Less of their positions.
func lessSlot(a, b *slot) bool {
	return timers.Less(a.pos, b.pos)
}

// degree of the index btree and the number of its released nodes kept for
// reuse, as in timers.Queue.
const (
	degree       = 32
	freeListSize = 256
)

// freeSlots is how many unused slots the store keeps for reuse, so that a
// steady park/release cycle allocates no index entries. Beyond it released
// slots go to the garbage collector: the pool never holds more than about
// 1 MiB outside the budget.
const freeSlots = 1 << 13

// batchRetain is the largest pending-write buffer the store keeps between
// flushes (pebble's default of 1 MiB would drop every buffer just above
// writeChunk and grow a new one from 1 KiB).
const batchRetain = 2 * writeChunk

// slotOverhead approximates the memory of one in-memory entry besides its
// key string: the slot, the btree item pointer and the Pos strings' headers.
const slotOverhead = 96

// writeChunk is the size at which pending NoSync writes are committed.
const writeChunk = 256 << 10

// Store is a parked set that stays within a memory budget and survives
// restarts. It is the durable counterpart of timers.Queue. The parked set
// has two parts: an in-memory btree ordered by Less, which holds records
// with their payload while the budget allows, and pebble, which holds every
// other parked record under a key that sorts in Less order and keeps
// nothing of it in memory. Release merges the two in key order.
//
// Lifecycle: OpenStore → Restore (once, to learn the last checkpoint) →
// any sequence of Park, Release and Checkpoint → Close. A Store is not safe
// for concurrent use.
//
// Invariants:
//
//  1. pebble's byte order of parked keys is the release order: bytes.Compare
//     of two keys agrees with Less of their positions (see encode.go).
//  2. Release(w) hands every parked record with event time ≤ w to fn, in Less
//     order, whether it is in memory or only on disk. A record leaves the
//     store only after fn returned nil for it.
//  3. Everything the store holds in memory stays within MemoryBudget:
//     pebble's memtables (up to 2 × MemTableSize), block cache (CacheSize)
//     and WAL queue (see 6), the write buffers (2 × 512 KiB), and the
//     in-memory part, which gets half the rest (its payloads plus
//     slotOverhead and the key per record; the other half is the garbage
//     collector's headroom, see config.GCPercent). A record that does not
//     fit goes to pebble on Park and costs no memory while parked: the
//     index spills too. (The one exception is a record parked at or below
//     the last position released, which the engine never parks: it is
//     late. It stays in memory, see 8.)
//  4. Every parked value on disk carries a generation. Checkpoint n writes
//     generation n and commits it, its deletions, the blobs and the
//     checkpoint itself atomically, with one synced commit. OpenStore
//     discards values of a generation above the last checkpoint, so reopening
//     restores exactly the parked set of the last checkpoint, whatever was
//     written after it, in the same order.
//  5. Nothing is deleted from pebble between checkpoints. A checkpoint deletes
//     the keys released since the previous one with DeleteRange, cutting the
//     ranges around every key still parked, so a record that has not been
//     handed to Release's fn is never deleted.
//  6. All other writes are NoSync, except one commit per
//     StoreOptions.walQueue bytes of them (1/64 of the budget, 1 MiB to
//     MemTableSize), which is synced: pebble copies a NoSync commit into
//     32 KiB blocks that a background goroutine writes out, and keeps
//     every block it allocated until its WAL rotates; when that goroutine
//     falls behind (a busy machine) the blocks pile up in the Go heap. A
//     synced commit waits for them to drain. There is never an fsync per
//     record.
//  7. Errors from pebble are sticky: the store is failed and every later call
//     returns the error. Close it and reopen to restart from the last
//     checkpoint.
//  8. The cursor is the greatest position released since OpenStore. A key
//     on disk above the cursor is parked: only in pebble, or also in memory
//     (written by a checkpoint; Release then takes it from memory and skips
//     the disk copy). A key at or below it is released, awaiting the next
//     checkpoint's DeleteRange; so a record parked at or below the cursor
//     is kept in memory, never only on disk.
//  9. Parking a position already parked keeps the first copy. Offsets grow
//     within a partition, so only a Park at or below the highest offset
//     seen for its partition looks for an earlier copy (in memory, then in
//     pebble); every other Park is known to be new without a lookup.
//
// A record released after the last checkpoint and parked again before the
// next one (a re-read) keeps the generation it has on disk, so a restart
// before the next checkpoint still restores it: it was parked at the last
// checkpoint.
type Store struct {
	opts  StoreOptions
	dir   string
	db    *pebble.DB
	cache interface{ Unref() }

	index    *btree.BTreeG[*slot] // the in-memory part
	free     []*slot              // unused slots, at most freeSlots
	probe    slot                 // search key for index lookups
	memBytes int64                // payload + entry bytes of the in-memory part
	memLimit int64                // the budget of the in-memory part (invariant 3)
	diskLen  int                  // parked records only in pebble

	// diskMin is the first parked key on disk (invariant 8) when diskMinOK;
	// a Release that took records from disk leaves it unknown until Min
	// needs it.
	diskMin              timers.Pos
	diskMinOK, diskStale bool
	// cursor is the greatest position released (invariant 8).
	cursor    timers.Pos
	hasCursor bool
	// maxOff is the highest offset parked per partition (invariant 9);
	// lastTP and lastMax cache the last lookup.
	maxOff  map[record.TopicPartition]*int64
	lastTP  record.TopicPartition
	lastMax *int64

	gen   uint64 // generation of the last checkpoint (0: none yet)
	cp    *record.Checkpoint
	blobs map[string][]byte

	dirty     []*slot // slots parked since the last checkpoint, some released since
	liveDirty int     // entries of dirty still in state slotDirty

	// [relLo, relHi] covers every key released since the last checkpoint that
	// may be on disk; hasRel reports whether the range is non-empty.
	relLo, relHi timers.Pos
	hasRel       bool

	wb      *pebble.Batch // NoSync writes to commit at the next flush
	pending []pendingPut  // parked values to add to wb at the next flush
	order   []pendingRef  // pending in key order, built by flush
	valBuf  []byte        // the values of pending
	keyBuf  []byte
	endBuf  []byte       // second key buffer of deleteReleased
	memKey  []byte       // key of the in-memory record Release compares
	lastKey []byte       // key of the last record Release took from disk
	rel     releaseAlloc // memory of the records Release loads

	unsynced int64 // bytes committed NoSync since the last synced commit
	walQueue int64 // opts.walQueue()

	err    error // sticky failure
	wedged bool  // pebble panicked in a commit and cannot be closed
	closed bool
}

// Restore returns the last checkpoint and its blobs, as found when the store
// was opened or as last written by Checkpoint. It returns nil, nil, nil for a
// store that has never been checkpointed. The returned values are copies.
func (s *Store) Restore() (*record.Checkpoint, map[string][]byte, error) {
	if err := s.usable(); err != nil {
		return nil, nil, err
	}
	if s.cp == nil {
		return nil, nil, nil
	}
	cp := *s.cp
	cp.Partitions = append([]record.PartitionCheckpoint(nil), s.cp.Partitions...)
	return &cp, cloneBlobs(s.blobs), nil
}

// ParkCopies reports true: Park never keeps r or the memory its slices
// point into (signalbox.ParkCopier).
func (s *Store) ParkCopies() bool { return true }

// Park adds r at p. A record kept in memory is copied (key, value and
// headers), so that a record parked for long never pins the fetch buffer its
// slices point into; one that goes to pebble is serialized at once. The
// caller keeps r. Parking a position that is already parked keeps the copy
// parked first (a re-read after a restart carries the same record) and
// returns nil (invariant 9).
func (s *Store) Park(p timers.Pos, r *record.Record) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.seen(p) {
		if dup, err := s.parked(p); dup || err != nil {
			return err
		}
	}
	size := slotOverhead + len(p.Key) + r.Size()
	if s.memBytes+int64(size) <= s.memLimit || s.hasCursor && !timers.Less(s.cursor, p) {
		rec := detach(r)
		if p.Key == rec.OrderKey {
			p.Key = rec.OrderKey // the copy's (detach): the slot must not pin the fetch
		}
		sl := s.newSlot(p)
		s.index.ReplaceOrInsert(sl)
		sl.rec, sl.size, sl.state = rec, size, slotDirty
		s.memBytes += int64(size)
		s.addDirty(sl)
		return nil
	}
	s.diskLen++
	if !s.diskStale && (!s.diskMinOK || timers.Less(p, s.diskMin)) {
		p.Key = strings.Clone(p.Key) // kept: it must not pin the fetch
		s.diskMin, s.diskMinOK = p, true
	}
	return s.put(p, r)
}

// seen reports whether p's offset is at or below the highest offset parked
// for its partition, and raises that offset otherwise (invariant 9).
func (s *Store) seen(p timers.Pos) bool {
	if s.lastMax == nil || p.Partition != s.lastTP.Partition || p.Input != s.lastTP.Topic {
		tp := record.TopicPartition{Topic: p.Input, Partition: p.Partition}
		m, ok := s.maxOff[tp]
		if !ok {
			m = new(int64)
			*m = p.Offset
			s.maxOff[tp] = m
			s.lastTP, s.lastMax = tp, m
			return false
		}
		s.lastTP, s.lastMax = tp, m
	}
	if p.Offset > *s.lastMax {
		*s.lastMax = p.Offset
		return false
	}
	return true
}

// parked reports whether p is parked, in memory or only on disk.
func (s *Store) parked(p timers.Pos) (bool, error) {
	s.probe.pos = p
	_, ok := s.index.Get(&s.probe)
	s.probe.pos = timers.Pos{}
	if ok {
		return true, nil
	}
	if s.hasCursor && !timers.Less(s.cursor, p) {
		return false, nil // on disk at or below the cursor: released
	}
	if err := s.flush(); err != nil {
		return false, err
	}
	_, closer, err := s.db.Get(appendPosKey(s.keyBuf[:0], p))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, s.fail(err)
	}
	_ = closer.Close()
	return true, nil
}

// newSlot returns an unused slot at p, from the pool if it has one.
func (s *Store) newSlot(p timers.Pos) *slot {
	n := len(s.free)
	if n == 0 {
		return &slot{pos: p}
	}
	sl := s.free[n-1]
	s.free[n-1] = nil
	s.free = s.free[:n-1]
	sl.pos = p
	return sl
}

// freeSlot returns sl, which neither the index nor the dirty list references
// any longer, to the pool.
func (s *Store) freeSlot(sl *slot) {
	if len(s.free) < freeSlots {
		*sl = slot{}
		s.free = append(s.free, sl)
	}
}

// detach returns a copy of r that shares no memory with it. Key, Value and
// the header values share one allocation, each with its capacity capped; nil
// and empty slices stay nil and empty.
func detach(r *record.Record) *record.Record {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Value)
	}
	buf := make([]byte, 0, n)
	c := *r
	c.Key, buf = carve(buf, r.Key)
	c.Value, buf = carve(buf, r.Value)
	if len(r.OrderKey) > 0 && len(r.OrderKey) == len(r.Key) && unsafe.StringData(r.OrderKey) == unsafe.SliceData(r.Key) {
		// The order key shares the Kafka key's bytes (record.Record.
		// OrderKey): it moves with the copy, or it would pin the fetch.
		c.OrderKey = unsafe.String(unsafe.SliceData(c.Key), len(c.Key))
	}
	if len(r.Headers) > 0 {
		c.Headers = make([]record.Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i].Key = h.Key
			c.Headers[i].Value, buf = carve(buf, h.Value)
		}
	}
	return &c
}

// carve appends b to buf, which has room for it, and returns the copy (nil
// for a nil b) with its capacity capped, and the extended buf.
func carve(buf, b []byte) ([]byte, []byte) {
	if b == nil {
		return nil, buf
	}
	at := len(buf)
	buf = append(buf, b...)
	return buf[at:len(buf):len(buf)], buf
}

// addDirty records sl for the next checkpoint, compacting the list when most
// of it has been released.
func (s *Store) addDirty(sl *slot) {
	if len(s.dirty) >= 1024 && len(s.dirty) >= 2*s.liveDirty {
		live := s.dirty[:0]
		for _, d := range s.dirty {
			if d.state == slotDirty {
				live = append(live, d)
			} else {
				s.freeSlot(d)
			}
		}
		clear(s.dirty[len(live):])
		s.dirty = live
	}
	sl.inDirty = true
	s.dirty = append(s.dirty, sl)
	s.liveDirty++
}

// genFor is the generation a NoSync write of p carries before the next
// checkpoint: the next one, unless p is still on disk from the last
// checkpoint (it was released since and is parked again). Overwriting that
// value with a generation a restart would discard could lose it
// (invariant 4), so it keeps its generation. Only positions inside the range
// released since the last checkpoint (late records, re-reads) need the
// lookup.
func (s *Store) genFor(p timers.Pos) (uint64, error) {
	if !s.hasRel || timers.Less(p, s.relLo) || timers.Less(s.relHi, p) {
		return s.gen + 1, nil
	}
	if err := s.flush(); err != nil {
		return 0, err
	}
	v, closer, err := s.db.Get(appendPosKey(nil, p))
	if errors.Is(err, pebble.ErrNotFound) {
		return s.gen + 1, nil
	}
	if err != nil {
		return 0, s.fail(err)
	}
	defer func() { _ = closer.Close() }()
	gen, _, err := cutGen(v)
	if err != nil {
		return 0, s.fail(fmt.Errorf("%w: record %+v: %v", ErrCorrupt, p, err))
	}
	return min(gen, s.gen+1), nil
}

// pendingPut is a parked value waiting in Store.pending for the next flush:
// the value of pos is valBuf[start:end].
type pendingPut struct {
	pos        timers.Pos
	start, end int
}

// pendingRef is an entry of Store.order: the event time of pending[i].
type pendingRef struct {
	t int64
	i int32
}

// sortPending sets s.order to the indices of s.pending in Less order of
// their positions. Comparing the event times inline keeps it cheap.
func (s *Store) sortPending() {
	s.order = s.order[:0]
	for i := range s.pending {
		s.order = append(s.order, pendingRef{t: s.pending[i].pos.EventTime, i: int32(i)})
	}
	slices.SortFunc(s.order, func(a, b pendingRef) int {
		switch {
		case a.t != b.t:
			return cmp.Compare(a.t, b.t)
		case a.i == b.i:
			return 0
		case timers.Less(s.pending[a.i].pos, s.pending[b.i].pos):
			return -1
		}
		return 1
	})
}

// put adds a NoSync Set of r at p to the pending writes, committing them
// once they exceed writeChunk.
func (s *Store) put(p timers.Pos, r *record.Record) error {
	gen, err := s.genFor(p)
	if err != nil {
		return err
	}
	start := len(s.valBuf)
	s.valBuf = record.AppendBinary(appendGen(s.valBuf, gen), r)
	s.pending = append(s.pending, pendingPut{pos: p, start: start, end: len(s.valBuf)})
	if len(s.valBuf) < writeChunk {
		return nil
	}
	return s.flush()
}

// flush commits the pending writes without syncing them. It hands them to
// pebble in key order: its memtable takes ascending keys about twice as fast
// as keys in park order. No key is pending twice: releasing a spilled
// record flushes first.
func (s *Store) flush() error {
	if len(s.pending) > 0 {
		s.sortPending()
		for _, o := range s.order {
			w := &s.pending[o.i]
			s.keyBuf = appendPosKey(s.keyBuf[:0], w.pos)
			if err := s.wb.Set(s.keyBuf, s.valBuf[w.start:w.end], nil); err != nil {
				return s.fail(err)
			}
		}
		clear(s.pending)
		s.pending = s.pending[:0]
		if cap(s.valBuf) > batchRetain {
			s.valBuf = nil // after an outsized record
		} else {
			s.valBuf = s.valBuf[:0]
		}
	}
	if s.wb.Empty() {
		return nil
	}
	o := pebble.NoSync
	if s.unsynced += int64(s.wb.Len()); s.unsynced >= s.walQueue {
		o, s.unsynced = pebble.Sync, 0 // invariant 6
	}
	if err := s.commit(s.wb, o); err != nil {
		return err
	}
	s.wb.Reset()
	return nil
}

// commit commits b. pebble reports a failed WAL write by panicking, with the
// I/O error itself or through the logger's Fatalf; commit turns that into a
// sticky failure and marks pebble unusable (see Close).
func (s *Store) commit(b *pebble.Batch, o *pebble.WriteOptions) (err error) {
	if err := checkSpace(s.opts.FS, s.dir, s.opts.DiskReserve); err != nil {
		return s.fail(err)
	}
	defer func() {
		if r := recover(); r != nil {
			perr, ok := r.(error)
			if !ok {
				panic(r)
			}
			s.wedged = true
			err = s.fail(perr)
		}
	}()
	if err := b.Commit(o); err != nil {
		return s.fail(err)
	}
	return nil
}

func (s *Store) fail(err error) error {
	if s.err == nil {
		s.err = fmt.Errorf("durable: store failed: %w", err)
	}
	return s.err
}

func (s *Store) usable() error {
	if s.closed {
		return ErrClosed
	}
	return s.err
}

// Release calls fn for every parked record with event time ≤ watermark, in
// release order, and removes it from the store once fn returned nil
// (invariant 2). At most max records are released when max > 0. If fn
// returns an error, Release stops and returns it; that record stays parked.
//
// Records only on disk are read by one pebble iterator, a range scan from
// the cursor up to the watermark, merged with the in-memory part. The
// records handed to fn are owned by fn and never handed out again; fn must
// not call the Store. Records read from disk share their memory in chunks
// (see releaseAlloc), so one that fn keeps for long keeps up to 16 KiB of
// its neighbours' memory too.
func (s *Store) Release(watermark int64, max int, fn func(*record.Record) error) (err error) {
	if err := s.usable(); err != nil {
		return err
	}
	var it *pebble.Iterator
	var memSlot *slot // the slot whose key is in s.memKey
	var first timers.Pos
	fromDisk := 0 // records taken from disk in this call
	defer func() {
		if it != nil {
			if cerr := it.Close(); err == nil && cerr != nil {
				err = s.fail(cerr)
			}
		}
		if fromDisk > 0 {
			if rerr := s.releasedFromDisk(first); err == nil {
				err = rerr
			}
		}
	}()
	for n := 0; max <= 0 || n < max; n++ {
		sl, inMem := s.index.Min()
		inMem = inMem && sl.pos.EventTime <= watermark
		onDisk := false
		if s.diskLen > 0 {
			if it == nil {
				if it, err = s.scan(watermark); err != nil {
					return err
				}
			}
			if onDisk = it.Valid(); !onDisk {
				if err := it.Error(); err != nil {
					return s.fail(err)
				}
			}
		}
		if onDisk && inMem {
			if sl != memSlot {
				s.memKey, memSlot = appendPosKey(s.memKey[:0], sl.pos), sl
			}
			switch c := bytes.Compare(it.Key(), s.memKey); {
			case c == 0: // the disk copy of a persisted record
				it.Next()
			case c < 0:
				inMem = false
			default:
				onDisk = false
			}
		}
		switch {
		case inMem:
			if err := fn(sl.rec); err != nil {
				return err
			}
			if !s.hasCursor || timers.Less(s.cursor, sl.pos) {
				s.cursor, s.hasCursor = sl.pos, true
			}
			if s.diskMinOK && !timers.Less(s.cursor, s.diskMin) {
				// diskMin was the disk copy of a record now released.
				s.diskMinOK, s.diskStale = false, s.diskLen > 0
			}
			s.index.DeleteMin()
			s.drop(sl)
		case onDisk:
			r, err := s.load(it)
			if err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
			s.lastKey = append(s.lastKey[:0], it.Key()...)
			if fromDisk == 0 {
				if first, err = s.decodeKey(s.lastKey); err != nil {
					return err
				}
			}
			fromDisk++
			s.diskLen--
			it.Next()
		default:
			return nil
		}
	}
	return nil
}

// releasedFromDisk accounts for the records a Release took from disk, the
// first at first and the last at s.lastKey: the cursor moves to the last,
// and both widen the range the next checkpoint deletes.
func (s *Store) releasedFromDisk(first timers.Pos) error {
	last, err := s.decodeKey(s.lastKey)
	if err != nil {
		return err
	}
	s.noteReleased(first)
	s.noteReleased(last)
	if !s.hasCursor || timers.Less(s.cursor, last) {
		s.cursor, s.hasCursor = last, true
	}
	s.diskMinOK, s.diskStale = false, s.diskLen > 0
	return nil
}

func (s *Store) decodeKey(k []byte) (timers.Pos, error) {
	p, err := decodePosKey(k)
	if err != nil {
		return p, s.fail(fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	return p, nil
}

// drop accounts for a slot leaving the in-memory part.
func (s *Store) drop(sl *slot) {
	s.memBytes -= int64(sl.size)
	switch sl.state {
	case slotDirty:
		s.liveDirty--
	case slotPersisted:
		s.noteReleased(sl.pos)
	}
	sl.rec, sl.state = nil, slotReleased
	if !sl.inDirty {
		s.freeSlot(sl)
	}
}

// noteReleased widens the range of on-disk keys to delete at the next
// checkpoint.
func (s *Store) noteReleased(p timers.Pos) {
	switch {
	case !s.hasRel:
		s.relLo, s.relHi, s.hasRel = p, p, true
	case timers.Less(p, s.relLo):
		s.relLo = p
	case timers.Less(s.relHi, p):
		s.relHi = p
	}
}

// scan commits the pending writes, so that it sees them, and opens an
// iterator over the parked keys above the cursor (invariant 8) and at or
// below watermark, positioned at the first.
func (s *Store) scan(watermark int64) (*pebble.Iterator, error) {
	if err := s.flush(); err != nil {
		return nil, err
	}
	o := pebble.IterOptions{LowerBound: parkedLower, UpperBound: parkedUpper}
	if s.hasCursor {
		o.LowerBound = keySuccessor(appendPosKey(s.keyBuf[:0], s.cursor))
	}
	if watermark < math.MaxInt64 {
		o.UpperBound = appendTimeBound(s.endBuf[:0], watermark+1)
	}
	it, err := s.db.NewIter(&o)
	if err != nil {
		return nil, s.fail(err)
	}
	it.First()
	return it, nil
}

// load decodes the record at the iterator.
func (s *Store) load(it *pebble.Iterator) (*record.Record, error) {
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, s.fail(err)
	}
	_, rest, err := cutGen(v)
	if err == nil {
		r := s.rel.record()
		if err = record.DecodeBinary(s.rel.clone(rest), r); err == nil {
			return r, nil
		}
	}
	return nil, s.fail(fmt.Errorf("%w: record at %x: %v", ErrCorrupt, it.Key(), err))
}

// decodeValue decodes a parked value into a record that owns its bytes.
func decodeValue(v []byte) (*record.Record, uint64, error) {
	gen, rest, err := cutGen(v)
	if err != nil {
		return nil, 0, err
	}
	r := new(record.Record)
	if err := record.DecodeBinary(bytes.Clone(rest), r); err != nil {
		return nil, 0, err
	}
	return r, gen, nil
}

// Sizes of the chunks releaseAlloc carves from.
const (
	recChunk   = 64       // records
	bytesChunk = 16 << 10 // bytes; larger values get their own allocation
)

// releaseAlloc hands out the records and bytes Release decodes spilled
// payloads into, carved from shared chunks: a few allocations per chunk
// instead of two per record. Nothing is ever handed out twice, so a record
// fn keeps stays valid; a kept record only keeps its chunks from the garbage
// collector.
type releaseAlloc struct {
	recs []record.Record
	buf  []byte
}

// record returns a zero record.
func (a *releaseAlloc) record() *record.Record {
	if len(a.recs) == 0 {
		a.recs = make([]record.Record, recChunk)
	}
	r := &a.recs[0]
	a.recs = a.recs[1:]
	return r
}

// clone returns a copy of b with its capacity capped, so that appending to
// it never reaches the next copy.
func (a *releaseAlloc) clone(b []byte) []byte {
	if len(b) > bytesChunk/4 {
		return bytes.Clone(b)
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		a.buf = make([]byte, 0, bytesChunk)
	}
	at := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[at:len(a.buf):len(a.buf)]
}

// Checkpoint makes the current parked set durable together with cp and the
// opaque blobs (e.g. late counters), atomically, with one Sync (invariants 4
// to 6). The blobs replace those of the previous checkpoint. After it
// returns nil, a crash at any point restores this parked set, cp and blobs.
func (s *Store) Checkpoint(cp record.Checkpoint, blobs map[string][]byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	next := s.gen + 1
	// Records parked in memory since the last checkpoint, in NoSync chunks:
	// their generation makes them invisible to a restart until the commit
	// below succeeds.
	if err := s.writeDirty(); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := s.deleteReleased(b); err != nil {
		return err
	}
	for name := range s.blobs {
		if _, ok := blobs[name]; !ok {
			if err := b.Delete(blobKey(name), nil); err != nil {
				return s.fail(err)
			}
		}
	}
	for name, v := range blobs {
		if err := b.Set(blobKey(name), v, nil); err != nil {
			return s.fail(err)
		}
	}
	val := record.AppendCheckpoint(binaryGen(next), &cp)
	if err := b.Set(keyCheckpoint, val, nil); err != nil {
		return s.fail(err)
	}
	if err := s.commit(b, pebble.Sync); err != nil {
		return err
	}
	for _, sl := range s.dirty {
		if sl.state == slotDirty {
			sl.state, sl.inDirty = slotPersisted, false
		} else {
			s.freeSlot(sl)
		}
	}
	clear(s.dirty)
	s.dirty, s.liveDirty = s.dirty[:0], 0
	s.hasRel = false
	s.gen = next
	saved := cp
	saved.Partitions = append([]record.PartitionCheckpoint(nil), cp.Partitions...)
	s.cp, s.blobs = &saved, cloneBlobs(blobs)
	return nil
}

// writeDirty writes the payloads parked in memory since the last checkpoint
// and commits them, without syncing. When they are a good part of the index
// it takes them in key order, walking the index, so that every chunk flush
// commits is one ascending run (see flush); else it takes them in park
// order, and flush sorts each chunk.
func (s *Store) writeDirty() error {
	var err error
	if s.liveDirty*4 >= s.index.Len() {
		s.index.Ascend(func(sl *slot) bool {
			if sl.state == slotDirty {
				err = s.put(sl.pos, sl.rec)
			}
			return err == nil
		})
	} else {
		for _, sl := range s.dirty {
			if sl.state == slotDirty {
				if err = s.put(sl.pos, sl.rec); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		return err
	}
	return s.flush()
}

// deleteReleased adds to b the DeleteRanges that remove every key released
// since the last checkpoint, cut around the keys still parked (invariant 5).
func (s *Store) deleteReleased(b *pebble.Batch) error {
	if !s.hasRel {
		return nil
	}
	// start and k alternate between keyBuf and endBuf: b copies what it is
	// given, so each buffer is free again once it has been handed over.
	start := appendPosKey(s.keyBuf[:0], s.relLo)
	k := s.endBuf[:0]
	var err error
	s.index.AscendGreaterOrEqual(&slot{pos: s.relLo}, func(sl *slot) bool {
		if timers.Less(s.relHi, sl.pos) {
			return false
		}
		k = appendPosKey(k[:0], sl.pos)
		if bytes.Compare(start, k) < 0 {
			err = b.DeleteRange(start, k, nil)
		}
		start, k = keySuccessor(k), start
		return err == nil
	})
	if err == nil {
		k = keySuccessor(appendPosKey(k[:0], s.relHi))
		if bytes.Compare(start, k) < 0 {
			err = b.DeleteRange(start, k, nil)
		}
	}
	s.keyBuf, s.endBuf = start[:0], k[:0]
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// Len is the number of parked records.
func (s *Store) Len() int { return s.index.Len() + s.diskLen }

// Min returns the first parked position in release order. A Release that
// took records from disk makes the next Min look the first one up on disk
// (one seek).
func (s *Store) Min() (timers.Pos, bool) {
	sl, ok := s.index.Min()
	if s.diskLen > 0 && s.diskStale && s.err == nil {
		s.diskMin, s.diskMinOK = s.firstOnDisk()
		s.diskStale = false
	}
	switch {
	case s.diskLen > 0 && s.diskMinOK && (!ok || timers.Less(s.diskMin, sl.pos)):
		return s.diskMin, true
	case ok:
		return sl.pos, true
	}
	return timers.Pos{}, false
}

// firstOnDisk returns the first parked key on disk (invariant 8). A failure
// is sticky; it then reports none.
func (s *Store) firstOnDisk() (timers.Pos, bool) {
	it, err := s.scan(math.MaxInt64)
	if err != nil {
		return timers.Pos{}, false
	}
	defer func() { _ = it.Close() }()
	if !it.Valid() {
		if err := it.Error(); err != nil {
			_ = s.fail(err)
		}
		return timers.Pos{}, false
	}
	p, err := s.decodeKey(it.Key())
	return p, err == nil
}

// ParkedByPartition returns, per partition, how many records are parked and
// the lowest offset among them. A restart uses it to keep commits below
// records restored from the last checkpoint. It walks the in-memory part and
// scans the parked keys on disk (invariant 8), which costs a read of the
// whole parked set. A read error makes the store failed (invariant 7): the
// map may then be incomplete, and the next call of any other method returns
// the error.
func (s *Store) ParkedByPartition() map[record.TopicPartition]record.Parked {
	out := map[record.TopicPartition]record.Parked{}
	add := func(p timers.Pos) {
		tp := record.TopicPartition{Topic: p.Input, Partition: p.Partition}
		c, ok := out[tp]
		if !ok || p.Offset < c.MinOffset {
			c.MinOffset = p.Offset
		}
		c.Count++
		out[tp] = c
	}
	s.index.Ascend(func(sl *slot) bool {
		add(sl.pos)
		return true
	})
	if s.diskLen == 0 || s.err != nil {
		return out
	}
	it, err := s.scan(math.MaxInt64)
	if err != nil {
		return out
	}
	defer func() { _ = it.Close() }()
	for ; it.Valid(); it.Next() {
		p, err := s.decodeKey(it.Key())
		if err != nil {
			return out
		}
		s.probe.pos = p
		if _, inMem := s.index.Get(&s.probe); !inMem {
			add(p)
		}
		s.probe.pos = timers.Pos{}
	}
	if err := it.Error(); err != nil {
		_ = s.fail(err)
	}
	return out
}

// Bytes is the memory accounted to the in-memory part of the parked set:
// its payloads plus its entries (invariant 3). pebble's memtables and cache
// come on top, within MemoryBudget.
func (s *Store) Bytes() int64 { return s.memBytes }

// Usage is what a Store holds, for reports and benchmarks.
type Usage struct {
	InMemory int64 // Bytes: the in-memory part of the parked set
	Pebble   int64 // pebble's memtables (zombies included) and block cache in use
	Disk     int64 // bytes of pebble's files
}

// Usage reads pebble's metrics; it costs a few microseconds, not for a hot
// path.
func (s *Store) Usage() Usage {
	m := s.db.Metrics()
	return Usage{
		InMemory: s.memBytes,
		Pebble:   int64(m.MemTable.Size+m.MemTable.ZombieSize) + m.BlockCache.Size,
		Disk:     int64(m.DiskSpaceUsage()),
	}
}

// SpilledLen is the number of parked records only on disk.
func (s *Store) SpilledLen() int { return s.diskLen }

// DiskBytes is the disk space the store's files take, as pebble reports it.
func (s *Store) DiskBytes() int64 { return int64(s.db.Metrics().DiskSpaceUsage()) }

// Close releases the store. It does not checkpoint: state written since the
// last Checkpoint is discarded when the directory is opened again. Close
// returns ErrClosed when called twice.
//
// After a failed WAL write pebble cannot be closed (its commit pipeline
// stays locked), so Close then releases only the store's own memory and
// returns the failure: pebble's goroutines, files and directory lock stay
// held until the process exits. Restart the process to reopen the directory.
func (s *Store) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.index.Clear(false)
	s.dirty = nil
	if s.wedged {
		return s.err
	}
	err := s.wb.Close()
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	s.cache.Unref()
	return err
}

// cloneBlobs deep-copies m; an empty map becomes nil.
func cloneBlobs(m map[string][]byte) map[string][]byte {
	if len(m) == 0 {
		return nil
	}
	c := make(map[string][]byte, len(m))
	for k, v := range m {
		c[k] = bytes.Clone(v)
	}
	return c
}
