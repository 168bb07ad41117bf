package durable

import (
	"hash/maphash"

	"github.com/cockroachdb/pebble/v2"
)

// filter is a Bloom filter of the keys pebble may hold, state and timers
// alike (no false negatives): a Get that it rules out does not reach
// pebble, whose own filters are in blocks that keep changing under a
// spilling cache (a new key's Get then reads index and filter blocks
// from disk). A key written stays in it when pebble deletes it; once
// those outnumber the keys it was built with, or the keys written outgrow
// its size, it is rebuilt from a scan of pebble.
type filter struct {
	db    *pebble.DB
	seed  maphash.Seed
	bits  []uint64
	n     int // keys added since the last build
	cap   int // keys it is sized for
	stale int // keys deleted from pebble since the last build
	min   int // the fewest keys it is sized for
}

const (
	filterBitsPerKey = 10
	filterProbes     = 7
)

func newFilter(db *pebble.DB, minKeys int) *filter {
	f := &filter{db: db, seed: maphash.MakeSeed(), min: minKeys}
	f.size(minKeys)
	return f
}

func (f *filter) size(keys int) {
	f.cap = keys
	f.bits = make([]uint64, (keys*filterBitsPerKey+63)/64)
	f.n, f.stale = 0, 0
}

// Bytes is the filter's memory.
func (f *filter) Bytes() int64 { return int64(len(f.bits)) * 8 }

func (f *filter) probes(k []byte, do func(i uint64) bool) bool {
	h := maphash.Bytes(f.seed, k)
	h1, h2 := h&0xffffffff, h>>32|1
	m := uint64(len(f.bits)) * 64
	for i := range uint64(filterProbes) {
		if !do((h1 + i*h2) % m) {
			return false
		}
	}
	return true
}

// mayHave reports whether pebble may hold k.
func (f *filter) mayHave(k []byte) bool {
	return f.probes(k, func(i uint64) bool { return f.bits[i/64]&(1<<(i%64)) != 0 })
}

// add notes that pebble holds k.
func (f *filter) add(k []byte) {
	f.probes(k, func(i uint64) bool { f.bits[i/64] |= 1 << (i % 64); return true })
	f.n++
}

// deleted notes that pebble no longer holds one key it held.
func (f *filter) deleted() { f.stale++ }

// maybeRebuild rebuilds the filter from pebble's keys when it is full
// or mostly stale.
func (f *filter) maybeRebuild() error {
	if f.n <= f.cap && f.stale <= max(f.n/2, f.min) {
		return nil
	}
	it, err := f.db.NewIter(nil)
	if err != nil {
		return err
	}
	var keys int
	for ok := it.First(); ok; ok = it.Next() {
		keys++
	}
	f.size(max(2*keys, f.min))
	for ok := it.First(); ok; ok = it.Next() {
		f.add(it.Key())
	}
	return it.Close()
}
