package keyed_test

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/keyed/durable"
)

// storeKind is a Store the window and processor tests run against: every
// one of them holds keyed invariants 1 to 8 alike.
type storeKind struct {
	name string
	// opts of durable.Open; nil: the MemStore.
	opts *durable.Options
}

// storeKinds: the MemStore; a durable Store whose cache and in-memory
// timers hold nothing (every call spills to pebble and reads back); one
// that holds a few entries (some in memory, some in pebble).
var storeKinds = []storeKind{
	{name: "mem"},
	{name: "durable-none-in-memory", opts: &durable.Options{CacheBytes: 1, TimerBytes: 1, MemoryBudget: 16 << 20}},
	{name: "durable-small", opts: &durable.Options{CacheBytes: 4 << 10, TimerBytes: 1 << 10, TimerReadAhead: 3, FilterMinKeys: 4, MemoryBudget: 16 << 20}},
}

// forStores runs f once per storeKind, as a subtest.
func forStores(t *testing.T, f func(t *testing.T, k storeKind)) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

// seeds is how many random seeds a property test runs with k: n, or a
// quarter under -race with a durable store (pebble is slow there; the
// MemStore keeps them all).
func (k storeKind) seeds(n uint64) uint64 {
	if k.opts != nil && raceEnabled {
		return n / 4
	}
	return n
}

// open opens a durable Store of S in memory, closed with the test.
func open[S any](t testing.TB, k storeKind, c durable.Codec[S]) *durable.Store[S] {
	t.Helper()
	o := *k.opts
	o.FS = vfs.NewMem()
	s, err := durable.Open[S]("state", c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// windows returns the Windows of s over k's Store.
func (k storeKind) windows(t testing.TB, s keyed.Spec, emit func(*keyed.Result) error) *keyed.Windows {
	t.Helper()
	var opts []keyed.Option
	if k.opts != nil {
		opts = append(opts, keyed.WithStore(open[keyed.State](t, k, keyed.StateCodec{})))
	}
	w, err := keyed.New(s, emit, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// ints returns an empty Store of int of kind k.
func (k storeKind) ints(t testing.TB) keyed.Store[int] {
	if k.opts == nil {
		return keyed.NewMemStore[int]()
	}
	return open[int](t, k, intCodec{})
}

type intCodec struct{}

func (intCodec) Append(b []byte, n int) []byte { return binary.AppendVarint(b, int64(n)) }
func (intCodec) Size(int) int                  { return 8 }
func (intCodec) Decode(b []byte) (int, error) {
	v, n := binary.Varint(b)
	if n != len(b) {
		return 0, errors.New("not a varint")
	}
	return int(v), nil
}

// TestStoreInvariant: keyed invariant 4 for every store kind: random Get,
// Put and Delete over a few keys, checked against a map after each call.
func TestStoreInvariant(t *testing.T) {
	forStores(t, func(t *testing.T, k storeKind) {
		for seed := range uint64(20) {
			rnd := rand.New(rand.NewPCG(seed, 4))
			s, ref := k.ints(t), map[string]int{}
			for i := range 2000 {
				key := strconv.Itoa(rnd.IntN(1 + int(seed)*5))
				switch rnd.IntN(3) {
				case 0:
					s.Put(key, i)
					ref[key] = i
				case 1:
					s.Delete(key)
					delete(ref, key)
				}
				got, ok := s.Get(key)
				want, wok := ref[key]
				if got != want || ok != wok || s.Len() != len(ref) {
					t.Fatalf("seed %d op %d: %s: got %d %v, want %d %v; len %d, want %d", seed, i, key, got, ok, want, wok, s.Len(), len(ref))
				}
				// durable invariant 3: the cache within its bytes, plus the
				// entry being handled (its key, overhead and int).
				if d, ok := s.(*durable.Store[int]); ok && d.CacheBytes() > k.opts.CacheBytes+128 {
					t.Fatalf("seed %d op %d: the cache holds %d bytes, above %d", seed, i, d.CacheBytes(), k.opts.CacheBytes)
				}
			}
		}
	})
}

// TestTimerQueue: every store kind's timers are a set in (At, Key) order:
// random Set, Delete and Due, checked against a sorted slice.
func TestTimerQueue(t *testing.T) {
	forStores(t, func(t *testing.T, k storeKind) {
		for seed := range uint64(20) {
			rnd := rand.New(rand.NewPCG(seed, 5))
			q := keyed.TimerQueue(keyed.NewMemTimers())
			if ts, ok := k.ints(t).(keyed.TimerStore); ok {
				q = ts.Timers()
			}
			var ref []keyed.Timer
			cmpT := func(a, b keyed.Timer) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Key, b.Key)) }
			now := int64(0)
			for i := range 3000 {
				tm := keyed.Timer{At: now + rnd.Int64N(50) - 5, Key: strconv.Itoa(rnd.IntN(8))}
				j, found := slices.BinarySearchFunc(ref, tm, cmpT)
				switch op := rnd.IntN(4); {
				case op < 2:
					q.Set(tm)
					if !found {
						ref = slices.Insert(ref, j, tm)
					}
				case op == 2:
					q.Delete(tm)
					if found {
						ref = slices.Delete(ref, j, j+1)
					}
				default:
					now += rnd.Int64N(10)
					for {
						got, ok := q.Due(now)
						wok := len(ref) > 0 && ref[0].At <= now
						if ok != wok || ok && got != ref[0] {
							t.Fatalf("seed %d op %d: Due(%d) = %v %v, want %v", seed, i, now, got, ok, ref[:min(1, len(ref))])
						}
						if !ok {
							break
						}
						ref = ref[1:]
					}
				}
				if q.Len() != len(ref) {
					t.Fatalf("seed %d op %d: Len %d, want %d", seed, i, q.Len(), len(ref))
				}
			}
		}
	})
}

// TestSetMemory: a durable Store whose bounds are lowered spills at once
// what is over them (cache and timers), keeps every state and timer
// (read back from pebble), and stays within the new bounds as it is used;
// raised again, it keeps more in memory. InMemory is what Open gives by
// default.
func TestSetMemory(t *testing.T) {
	k := storeKind{name: "durable", opts: &durable.Options{MemoryBudget: 16 << 20}}
	s := open[int](t, k, intCodec{})
	wc, wt := durable.InMemory(16 << 20)
	if c, tm, _, _ := s.Memory(); c != wc || tm != wt {
		t.Fatalf("Open's bounds %d, %d are not InMemory's %d, %d", c, tm, wc, wt)
	}
	q := s.Timers()
	for i := range 2000 {
		s.Put(strconv.Itoa(i), i)
		q.Set(keyed.Timer{At: int64(i), Key: strconv.Itoa(i)})
	}
	if _, _, cb, tb := s.Memory(); cb < 64<<10 || tb < 16<<10 {
		t.Fatalf("before: cache %d, timers %d bytes: the test needs them in memory", cb, tb)
	}
	s.SetMemory(8<<10, 2<<10)
	check := func(when string) {
		t.Helper()
		cl, tl, cb, tb := s.Memory()
		if cl != 8<<10 || tl != 2<<10 || cb > cl || tb > tl {
			t.Fatalf("%s: bounds %d, %d; holds %d, %d bytes", when, cl, tl, cb, tb)
		}
	}
	check("after SetMemory")
	for i := range 2000 {
		if v, ok := s.Get(strconv.Itoa(i)); !ok || v != i {
			t.Fatalf("key %d: %d %v after the spill", i, v, ok)
		}
	}
	s.Put("new", -1)
	check("after a Get of every key and a Put")
	for i := range 2000 {
		if tm, ok := q.Due(1 << 40); !ok || tm.At != int64(i) {
			t.Fatalf("timer %d: got %v %v", i, tm, ok)
		}
	}
	s.SetMemory(1<<20, 1<<20)
	for i := range 2000 {
		s.Get(strconv.Itoa(i))
	}
	if _, _, cb, _ := s.Memory(); cb < 64<<10 {
		t.Fatalf("raised to 1 MiB, the cache holds %d bytes", cb)
	}
}
