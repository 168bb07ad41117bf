package tables

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestStoragesAgree: random puts (tombstones, replacements, out of
// order), trims and lookups answer alike in memory and in pebble, sizes
// and Beyond included: the storages keep the same invariants.
func TestStoragesAgree(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		mem := storages[0].open(t, 50*time.Millisecond)
		dsk := storages[1].open(t, 50*time.Millisecond)
		wm := int64(0)
		for op := 0; op < 2000; op++ {
			key := "k" + strconv.Itoa(rng.IntN(30))
			at := wm - 100 + rng.Int64N(300)
			switch r := rng.IntN(20); {
			case r < 8:
				val := []byte(fmt.Sprintf("v%d", rng.IntN(1000)))
				tomb := rng.IntN(6) == 0
				mem.Put(key, at, val, tomb)
				dsk.Put(key, at, val, tomb)
			case r < 9:
				wm += rng.Int64N(60)
				mem.Trim(wm)
				dsk.Trim(wm)
			default:
				if m, d := asOf(mem, key, at), asOf(dsk, key, at); m != d {
					t.Fatalf("seed %d op %d: AsOf(%s, %d): memory %s, pebble %s", seed, op, key, at, m, d)
				}
			}
			if op%25 != 24 { // checkCounted reads the whole table in pebble
				continue
			}
			if m, d := sizes(mem), sizes(dsk); m != d {
				t.Fatalf("seed %d op %d: memory %s, pebble %s", seed, op, m, d)
			}
			checkCounted(t, dsk)
		}
		if err := dsk.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkCounted fails unless the size a pebble table counts (Size) is the
// one a scan of pebble reads.
func checkCounted(t *testing.T, tb *Table) {
	t.Helper()
	k, v, b := tb.disk.sizes()
	if s := tb.Size(); s.Keys != int64(k) || s.Versions != int64(v) || s.Bytes != b {
		t.Fatalf("pebble counted %d keys, %d versions, %d bytes; it holds %d, %d, %d", s.Keys, s.Versions, s.Bytes, k, v, b)
	}
}

// entriesDiffer compares the entries of keys k<from> to k<to−1> in
// memory and in pebble: their versions, and whether a trim dropped some.
func entriesDiffer(mem, dsk *Table, from, to int) string {
	for k := from; k < to; k++ {
		key := "k" + strconv.Itoa(k)
		m, d := mem.mem.entryOf(key), dsk.disk.entry(key, false)
		if m == nil || d == nil {
			if m != d {
				return fmt.Sprintf("%s: memory %v, pebble %v", key, m, d)
			}
			continue
		}
		if fmt.Sprint(m.versions, m.trimmed) != fmt.Sprint(d.versions, d.trimmed) {
			return fmt.Sprintf("%s: memory %v %v, pebble %v %v", key, m.versions, m.trimmed, d.versions, d.trimmed)
		}
	}
	return ""
}

func sizes(tb *Table) string {
	return fmt.Sprintf("%d keys, %d versions, %d bytes, %d beyond", tb.Keys(), tb.Versions(), tb.Bytes(), tb.Beyond())
}

// TestOpenWipes: a table's directory starts empty whatever a previous run
// left there (the table is rebuilt from its topic); a directory that is
// not a table's is not wiped.
func TestOpenWipes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "products")
	tb, err := Open("products", time.Hour, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tb.Put("a", 1, []byte("v"), false)
	tb.disk.commit(true)
	if err := tb.disk.db.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = tb.disk.it.Close()
	_ = tb.disk.b.Close()
	if err := tb.disk.db.Close(); err != nil { // as a killed run leaves it
		t.Fatal(err)
	}
	tb, err = Open("products", time.Hour, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := asOf(tb, "a", 1); got != "<none>" || tb.Keys() != 0 {
		t.Fatalf("reopened: AsOf(a) = %s, %d keys", got, tb.Keys())
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s: %v", dir, err)
	}

	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("products", time.Hour, Options{Dir: other}); err == nil {
		t.Fatal("opened over a directory that is not a table's")
	}
	if _, err := os.Stat(filepath.Join(other, "precious")); err != nil {
		t.Fatalf("wiped a directory that is not a table's: %v", err)
	}
	if _, err := Open("products", time.Hour, Options{Dir: t.TempDir(), MemoryBudget: 1 << 20}); err == nil {
		t.Fatal("budget below the minimum accepted")
	}
}

// manyKeys is TestPebbleHeapBound's table size: TABLES_KEYS, default
// 20,000, 3,000 under -race (pebble checks its invariants there: slow).
func manyKeys(t *testing.T) int {
	if raceEnabled {
		return envInt(t, "TABLES_KEYS", 3_000)
	}
	return envInt(t, "TABLES_KEYS", 20_000)
}

// envInt is the environment variable name's integer, def when unset.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// TestPebbleHeapBound: a table of many keys in pebble keeps the Go heap
// under its budget plus a margin, where the same table in memory takes
// several times more (its values alone are twice the bound). Every key
// gets a version, then a second one (the table's topic published again);
// lookups find each, and a trim drops every first version (Trims until
// it is over: it logs how many, and the longest). Run with
// TABLES_KEYS=10000000 (and TABLES_VALUE=100, bytes per value) to measure
// a 10M-key table: it logs the times and the peak RSS; TABLES_BUDGET sets
// the budget (default MinMemoryBudget). TABLES_MEMORY=1 runs it in
// memory, to watch it fail.
func TestPebbleHeapBound(t *testing.T) {
	n := manyKeys(t)
	budget := envInt(t, "TABLES_BUDGET", MinMemoryBudget)
	dir := filepath.Join(t.TempDir(), "big")
	if os.Getenv("TABLES_DIR") != "" {
		dir = os.Getenv("TABLES_DIR")
	}
	opts := Options{Dir: dir, MemoryBudget: int64(budget)}
	if os.Getenv("TABLES_MEMORY") != "" { // to watch the test fail
		opts = Options{}
	}
	tb, err := Open("big", time.Hour, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tb.Close() }()
	size := (budget+margin)/n + 1 // in memory, the values pass the bound
	if raceEnabled {
		size = 100 // pebble, checking its invariants, is slow to write much
	}
	size = envInt(t, "TABLES_VALUE", size) // bytes per value
	values := [2][]byte{make([]byte, size), make([]byte, size)}
	for i := range size {
		values[0][i], values[1][i] = 'a'+byte(i%26), 'A'+byte(i%26)
	}
	var peak uint64
	var took [2]time.Duration
	for v, at := range []int64{1000, 5000} {
		start := time.Now()
		for i := range n {
			tb.Put(fmt.Sprintf("sku-%09d", i), at+int64(i%1000), values[v], false)
			if i%(n/4) == 0 {
				peak = max(peak, liveHeap())
			}
		}
		took[v] = time.Since(start)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	start := time.Now()
	lookups := min(n, 10_000)
	for j := range lookups {
		i := rng.IntN(n)
		if v, ok := tb.AsOf(fmt.Sprintf("sku-%09d", i), 2000+4000*int64(j%2)); !ok || string(v) != string(values[j%2]) {
			t.Fatalf("key %d: %.10q, %v; want %.10q", i, v, ok, values[j%2])
		}
	}
	looked := time.Since(start) / time.Duration(lookups)
	peak = max(peak, liveHeap())
	start = time.Now()
	var trims int
	var longest time.Duration
	for trims = 0; trims == 0 || tb.Trimming(); trims++ {
		t0 := time.Now()
		tb.Trim(6000 + time.Hour.Milliseconds()) // drops every first version
		longest = max(longest, time.Since(t0))
		if trims%64 == 0 {
			peak = max(peak, liveHeap())
		}
	}
	trimmed := time.Since(start)
	peak = max(peak, liveHeap())
	if err := tb.Err(); err != nil {
		t.Fatal(err)
	}
	if tb.Keys() != n || tb.Versions() != n || tb.Bytes() != int64(n*size) {
		t.Fatalf("after the trim: %d keys, %d versions, %d bytes; want %d, %d, %d", tb.Keys(), tb.Versions(), tb.Bytes(), n, n, n*size)
	}
	if s := tb.Size(); opts.Dir != "" && (s.DiskBytes <= 0 || s.MemoryBytes <= 0 || s.MemoryBytes > int64(budget)) {
		t.Fatalf("size %+v: want some bytes on disk, and in memory within the budget of %d", s, budget)
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("%d keys × 2 versions of %d bytes: put in %v + %v, %v a random lookup, trimmed in %v (%d Trims, the longest %v); live heap peak %d MiB, peak RSS %d MiB; %+v",
		n, size, took[0], took[1], looked, trimmed, trims, longest, peak>>20, ru.Maxrss>>10, tb.Size())
	if peak > uint64(budget+margin) {
		t.Fatalf("live heap %d MiB, above the budget of %d MiB + %d MiB", peak>>20, budget>>20, margin>>20)
	}
}

// margin is the Go heap TestPebbleHeapBound allows beyond the table's
// budget: the test's and the runtime's own.
const margin = 8 << 20

// liveHeap is the Go heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestTrimSpread: a pebble table whose trims are cut short at random
// (a few keys per Trim, the rest at the next Trims) answers every lookup
// as of t ≥ the latest Trim's watermark − history as a memory table given
// the same puts and Trims, whether or not its trim is over (invariant 9);
// once it is over (Trimming false) it holds the same keys, versions and
// bytes, and answers every lookup alike, those beyond the history
// included. Puts go below the bound too, behind a trim under way, but
// not to the keys with tombstones: a key forgotten by a trim (invariant 3)
// answers a put below the bound after it as the order of the trim and
// the put has it (invariant 9); and a key with a tombstone that memory
// forgot before a put after the bound came, pebble may trim after: it
// keeps the tombstone, or marks the key trimmed, answering alike as of
// t ≥ the bound (invariant 4). So the keys with tombstones (k0 to k19)
// are compared by their answers as of t ≥ the bound only, the others (k20
// to k39) version by version, and by their answers beyond the history too. When a trim ends, memory trims again: the
// trim may have seen puts below the bound that came after memory's.
func TestTrimSpread(t *testing.T) {
	const history = 50
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		mem := storages[0].open(t, history*time.Millisecond)
		dsk := storages[1].open(t, history*time.Millisecond)
		wm := int64(0)
		spread, ended, below := 0, 0, 0
		for op := 0; op < 4000; op++ {
			k := rng.IntN(40)
			key := "k" + strconv.Itoa(k)
			was := dsk.Trimming()
			switch r := rng.IntN(20); {
			case r < 8:
				at := wm - history + rng.Int64N(250) // at or after the bound
				tomb := k < 20 && rng.IntN(6) == 0
				if k >= 20 && rng.IntN(3) == 0 {
					at = wm - history - 1 - rng.Int64N(100) // below it
					if dsk.Trimming() {
						below++
					}
				}
				val := []byte(fmt.Sprintf("v%d", rng.IntN(1000)))
				mem.Put(key, at, val, tomb)
				dsk.Put(key, at, val, tomb)
			case r < 10:
				wm += rng.Int64N(60)
				mem.Trim(wm)
				dsk.disk.trimMax = 1 + rng.IntN(4)
				dsk.Trim(wm)
			case r < 11 && dsk.Trimming(): // the trim goes on at the same watermark
				dsk.Trim(wm)
			default:
				at := wm - history + rng.Int64N(200)
				if !dsk.Trimming() && k >= 20 {
					at -= 150 // beyond the history too, once the trim is over
				}
				if m, d := asOf(mem, key, at), asOf(dsk, key, at); m != d {
					t.Fatalf("seed %d op %d: AsOf(%s, %d), trim under way %v: memory %s, pebble %s; wm %d %s", seed, op, key, at, dsk.Trimming(), m, d, wm, entriesDiffer(mem, dsk, k, k+1))
				}
			}
			if dsk.Trimming() {
				spread++
				continue
			}
			if was {
				// the trim just ended: it may have seen puts below the
				// bound since memory's last trim, which memory trims now
				mem.Trim(wm)
			}
			ended++
			if m, d := mem.Size(), dsk.Size(); m.Keys != d.Keys || m.Bytes != d.Bytes {
				t.Fatalf("seed %d op %d: trim over: memory %d keys, %d bytes; pebble %d, %d", seed, op, m.Keys, m.Bytes, d.Keys, d.Bytes)
			}
			if op%10 == 0 {
				if diff := entriesDiffer(mem, dsk, 20, 40); diff != "" {
					t.Fatalf("seed %d op %d: trim over: %s", seed, op, diff)
				}
			}
		}
		if err := dsk.Err(); err != nil {
			t.Fatal(err)
		}
		if spread == 0 || ended == 0 || below == 0 {
			t.Fatalf("seed %d: %d operations with a trim under way, %d without, %d puts below the bound during a trim: want some of each", seed, spread, ended, below)
		}
		t.Logf("seed %d: %d operations with a trim under way, %d without, %d puts below the bound during a trim", seed, spread, ended, below)
	}
}

// TestMissRemembered: in pebble, a lookup of a key the table does not
// have reads pebble once, and its next ones read nothing, until a put
// gives the key a version, which the next lookup finds, and a trim
// forgets it again; the keys remembered absent count in the cache's
// budget, which holds.
func TestMissRemembered(t *testing.T) {
	tb := storages[1].open(t, 10*time.Millisecond)
	d := tb.disk
	miss := func(want string) {
		t.Helper()
		for range 3 {
			if got := asOf(tb, "gone", 100); got != want {
				t.Fatalf("AsOf(gone) = %s, want %s", got, want)
			}
		}
	}
	loads := d.loads
	miss("<none>")
	if d.loads != loads+1 {
		t.Fatalf("3 lookups of a key the table does not have read pebble %d times, want once", d.loads-loads)
	}
	tb.Put("gone", 50, []byte("back"), false)
	miss("back")
	tb.Put("gone", 60, nil, true)
	tb.Trim(200) // forgets the key: its only version left is a tombstone
	miss("<none>")
	for i := range 100 {
		asOf(tb, "absent-"+strconv.Itoa(i), 100)
	}
	if d.cached > d.cacheMax || len(d.entries) != d.lru.Len() {
		t.Fatalf("cache of %d bytes for %d, %d keys; at most %d", d.cached, len(d.entries), d.lru.Len(), d.cacheMax)
	}
}
