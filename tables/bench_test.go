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
	const keys = 200_000
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
				for v := range int64(3) {
					tb.Put(names[i], 1000*v, value, false)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for range b.N {
				if _, ok := tb.AsOf(names[rng.IntN(keys)], 1500); !ok {
					b.Fatal("not found")
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
