package timers

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/btree"

	"github.com/signalbox/signalbox/record"
)

// Sentinel errors of the Store. They are wrapped with detail; test with
// errors.Is.
var (
	// ErrMissing surfaces from OpenStore with StoreOptions.MustExist when the
	// directory does not hold a store (absent or empty): state that was
	// expected is gone, and starting from scratch would silently re-emit or
	// lose records.
	ErrMissing = errors.New("timers: state directory missing")
	// ErrCorrupt surfaces from OpenStore when the directory is a signalbox
	// store but its content cannot be read back (damaged or missing pebble
	// files, an undecodable key, value or checkpoint), and from Release when
	// a spilled record cannot be loaded. Recover with ResetStore.
	ErrCorrupt = errors.New("timers: state directory corrupt")
	// ErrIncompatible surfaces from OpenStore when the directory holds
	// something else: a store of another format version, a pebble database
	// not written by signalbox, or unrelated files.
	ErrIncompatible = errors.New("timers: state directory incompatible")
	// ErrClosed surfaces from every method called after Close.
	ErrClosed = errors.New("timers: store closed")
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
	slotSpilled          // payload on disk only
	slotReleased         // gone; still referenced from the dirty list
)

// slot is one parked record in the index.
type slot struct {
	pos     Pos
	rec     *record.Record // nil unless dirty or persisted
	size    int            // bytes accounted for this slot in Bytes
	state   uint8
	inDirty bool // referenced from Store.dirty
}

// lessSlot orders slots by Less of their positions.
func lessSlot(a, b *slot) bool {
	if a.pos.EventTime != b.pos.EventTime {
		return a.pos.EventTime < b.pos.EventTime
	}
	return lessTie(&a.pos, &b.pos)
}

// freeSlots is how many unused slots the store keeps for reuse, so that a
// steady park/release cycle allocates no index entries. Beyond it released
// slots go to the garbage collector: the pool never holds more than about
// 1 MiB outside the budget.
const freeSlots = 1 << 13

// batchRetain is the largest pending-write buffer the store keeps between
// flushes (pebble's default of 1 MiB would drop every buffer just above
// writeChunk and grow a new one from 1 KiB).
const batchRetain = 2 * writeChunk

// slotOverhead approximates the memory of one index entry besides its key
// string: the slot, the btree item pointer and the Pos strings' headers.
const slotOverhead = 96

// writeChunk is the size at which pending NoSync writes are committed.
const writeChunk = 1 << 20

// Store is a parked set that stays within a memory budget and survives
// restarts. It is the durable counterpart of Queue: an in-memory btree index
// ordered by Less is the hot path, record payloads live in memory up to
// StoreOptions.MemoryBudget and spill to pebble beyond it.
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
//     order, whether its payload is in memory or spilled. A record leaves the
//     store only after fn returned nil for it.
//  3. Payloads held in memory, plus the index entries, stay within
//     MemoryBudget: a record that would exceed it is spilled on Park. (The
//     index itself is never spilled; once it alone fills the budget every
//     payload spills and memory grows by the index entry only.)
//  4. Every parked value on disk carries a generation. Checkpoint n writes
//     generation n and commits it, its deletions, the blobs and the
//     checkpoint itself atomically, with the one Sync it does. OpenStore
//     discards values of a generation above the last checkpoint, so reopening
//     restores exactly the parked set of the last checkpoint, whatever was
//     written after it, in the same order.
//  5. Nothing is deleted from pebble between checkpoints. A checkpoint deletes
//     the keys released since the previous one with DeleteRange, cutting the
//     ranges around every key still parked, so a record that has not been
//     handed to Release's fn is never deleted.
//  6. All other writes are NoSync; there is never an fsync per record.
//  7. Errors from pebble are sticky: the store is failed and every later call
//     returns the error. Close it and reopen to restart from the last
//     checkpoint.
//
// A record released after the last checkpoint and parked again before the
// next one (a re-read) keeps the generation it has on disk, so a restart
// before the next checkpoint still restores it: it was parked at the last
// checkpoint.
type Store struct {
	opts  StoreOptions
	db    *pebble.DB
	cache interface{ Unref() }

	index    *btree.BTreeG[*slot]
	free     []*slot // unused slots, at most freeSlots
	memBytes int64   // payload + index bytes held in memory
	spilled  int     // slots in state slotSpilled

	gen   uint64 // generation of the last checkpoint (0: none yet)
	cp    *record.Checkpoint
	blobs map[string][]byte

	dirty     []*slot // slots parked since the last checkpoint, some released since
	liveDirty int     // entries of dirty still in state slotDirty

	// [relLo, relHi] covers every key released since the last checkpoint that
	// may be on disk; hasRel reports whether the range is non-empty.
	relLo, relHi Pos
	hasRel       bool

	wb      *pebble.Batch // NoSync writes to commit at the next flush
	pending []pendingPut  // parked values to add to wb at the next flush
	order   []pendingRef  // pending in key order, built by flush
	valBuf  []byte        // the values of pending
	keyBuf  []byte
	endBuf  []byte       // second key buffer of deleteReleased
	rel     releaseAlloc // memory of the records Release loads

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

// Park adds r at p. A payload kept in memory is copied (key, value and
// headers), so that a record parked for long never pins the fetch buffer its
// slices point into; a spilled one is serialized at once. The caller keeps r. Parking a position that
// is already parked keeps the copy parked first (a re-read after a restart
// carries the same record) and returns nil.
func (s *Store) Park(p Pos, r *record.Record) error {
	if err := s.usable(); err != nil {
		return err
	}
	sl := s.newSlot(p)
	if old, replaced := s.index.ReplaceOrInsert(sl); replaced {
		s.index.ReplaceOrInsert(old)
		s.freeSlot(sl)
		return nil
	}
	overhead := slotOverhead + len(p.Key)
	if size := overhead + r.Size(); s.memBytes+int64(size) <= s.opts.MemoryBudget {
		sl.rec, sl.size, sl.state = detach(r), size, slotDirty
		s.memBytes += int64(size)
		s.addDirty(sl)
		return nil
	}
	sl.size, sl.state = overhead, slotSpilled
	s.memBytes += int64(overhead)
	s.spilled++
	return s.put(p, r)
}

// newSlot returns an unused slot at p, from the pool if it has one.
func (s *Store) newSlot(p Pos) *slot {
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
func (s *Store) genFor(p Pos) (uint64, error) {
	if !s.hasRel || Less(p, s.relLo) || Less(s.relHi, p) {
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
	pos        Pos
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
		case lessTie(&s.pending[a.i].pos, &s.pending[b.i].pos):
			return -1
		}
		return 1
	})
}

// put adds a NoSync Set of r at p to the pending writes, committing them
// once they exceed writeChunk.
func (s *Store) put(p Pos, r *record.Record) error {
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
	if err := s.commit(s.wb, pebble.NoSync); err != nil {
		return err
	}
	s.wb.Reset()
	return nil
}

// commit commits b. pebble reports a failed WAL write by panicking, with the
// I/O error itself or through the logger's Fatalf; commit turns that into a
// sticky failure and marks pebble unusable (see Close).
func (s *Store) commit(b *pebble.Batch, o *pebble.WriteOptions) (err error) {
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
		s.err = fmt.Errorf("timers: store failed: %w", err)
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
// Spilled payloads are read back through one pebble iterator in key order.
// The records handed to fn are owned by fn and never handed out again; fn
// must not call the Store. Records loaded from disk share their memory in
// chunks (see releaseAlloc), so one that fn keeps for long keeps up to
// 16 KiB of its neighbours' memory too.
func (s *Store) Release(watermark int64, max int, fn func(*record.Record) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	var it *pebble.Iterator
	defer func() {
		if it != nil {
			_ = it.Close()
		}
	}()
	for n := 0; max <= 0 || n < max; n++ {
		sl, ok := s.index.Min()
		if !ok || sl.pos.EventTime > watermark {
			break
		}
		r := sl.rec
		if sl.state == slotSpilled {
			if it == nil {
				var err error
				if it, err = s.spillIter(sl.pos, watermark); err != nil {
					return err
				}
			}
			var err error
			if r, err = s.load(it, sl.pos); err != nil {
				return err
			}
		}
		if err := fn(r); err != nil {
			return err
		}
		s.index.DeleteMin()
		s.drop(sl)
	}
	return nil
}

// drop accounts for a slot leaving the index.
func (s *Store) drop(sl *slot) {
	s.memBytes -= int64(sl.size)
	switch sl.state {
	case slotDirty:
		s.liveDirty--
	case slotSpilled:
		s.spilled--
		s.noteReleased(sl.pos)
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
func (s *Store) noteReleased(p Pos) {
	switch {
	case !s.hasRel:
		s.relLo, s.relHi, s.hasRel = p, p, true
	case Less(p, s.relLo):
		s.relLo = p
	case Less(s.relHi, p):
		s.relHi = p
	}
}

// spillIter opens an iterator from first up to the end of watermark, after
// committing the pending writes so that it sees them.
func (s *Store) spillIter(first Pos, watermark int64) (*pebble.Iterator, error) {
	if err := s.flush(); err != nil {
		return nil, err
	}
	upper := parkedUpper
	if watermark < math.MaxInt64 {
		upper = appendTimeBound(nil, watermark+1)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: appendPosKey(nil, first), UpperBound: upper})
	if err != nil {
		return nil, s.fail(err)
	}
	return it, nil
}

// load reads the spilled record at p. Successive calls use increasing
// positions, usually adjacent on disk: one step forward, else a seek.
func (s *Store) load(it *pebble.Iterator, p Pos) (*record.Record, error) {
	s.keyBuf = appendPosKey(s.keyBuf[:0], p)
	if it.Valid() && bytes.Compare(it.Key(), s.keyBuf) < 0 {
		it.Next()
	}
	if !it.Valid() || !bytes.Equal(it.Key(), s.keyBuf) {
		it.SeekGE(s.keyBuf)
	}
	if !it.Valid() || !bytes.Equal(it.Key(), s.keyBuf) {
		if err := it.Error(); err != nil {
			return nil, s.fail(err)
		}
		return nil, s.fail(fmt.Errorf("%w: spilled record %+v not found", ErrCorrupt, p))
	}
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
	return nil, s.fail(fmt.Errorf("%w: record %+v: %v", ErrCorrupt, p, err))
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
		if Less(s.relHi, sl.pos) {
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
func (s *Store) Len() int { return s.index.Len() }

// Min returns the first parked position in release order.
func (s *Store) Min() (Pos, bool) {
	sl, ok := s.index.Min()
	if !ok {
		return Pos{}, false
	}
	return sl.pos, true
}

// Parked summarises the parked records of one partition.
type Parked struct {
	Count     int
	MinOffset int64
}

// ParkedByPartition walks the index once and returns, per partition, how
// many records are parked and the lowest offset among them. A restart uses
// it to keep commits below records restored from the last checkpoint.
func (s *Store) ParkedByPartition() map[record.TopicPartition]Parked {
	out := map[record.TopicPartition]Parked{}
	s.index.Ascend(func(sl *slot) bool {
		tp := record.TopicPartition{Topic: sl.pos.Input, Partition: sl.pos.Partition}
		p, ok := out[tp]
		if !ok || sl.pos.Offset < p.MinOffset {
			p.MinOffset = sl.pos.Offset
		}
		p.Count++
		out[tp] = p
		return true
	})
	return out
}

// Bytes is the memory accounted to the parked set: the payloads held in
// memory plus the index entries (invariant 3).
func (s *Store) Bytes() int64 { return s.memBytes }

// SpilledLen is the number of parked records whose payload is only on disk.
func (s *Store) SpilledLen() int { return s.spilled }

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
