package tables

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// refTable is the model the memory storage is checked against: every key
// an entry in a Go map, changed and answered by entry's methods (the
// storage before its index: what pebble's storage does per key too).
type refTable struct {
	keys                 map[string]*entry
	nvers, bytes, beyond int64
}

func (r *refTable) put(key string, at int64, value []byte, tomb bool) {
	v := version{at: at, tomb: tomb}
	if !tomb {
		v.value = append([]byte(nil), value...)
	}
	e := r.keys[key]
	if e == nil {
		e = &entry{}
		r.keys[key] = e
	}
	added, dbytes := e.put(v)
	if added {
		r.nvers++
	}
	r.bytes += dbytes
}

func (r *refTable) asOf(key string, at int64) string {
	e := r.keys[key]
	if e == nil {
		return "<none>"
	}
	v, ok, beyond := e.asOf(at)
	if beyond {
		r.beyond++
	}
	if !ok || v.tomb {
		return "<none>"
	}
	return string(v.value)
}

func (r *refTable) trim(bound int64) {
	for k, e := range r.keys {
		dropped, dbytes, forget := e.trim(bound)
		r.nvers -= int64(dropped)
		r.bytes -= dbytes
		if forget {
			delete(r.keys, k)
		}
	}
}

// TestMemIsTheModel: random puts (new keys, replaced versions, second
// versions, tombstones, values up to 3,000 bytes), trims that forget keys, and
// lookups (hinted at first), over thousands of keys: the memory storage
// answers and counts as the model does, its index finds every key it
// holds and is at most three quarters full, and its arena, compacted
// along the way, holds exactly the bytes of the keys and values in use
// (every value in it) and stays within about twice them; keys that a trim
// leaves one version are slots of one version again.
func TestMemIsTheModel(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		tb, err := New("t", 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		ref := &refTable{keys: map[string]*entry{}}
		wm := int64(0)
		nkeys := 200 + rng.IntN(4000)
		for op := range 30_000 {
			key := fmt.Sprint("k", rng.IntN(nkeys))
			at := wm - 100 + rng.Int64N(300)
			switch r := rng.IntN(100); {
			case r < 45:
				val := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(3000))
				tomb := rng.IntN(8) == 0
				if rng.IntN(3) == 0 { // the same version time again: a replacement
					at = wm
				}
				tb.Put(key, at, val, tomb)
				ref.put(key, at, val, tomb)
			case r < 48:
				wm += rng.Int64N(80)
				tb.Trim(wm)
				ref.trim(wm - 50)
			default:
				tb.HintValue(tb.HintKey(key)) // hints change nothing
				if got, want := asOf(tb, key, at), ref.asOf(key, at); got != want {
					t.Fatalf("seed %d op %d: AsOf(%s, %d) = %.20q, want %.20q", seed, op, key, at, got, want)
				}
			}
			if tb.Keys() != len(ref.keys) || int64(tb.Versions()) != ref.nvers || tb.Bytes() != ref.bytes || tb.Beyond() != ref.beyond {
				t.Fatalf("seed %d op %d: %s; the model: %d keys, %d versions, %d bytes, %d beyond",
					seed, op, sizes(tb), len(ref.keys), ref.nvers, ref.bytes, ref.beyond)
			}
		}
		checkIndex(t, tb.mem, ref)
		if tb.mem.compactions == 0 || tb.mem.inlined == 0 {
			t.Errorf("seed %d: %d compactions of the arena, %d keys made one-version slots again: want some of each", seed, tb.mem.compactions, tb.mem.inlined)
		}
	}
}

// checkIndex fails unless m holds exactly ref's keys, each found where
// it is, in an index at most three quarters full, in an arena within
// about twice its bytes in use.
func checkIndex(t *testing.T, m *mem, ref *refTable) {
	t.Helper()
	used := 0
	for i, s := range m.slots {
		if s.hash == 0 {
			continue
		}
		used++
		key := m.arena.str(s.kv, s.klen)
		if j, _, ok := m.find(key); !ok || j != i {
			t.Fatalf("key %s in slot %d is found at %d (%v)", key, i, j, ok)
		}
		if ref.keys[key] == nil {
			t.Fatalf("key %s is held, not in the model", key)
		}
	}
	if used != len(ref.keys) || used != m.used || 4*used > 3*len(m.slots) {
		t.Fatalf("%d slots in use (counted %d) of %d, the model has %d keys", used, m.used, len(m.slots), len(ref.keys))
	}
	var held, live int64
	for _, c := range m.arena.chunks {
		held += int64(len(c))
	}
	inArena := func(b []byte) bool {
		for _, c := range m.arena.chunks {
			if len(b) > 0 && cap(c) > 0 && uintptr(unsafe.Pointer(&b[0])) >= uintptr(unsafe.Pointer(&c[:1][0])) &&
				uintptr(unsafe.Pointer(&b[len(b)-1])) < uintptr(unsafe.Pointer(&c[:1][0]))+uintptr(len(c)) {
				return true
			}
		}
		return len(b) == 0
	}
	for _, s := range m.slots {
		if s.hash == 0 {
			continue
		}
		live += int64(s.klen + s.vlen)
		if s.is(multi) {
			for _, v := range m.exts[s.at].versions {
				live += int64(len(v.value))
				if !inArena(v.value) {
					t.Fatalf("a value of key %s is outside the arena", m.arena.str(s.kv, s.klen))
				}
			}
		}
	}
	if live != m.arena.live {
		t.Fatalf("the arena counts %d bytes in use, the keys and values hold %d", m.arena.live, live)
	}
	if held != m.arena.live+m.arena.dead || held > 2*m.arena.live+arenaChunk {
		t.Fatalf("the arena holds %d bytes, %d in use and %d given up", held, m.arena.live, m.arena.dead)
	}
}

// TestHugePagesChangesNothing: asking for huge pages over memory of any
// size and alignment keeps its bytes.
func TestHugePagesChangesNothing(t *testing.T) {
	for _, n := range []int{0, 1, hugePageTest - 1, 2 * hugePageTest, 5*hugePageTest + 12345} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 7)
		}
		for _, off := range []int{0, 1} {
			if off > len(b) {
				continue
			}
			hugePages(b[off:])
			for i := range b {
				if b[i] != byte(i*7) {
					t.Fatalf("%d bytes from %d: byte %d changed", n, off, i)
				}
			}
		}
	}
}

// hugePageTest is a huge page's size, for the test on every platform.
const hugePageTest = 2 << 20

// TestSlotSize: a slot is 32 bytes, two to a cache line: the index's
// memory a key (at most 3/4 full: 43 to 85 bytes a key) as docs/config.md
// states it.
func TestSlotSize(t *testing.T) {
	if n := unsafe.Sizeof(slot{}); n != 32 {
		t.Fatalf("a slot is %d bytes, want 32", n)
	}
}

// TestAfterCloseInMemory: an in-memory table closed answers nothing and
// trims nothing, as its map did, rather than fail (a lookup racing a
// shutdown).
func TestAfterCloseInMemory(t *testing.T) {
	tb, err := New("t", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tb.Put("k", 1, []byte(`1`), false)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if v, ok := tb.AsOf("k", 5); ok || v != nil {
		t.Fatalf("after Close: %q %v, want nothing", v, ok)
	}
	tb.Trim(10)
	if h := tb.HintKey("k"); h != 0 {
		t.Fatalf("after Close: hint %d, want 0", h)
	}
	tb.HintValue(1)
}

// FuzzMemIsTheModel is TestMemIsTheModel's check driven by the fuzzer:
// each 4 bytes of the input are an operation (a put, a tombstone, a trim,
// a hinted lookup) on one of 64 keys, with version times and value sizes
// of its choosing; after each, the table answers and counts as the model,
// and at the end its index and arena hold exactly the model's keys and
// bytes. go test -fuzz FuzzMemIsTheModel ./tables
func FuzzMemIsTheModel(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 1, 2, 3, 0, 1, 9, 3, 2, 0, 0, 0, 3, 1, 2, 3})
	f.Add(bytes.Repeat([]byte{0, 7, 40, 200, 1, 7, 41, 0, 2, 0, 90, 0, 3, 7, 50, 0}, 20))
	f.Fuzz(func(t *testing.T, ops []byte) {
		tb, err := New("t", 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		ref := &refTable{keys: map[string]*entry{}}
		wm := int64(0)
		for i := 0; i+4 <= len(ops) && i < 4*5000; i += 4 {
			op, key := ops[i]%4, fmt.Sprint("k", ops[i+1]%64)
			at, size := wm-100+int64(ops[i+2])*2, int(ops[i+3])*20
			switch op {
			case 0, 1:
				val := bytes.Repeat([]byte{'a' + ops[i+1]%26}, size)
				tb.Put(key, at, val, op == 1)
				ref.put(key, at, val, op == 1)
			case 2:
				wm += int64(ops[i+2])
				tb.Trim(wm)
				ref.trim(wm - 50)
			default:
				tb.HintValue(tb.HintKey(key))
				if got, want := asOf(tb, key, at), ref.asOf(key, at); got != want {
					t.Fatalf("op %d: AsOf(%s, %d) = %.20q, want %.20q", i/4, key, at, got, want)
				}
			}
			if tb.Keys() != len(ref.keys) || int64(tb.Versions()) != ref.nvers || tb.Bytes() != ref.bytes || tb.Beyond() != ref.beyond {
				t.Fatalf("op %d: %s; the model: %d keys, %d versions, %d bytes, %d beyond",
					i/4, sizes(tb), len(ref.keys), ref.nvers, ref.bytes, ref.beyond)
			}
		}
		checkIndex(t, tb.mem, ref)
	})
}
