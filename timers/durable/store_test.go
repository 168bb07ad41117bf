package durable

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// recordAt builds a record whose fields all derive from p, with a payload of
// n bytes, so that a released record can be checked against its position.
func recordAt(p timers.Pos, n int) *record.Record {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(p.Offset) + byte(i)
	}
	return &record.Record{
		Topic: p.Input, Partition: p.Partition, Offset: p.Offset,
		Key: []byte(p.Key), Value: v,
		Headers:   []record.Header{{Key: "h", Value: []byte(p.Key)}},
		Timestamp: time.UnixMilli(p.EventTime + 1),
		EventTime: p.EventTime, OrderKey: p.Key,
	}
}

func posOf(r *record.Record) timers.Pos {
	return timers.Pos{EventTime: r.EventTime, Key: r.OrderKey, Input: r.Topic, Partition: r.Partition, Offset: r.Offset}
}

func sameRec(a, b *record.Record) bool {
	if !a.Timestamp.Equal(b.Timestamp) {
		return false
	}
	x, y := *a, *b
	x.Timestamp, y.Timestamp = time.Time{}, time.Time{}
	return reflect.DeepEqual(x, y)
}

func cmpPos(a, b timers.Pos) int {
	switch {
	case timers.Less(a, b):
		return -1
	case timers.Less(b, a):
		return 1
	}
	return 0
}

// parkedSet is the reference parked set: a map, sorted on demand.
type parkedSet map[timers.Pos]*record.Record

func (o parkedSet) sorted() []timers.Pos {
	ps := make([]timers.Pos, 0, len(o))
	for p := range o {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, cmpPos)
	return ps
}

func (o parkedSet) clone() parkedSet {
	c := make(parkedSet, len(o))
	for p, r := range o {
		c[p] = r
	}
	return c
}

// release runs Release on s and on o and checks that the same records come
// out, in the same order.
func (o parkedSet) release(t *testing.T, s *Store, w int64, max int) {
	t.Helper()
	var want []timers.Pos
	for _, p := range o.sorted() {
		if p.EventTime > w || (max > 0 && len(want) == max) {
			break
		}
		want = append(want, p)
	}
	var got []*record.Record
	if err := s.Release(w, max, func(r *record.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatalf("Release(%d, %d): %v", w, max, err)
	}
	if len(got) != len(want) {
		t.Fatalf("Release(%d, %d): %d records, want %d", w, max, len(got), len(want))
	}
	for i, r := range got {
		if posOf(r) != want[i] || !sameRec(r, o[want[i]]) {
			t.Fatalf("Release(%d, %d) #%d: got %+v, want %+v", w, max, i, r, o[want[i]])
		}
		delete(o, want[i])
	}
}

// checkSame checks that s holds exactly o, in order, in memory or on disk
// above the cursor (invariant 8), that Min agrees, and that the memory
// accounting is consistent (invariant 3), without releasing anything.
func checkSame(t *testing.T, s *Store, o parkedSet) {
	t.Helper()
	want := o.sorted()
	var got []timers.Pos
	var mem, aboveCursor int64
	s.index.Ascend(func(sl *slot) bool {
		got = append(got, sl.pos)
		mem += int64(sl.size)
		if !s.hasCursor || timers.Less(s.cursor, sl.pos) {
			aboveCursor += int64(sl.size)
		}
		return true
	})
	inMem := len(got)
	it, err := s.scan(math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	for ; it.Valid(); it.Next() {
		p, err := decodePosKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(got[:inMem], p) {
			got = append(got, p)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, cmpPos)
	if !slices.Equal(got, want) {
		t.Fatalf("parked set differs:\n got %d %v\nwant %d %v", len(got), got, len(want), want)
	}
	if s.Len() != len(want) || s.Bytes() != mem || s.SpilledLen() != len(got)-inMem {
		t.Fatalf("Len %d Bytes %d SpilledLen %d, want %d %d %d", s.Len(), s.Bytes(), s.SpilledLen(), len(want), mem, len(got)-inMem)
	}
	if aboveCursor > s.memLimit {
		t.Fatalf("in-memory bytes %d exceed the budget of the in-memory part %d", aboveCursor, s.memLimit)
	}
	if p, ok := s.Min(); ok != (len(want) > 0) || ok && p != want[0] {
		t.Fatalf("Min = %v %v, want %v", p, ok, want)
	}
}

// memOpts gives the in-memory part a budget of budget bytes on top of
// pebble's memory and the write buffers.
func memOpts(fs vfs.FS, budget int64) StoreOptions {
	if budget < 1<<40 {
		budget = 2*budget + 2<<20 + 1<<20 + 1<<20 + 2*batchRetain // memtables, cache, WAL queue
	}
	return StoreOptions{FS: fs, MemoryBudget: budget, MemTableSize: 1 << 20, CacheSize: 1 << 20}
}

func mustOpen(t *testing.T, dir string, opts StoreOptions) *Store {
	t.Helper()
	s, err := OpenStore(dir, opts)
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	return s
}

// workload drives a store and an parkedSet with random operations. Event times
// cluster around the watermark, so that many records are parked at or below
// a watermark already released (late records landing inside released key
// ranges): a checkpoint that deleted a released range without cutting it
// around such records, or a DeleteRange that overtook the Sets it was meant
// to follow, loses them and fails the comparison.
type workload struct {
	t      *testing.T
	rng    *rand.Rand
	s      *Store
	o      parkedSet
	w      int64 // last watermark released
	offset int64
	// saved is the parkedSet as of the last successful checkpoint.
	saved   parkedSet
	savedCP record.Checkpoint
	blobs   map[string][]byte
}

func (wl *workload) park() {
	p := timers.Pos{
		EventTime: wl.w - 20 + wl.rng.Int64N(300),
		Key:       tricky[wl.rng.IntN(len(tricky))],
		Input:     []string{"a", "b", "a\x00"}[wl.rng.IntN(3)],
		Partition: int32(wl.rng.IntN(3)),
		Offset:    wl.offset,
	}
	wl.offset++
	r := recordAt(p, wl.rng.IntN(300))
	if err := wl.s.Park(p, r); err != nil {
		wl.t.Fatalf("Park: %v", err)
	}
	wl.o[p] = r
}

// repark parks a position again, as a re-read after a restart does: either
// one still parked, with a different payload (the first copy must be kept),
// or one that was parked at the last checkpoint and released since (a
// restart before the next checkpoint must still restore it).
func (wl *workload) repark() {
	var p timers.Pos
	var r *record.Record
	if wl.rng.IntN(2) == 0 {
		ps := wl.o.sorted()
		if len(ps) == 0 {
			return
		}
		p = ps[wl.rng.IntN(len(ps))]
		r = recordAt(p, 7)
	} else {
		var gone []timers.Pos
		for _, q := range wl.saved.sorted() {
			if wl.o[q] == nil {
				gone = append(gone, q)
			}
		}
		if len(gone) == 0 {
			return
		}
		p = gone[wl.rng.IntN(len(gone))]
		r = wl.saved[p]
		wl.o[p] = r
	}
	if err := wl.s.Park(p, r); err != nil {
		wl.t.Fatalf("Park again: %v", err)
	}
}

func (wl *workload) checkpoint() {
	wl.savedCP = record.Checkpoint{Watermark: wl.w, Partitions: []record.PartitionCheckpoint{
		{TopicPartition: record.TopicPartition{Topic: "a", Partition: 1}, Low: wl.offset / 2, Position: wl.offset, End: 99, Replaying: wl.w < 1000},
	}}
	wl.blobs = map[string][]byte{"late": []byte(fmt.Sprint(wl.offset))}
	if wl.rng.IntN(3) == 0 {
		wl.blobs["other"] = []byte{byte(wl.offset)}
	}
	if err := wl.s.Checkpoint(wl.savedCP, wl.blobs); err != nil {
		wl.t.Fatalf("Checkpoint: %v", err)
	}
	wl.saved = wl.o.clone()
}

// step does one random operation.
func (wl *workload) step() {
	switch n := wl.rng.IntN(100); {
	case n < 60:
		wl.park()
	case n < 66:
		wl.repark()
	case n < 95:
		wl.w += wl.rng.Int64N(12)
		max := 0
		if wl.rng.IntN(2) == 0 {
			max = 1 + wl.rng.IntN(10)
		}
		wl.o.release(wl.t, wl.s, wl.w, max)
	default:
		wl.checkpoint()
	}
}

// checkRestored checks a freshly opened store against the last checkpoint.
func (wl *workload) checkRestored(s *Store) {
	wl.t.Helper()
	checkSame(wl.t, s, wl.saved)
	cp, blobs, err := s.Restore()
	if err != nil {
		wl.t.Fatalf("Restore: %v", err)
	}
	if wl.saved == nil {
		if cp != nil {
			wl.t.Fatalf("Restore of a never checkpointed store: %+v", cp)
		}
		return
	}
	if cp == nil || !reflect.DeepEqual(*cp, wl.savedCP) || !reflect.DeepEqual(blobs, wl.blobs) {
		wl.t.Fatalf("Restore = %+v %q, want %+v %q", cp, blobs, wl.savedCP, wl.blobs)
	}
}

// reopenRestored opens the store in dir (the previous one is closed or
// gone), checks that it holds the last checkpoint, and closes it.
func (wl *workload) reopenRestored(dir string, opts StoreOptions) {
	wl.t.Helper()
	wl.s = mustOpen(wl.t, dir, opts)
	wl.checkRestored(wl.s)
	if err := wl.s.Close(); err != nil {
		wl.t.Fatal(err)
	}
}

// reopen closes the store without a checkpoint and opens it again: the
// parked set must be exactly the one of the last checkpoint (invariant 4).
func (wl *workload) reopen(dir string, opts StoreOptions) {
	if err := wl.s.Close(); err != nil {
		wl.t.Fatalf("Close: %v", err)
	}
	wl.s = mustOpen(wl.t, dir, opts)
	wl.checkRestored(wl.s)
	wl.o = wl.saved.clone()
	if wl.saved == nil {
		wl.o = parkedSet{}
	}
	if cp, _, _ := wl.s.Restore(); cp != nil {
		wl.w = cp.Watermark
	} else {
		wl.w = 0
	}
}

// TestStoreMatchesOracle: random park/release/checkpoint interleavings, with a
// budget small enough that most payloads spill, against a sorted-slice
// parkedSet; restarts in between restore the parked set of the last checkpoint.
func TestStoreMatchesOracle(t *testing.T) {
	for _, budget := range []int64{2 << 10, 16 << 10, 1 << 30} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := memOpts(fs, budget)
			wl := &workload{t: t, rng: rand.New(rand.NewPCG(uint64(budget), 1)), o: parkedSet{}}
			wl.s = mustOpen(t, "state", opts)
			maxSpilled := 0
			for round := range 16 {
				for range 300 {
					wl.step()
					maxSpilled = max(maxSpilled, wl.s.SpilledLen())
				}
				checkSame(t, wl.s, wl.o)
				if round%2 == 1 {
					wl.reopen("state", opts)
				}
			}
			wl.o.release(t, wl.s, 1<<62, 0)
			checkSame(t, wl.s, parkedSet{})
			if budget < 1<<20 && maxSpilled == 0 {
				t.Fatal("nothing spilled: the test does not exercise spilling")
			}
			if budget >= 1<<20 && maxSpilled != 0 {
				t.Fatalf("%d spilled under a large budget", maxSpilled)
			}
			if err := wl.s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A failing fn stops the release and leaves its record parked, spilled or
// not.
func TestStoreReleaseFnError(t *testing.T) {
	s := mustOpen(t, "state", memOpts(vfs.NewMem(), 600))
	defer func() { _ = s.Close() }()
	o := parkedSet{}
	for i := range 6 {
		p := timers.Pos{EventTime: int64(i), Offset: int64(i)}
		o[p] = recordAt(p, 100)
		if err := s.Park(p, o[p]); err != nil {
			t.Fatal(err)
		}
	}
	if s.SpilledLen() == 0 {
		t.Fatal("nothing spilled")
	}
	boom := errors.New("boom")
	for range 6 {
		n := 0
		err := s.Release(10, 0, func(*record.Record) error {
			if n++; n == 2 {
				return boom
			}
			return nil
		})
		if len(o) > 1 && !errors.Is(err, boom) {
			t.Fatalf("Release: %v, want boom", err)
		}
		delete(o, o.sorted()[0])
		checkSame(t, s, o)
	}
}

func TestStoreClosed(t *testing.T) {
	s := mustOpen(t, "state", memOpts(vfs.NewMem(), 0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Park":       s.Park(timers.Pos{}, &record.Record{}),
		"Release":    s.Release(0, 0, func(*record.Record) error { return nil }),
		"Checkpoint": s.Checkpoint(record.Checkpoint{}, nil),
		"Close":      s.Close(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

// TestStoreMinAfterRelease: Min stays right when the first parked key on
// disk is the disk copy of a record in memory, and that record is released
// from memory (invariant 8).
func TestStoreMinAfterRelease(t *testing.T) {
	at := func(et int64) timers.Pos { return timers.Pos{EventTime: et, Offset: et} }
	one := int64(slotOverhead + recordAt(at(0), 100).Size())
	s := mustOpen(t, "state", memOpts(vfs.NewMem(), 2*one))
	defer func() { _ = s.Close() }()
	o := parkedSet{}
	for _, et := range []int64{5, 6, 1, 7} { // 5 and 6 fit in memory
		o[at(et)] = recordAt(at(et), 100)
		if err := s.Park(at(et), o[at(et)]); err != nil {
			t.Fatal(err)
		}
	}
	if s.SpilledLen() != 2 {
		t.Fatalf("%d on disk only, want 2", s.SpilledLen())
	}
	if err := s.Checkpoint(record.Checkpoint{}, nil); err != nil { // 5 and 6 also on disk now
		t.Fatal(err)
	}
	for _, w := range []int64{1, 5, 6, 7} {
		o.release(t, s, w, 0)
		checkSame(t, s, o)
	}
}

// TestDetachSharesNothing: a parked record kept in memory shares no bytes
// with the fetch it came from, its order key included when that shares the
// Kafka key's bytes (record.Record.OrderKey), so that it does not pin the
// whole fetch response. Writing over the source leaves the copy intact.
func TestDetachSharesNothing(t *testing.T) {
	buf := []byte("key-1value-1")
	key, value := buf[:5], buf[5:]
	r := record.Record{Topic: "t", Key: key, Value: value,
		OrderKey: unsafe.String(unsafe.SliceData(key), len(key))}
	independent := record.Record{Key: key, OrderKey: "other"}
	c, ci := detach(&r), detach(&independent)
	for i := range buf {
		buf[i] = 'x'
	}
	if string(c.Key) != "key-1" || string(c.Value) != "value-1" || c.OrderKey != "key-1" {
		t.Fatalf("the copy changed with its source: key %q value %q order key %q", c.Key, c.Value, c.OrderKey)
	}
	if ci.OrderKey != "other" || string(ci.Key) != "key-1" {
		t.Fatalf("an order key of its own: %q, key %q", ci.OrderKey, ci.Key)
	}
}

// TestParkSharesNothing: a record parked in the in-memory part, whose order
// key shares the Kafka key's bytes, keeps nothing of the fetch it came from
// (its slot's position included); nor does the store's minimum when the
// record spills (its disk copy is encoded, the minimum kept in memory):
// writing over the source bytes changes neither the store's minimum nor
// what it releases.
func TestParkSharesNothing(t *testing.T) {
	for _, spilled := range []bool{false, true} {
		t.Run(fmt.Sprint("spilled=", spilled), func(t *testing.T) {
			opts := StoreOptions{FS: vfs.NewMem()}
			if spilled {
				opts = memOpts(opts.FS, 0)
			}
			s := mustOpen(t, "state", opts)
			defer s.Close()
			buf := []byte("key-1value-1")
			key := buf[:5]
			r := record.Record{Topic: "t", Offset: 7, EventTime: 100, Key: key, Value: buf[5:],
				OrderKey: unsafe.String(unsafe.SliceData(key), len(key))}
			p := timers.Pos{EventTime: r.EventTime, Key: r.OrderKey, Input: r.Topic, Offset: r.Offset}
			if err := s.Park(p, &r); err != nil {
				t.Fatal(err)
			}
			if got := s.SpilledLen() == 1; got != spilled {
				t.Fatalf("spilled %v, want %v", got, spilled)
			}
			for i := range buf {
				buf[i] = 'x'
			}
			if m, ok := s.Min(); !ok || m.Key != "key-1" {
				t.Fatalf("Min %+v after the source changed, want key-1", m)
			}
			var got []string
			if err := s.Release(100, 0, func(r *record.Record) error {
				got = append(got, r.OrderKey+"/"+string(r.Key)+"/"+string(r.Value))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != "key-1/key-1/value-1" {
				t.Fatalf("released %q", got)
			}
		})
	}
}
