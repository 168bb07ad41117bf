package tables

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// opener opens an empty table named products of the given history in one
// of the storages.
type opener func(t *testing.T, history time.Duration) *Table

// storages are the table's storages: every test of the invariants runs on
// each. The pebble one gets a tiny cache and batch, so that lookups load
// entries from pebble and writes are committed.
var storages = []struct {
	name string
	open opener
}{
	{"memory", func(t *testing.T, history time.Duration) *Table {
		t.Helper()
		tb, err := New("products", history)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}},
	{"pebble", func(t *testing.T, history time.Duration) *Table {
		t.Helper()
		tb, err := Open("products", history, Options{Dir: filepath.Join(t.TempDir(), "products"), MemoryBudget: MinMemoryBudget})
		if err != nil {
			t.Fatal(err)
		}
		tb.disk.cacheMax, tb.disk.batchMax = 600, 300
		t.Cleanup(func() {
			if err := tb.Err(); err != nil {
				t.Error(err)
			}
			if err := tb.Close(); err != nil {
				t.Error(err)
			}
		})
		return tb
	}},
}

// eachStorage runs test on every storage, as subtests.
func eachStorage(t *testing.T, test func(t *testing.T, open opener)) {
	for _, s := range storages {
		t.Run(s.name, func(t *testing.T) { test(t, s.open) })
	}
}

func asOf(tb *Table, key string, at int64) string {
	v, ok := tb.AsOf(key, at)
	if !ok {
		return "<none>"
	}
	return string(v)
}

func TestAsOfBoundaries(t *testing.T) { eachStorage(t, testAsOfBoundaries) }

func testAsOfBoundaries(t *testing.T, open opener) {
	tb := open(t, time.Hour)
	tb.Put("a", 100, []byte("v1"), false)
	tb.Put("a", 200, []byte("v2"), false)
	for _, c := range []struct {
		at   int64
		want string
	}{
		{99, "<none>"}, // before the first version
		{100, "v1"},    // exactly at a version: joined
		{199, "v1"},    // 1 ms before the next: not yet
		{200, "v2"},
		{1 << 40, "v2"},
	} {
		if got := asOf(tb, "a", c.at); got != c.want {
			t.Errorf("AsOf(a, %d) = %s, want %s", c.at, got, c.want)
		}
	}
	if got := asOf(tb, "b", 150); got != "<none>" {
		t.Errorf("unknown key: %s", got)
	}
}

func TestTombstone(t *testing.T) { eachStorage(t, testTombstone) }

func testTombstone(t *testing.T, open opener) {
	tb := open(t, time.Hour)
	tb.Put("a", 100, []byte("v1"), false)
	tb.Put("a", 200, []byte("ignored"), true)
	tb.Put("a", 300, []byte("v3"), false)
	for at, want := range map[int64]string{150: "v1", 200: "<none>", 299: "<none>", 300: "v3"} {
		if got := asOf(tb, "a", at); got != want {
			t.Errorf("AsOf(a, %d) = %s, want %s", at, got, want)
		}
	}
}

// TestOutOfOrderPuts: versions put in any order answer as if put in order;
// a put at a version time already there replaces it (the later wins).
func TestOutOfOrderPuts(t *testing.T) { eachStorage(t, testOutOfOrderPuts) }

func testOutOfOrderPuts(t *testing.T, open opener) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		times := []int64{10, 20, 30, 40, 50}
		rng.Shuffle(len(times), func(i, j int) { times[i], times[j] = times[j], times[i] })
		tb := open(t, time.Hour)
		for _, at := range times {
			tb.Put("k", at, []byte{byte('0' + at/10)}, at == 30)
		}
		tb.Put("k", 20, []byte("X"), false) // replaces the version at 20
		for at, want := range map[int64]string{9: "<none>", 10: "1", 25: "X", 30: "<none>", 45: "4", 99: "5"} {
			if got := asOf(tb, "k", at); got != want {
				t.Fatalf("order %v: AsOf(k, %d) = %s, want %s", times, at, got, want)
			}
		}
		if tb.Versions() != 5 {
			t.Fatalf("versions = %d, want 5", tb.Versions())
		}
	}
}

func TestPutCopiesValue(t *testing.T) { eachStorage(t, testPutCopiesValue) }

func testPutCopiesValue(t *testing.T, open opener) {
	tb := open(t, time.Hour)
	b := []byte("v1")
	tb.Put("a", 1, b, false)
	b[0] = 'x'
	if got := asOf(tb, "a", 1); got != "v1" {
		t.Fatalf("got %s", got)
	}
}

// TestTrim: versions older than watermark − history go except the newest
// of them; lookups at or after the bound answer as before, older ones get
// the oldest version kept and count in Beyond.
func TestTrim(t *testing.T) { eachStorage(t, testTrim) }

func testTrim(t *testing.T, open opener) {
	tb := open(t, 100*time.Millisecond)
	for _, at := range []int64{100, 200, 300, 400} {
		tb.Put("a", at, []byte{byte('0' + at/100)}, false)
	}
	tb.Put("gone", 100, []byte("g"), false)
	tb.Put("gone", 150, nil, true)
	tb.Put("b", 50, []byte("b"), false)
	before := map[int64]string{}
	for at := int64(350); at <= 500; at += 10 {
		before[at] = asOf(tb, "a", at)
	}
	tb.Trim(450) // bound 350: 100 and 200 go, 300 stays (the newest older)
	if tb.Versions() != 3 || tb.Keys() != 2 {
		t.Fatalf("after trim: %d versions, %d keys; want 3 (a@300, a@400, b@50), 2", tb.Versions(), tb.Keys())
	}
	for at, want := range before {
		if got := asOf(tb, "a", at); got != want {
			t.Errorf("AsOf(a, %d) = %s after trim, %s before", at, got, want)
		}
	}
	if tb.Beyond() != 0 {
		t.Fatalf("beyond = %d before an old lookup", tb.Beyond())
	}
	if got := asOf(tb, "a", 150); got != "3" { // truly "1": beyond the history
		t.Errorf("old lookup = %s, want the oldest kept, 3", got)
	}
	if tb.Beyond() != 1 {
		t.Errorf("beyond = %d, want 1", tb.Beyond())
	}
	if got := asOf(tb, "b", 40); got != "<none>" || tb.Beyond() != 1 { // b lost nothing
		t.Errorf("AsOf(b, 40) = %s, beyond %d", got, tb.Beyond())
	}
	if got := asOf(tb, "gone", 500); got != "<none>" {
		t.Errorf("forgotten key: %s", got)
	}
	if tb.Bytes() != 3 {
		t.Errorf("bytes = %d, want 3", tb.Bytes())
	}
}

func TestSet(t *testing.T) { eachStorage(t, testSet) }

func testSet(t *testing.T, open opener) {
	a := open(t, time.Hour)
	a.Put("k", 1, []byte("v"), false)
	if _, err := NewSet(a, a); err == nil {
		t.Fatal("two tables of one name accepted")
	}
	s, err := NewSet(a)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Lookup("products", "k", 1); err != nil || !ok || string(v) != "v" {
		t.Fatalf("lookup: %s %v %v", v, ok, err)
	}
	if _, _, err := s.Lookup("prodcts", "k", 1); err == nil {
		t.Fatal("unknown table: no error")
	}
	if _, err := New("x", 0); err == nil {
		t.Fatal("history 0 accepted")
	}
}
