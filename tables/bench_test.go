package tables

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkAsOf looks up random keys of a table of 200,000 keys (three
// versions each, 100-byte values) in each storage; the pebble one has the
// minimum budget, so that most lookups miss its cache and read pebble.
func BenchmarkAsOf(b *testing.B) {
	benchLookups(b, 200_000, 3, func(names []string, rng *rand.Rand) (string, bool) { return names[rng.IntN(len(names))], true })
}

// BenchmarkAsOfOneVersion is BenchmarkAsOf's with a table of 1,000,000
// keys of one version each, issue 38's products table: in memory, each
// lookup a slot of the index and the key's bytes, at random.
func BenchmarkAsOfOneVersion(b *testing.B) {
	benchLookups(b, 1_000_000, 1, func(names []string, rng *rand.Rand) (string, bool) { return names[rng.IntN(len(names))], true })
}

// BenchmarkAsOfMissing is BenchmarkAsOf's with keys the table does not
// have, 10,000 of them at random (orders of products that have none):
// pebble finds each absent, or remembers that it is.
func BenchmarkAsOfMissing(b *testing.B) {
	missing := make([]string, 10_000)
	for i := range missing {
		missing[i] = fmt.Sprintf("sku-%09d-gone", i)
	}
	benchLookups(b, 200_000, 3, func(_ []string, rng *rand.Rand) (string, bool) { return missing[rng.IntN(len(missing))], false })
}

// benchLookups times the lookups of the keys next picks, whose answer
// is found or "not found", in a table of keys keys of versions versions
// in each storage.
func benchLookups(b *testing.B, keys int, versions int64, next func(names []string, rng *rand.Rand) (key string, found bool)) {
	value := make([]byte, 100)
	for _, s := range []struct {
		name string
		opts func(b *testing.B) Options
	}{
		{"memory", func(*testing.B) Options { return Options{} }},
		{"pebble", func(b *testing.B) Options {
			return Options{Dir: filepath.Join(b.TempDir(), "t"), MemoryBudget: DefaultMemoryBudget}
		}},
	} {
		b.Run(s.name, func(b *testing.B) {
			tb, err := Open("bench", time.Hour, s.opts(b))
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = tb.Close() }()
			names := make([]string, keys)
			for i := range names {
				names[i] = fmt.Sprintf("sku-%09d", i)
				for v := range versions {
					tb.Put(names[i], 1000*v, value, false)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for range b.N {
				key, want := next(names, rng)
				if _, ok := tb.AsOf(key, 1500); ok != want {
					b.Fatalf("%s: found %v, want %v", key, ok, want)
				}
			}
			b.StopTimer()
			if tb.disk != nil {
				m := tb.disk.db.Metrics()
				b.Logf("block cache: %d hits, %d misses; %d files", m.BlockCache.Hits, m.BlockCache.Misses, m.Total().TablesCount)
			}
			if err := tb.Err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkAsOfHinted is BenchmarkAsOfOneVersion's lookups in blocks of
// 64, each block's keys hinted first (HintKey, then HintValue), as
// package process's Hints asks ahead of a block of records.
func BenchmarkAsOfHinted(b *testing.B) {
	const keys, block = 1_000_000, 64
	tb, err := New("bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("sku-%09d", i)
		tb.Put(names[i], 0, value, false)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var ks [block]string
	var hs [block]uint64
	b.ResetTimer()
	for done := 0; done < b.N; done += block {
		for i := range ks {
			ks[i] = names[rng.IntN(len(names))]
		}
		for i, k := range ks {
			hs[i] = tb.HintKey(k)
		}
		for _, h := range hs {
			tb.HintValue(h)
		}
		for _, k := range ks {
			if _, ok := tb.AsOf(k, 1500); !ok {
				b.Fatalf("%s: not found", k)
			}
		}
	}
}
