package tables

import (
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// TestPutCopiesKey: a key that aliases memory the caller then changes (a
// record's) is copied, with its value, and a second version of the key
// beside its first.
func TestPutCopiesKey(t *testing.T) { eachStorage(t, testPutCopiesKey) }

func testPutCopiesKey(t *testing.T, open opener) {
	tb := open(t, time.Hour)
	kb, vb := []byte("sku-1"), []byte(`{"n":1}`)
	tb.Put(unsafe.String(&kb[0], len(kb)), 1, vb, false)
	copy(kb, "sku-2")
	copy(vb, `{"n":2}`)
	tb.Put("sku-1", 5, []byte(`{"n":5}`), false)
	tb.Put("", 1, []byte(`{"empty":true}`), false)
	for _, c := range []struct {
		key  string
		at   int64
		want string
	}{{"sku-1", 1, `{"n":1}`}, {"sku-1", 4, `{"n":1}`}, {"sku-1", 5, `{"n":5}`}, {"sku-2", 9, "<none>"}, {"", 1, `{"empty":true}`}} {
		if got := asOf(tb, c.key, c.at); got != c.want {
			t.Fatalf("%q as of %d: %s, want %s", c.key, c.at, got, c.want)
		}
	}
}

// TestNewKeyAllocations: in memory, a new key's first version allocates
// nothing of its own: its slot in the index and its key's and value's
// bytes in the arena come from allocations that serve many keys (the
// index's growth and the arena's 1 MiB chunks, amortized), so that the
// garbage collector has no object a key to visit.
func TestNewKeyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are counted without -race")
	}
	tb, err := New("products", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 20_001)
	for i := range keys {
		keys[i] = "sku-" + strconv.Itoa(i)
	}
	value := []byte(`{"name":"a product","price":7.25}`)
	i := 0
	allocs := testing.AllocsPerRun(20_000, func() {
		tb.Put(keys[i], 1, value, false)
		i++
	})
	if allocs > 0.01 {
		t.Fatalf("%.3f allocations a new key, want none but the index's and arena's growth", allocs)
	}
}
