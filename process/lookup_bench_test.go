package process_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/tables"
)

// BenchmarkLookupMap is the enrichment map over a table of 100k
// keys with three versions each, next to the same map without lookup (the
// fast path): go test -run - -bench LookupMap ./process
func BenchmarkLookupMap(b *testing.B) {
	const keys = 100_000
	tb, _ := tables.New("products", time.Hour)
	for k := range keys {
		for v := range 3 {
			tb.Put(fmt.Sprint("sku-", k), int64(v*1000), []byte(fmt.Sprintf(`{"name":"product %d","price":%d.5,"v":%d}`, k, k%100, v)), false)
		}
	}
	set, _ := tables.NewSet(tb)
	recs := make([]record.Record, 1024)
	for i := range recs {
		recs[i] = record.Record{Topic: "orders", EventTime: int64(i % 3000), ValueJSON: true,
			Value: []byte(fmt.Sprintf(`{"id":"o%d","sku":"sku-%d","qty":3}`, i, (i*7919)%keys))}
	}
	for _, c := range []struct{ name, src string }{
		{"plain", `{"id": value.id, "sku": value.sku}`},
		{"lookup", `{"id": value.id, "product": lookup("products", value.sku)}`},
	} {
		x, err := process.Compile("process.map", c.src, process.Map, process.WithTables(set))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var dst []byte
			for i := 0; b.Loop(); i++ {
				if dst, err = x.Apply(dst[:0], &recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
