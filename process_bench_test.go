package signalbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/tables"
)

// BenchmarkReplayJSONLProcessed is BenchmarkReplayJSONL (time: field) side
// by side without and with a filter and a three-field map (WithProcess):
// the difference of their cpu-ns/record is what processing costs a replay.
// Every record passes the filter, so both write as many records.
func BenchmarkReplayJSONLProcessed(b *testing.B) {
	parts, n := jsonlParts()
	b.Run("plain", func(b *testing.B) { benchReplayJSONL(b, parts, n, signalbox.TimeFromField) })
	filter, err := process.Compile("process.filter", `value.kind != "test"`, process.Filter)
	if err != nil {
		b.Fatal(err)
	}
	mapx, err := process.Compile("process.map", `{"item": value.item, "kind": value.kind, "total": value.qty * 2.5}`, process.Map)
	if err != nil {
		b.Fatal(err)
	}
	steps := process.Steps{Filter: filter, Map: mapx}
	b.Run("filter+map3", func(b *testing.B) {
		benchReplayJSONL(b, parts, n, signalbox.TimeFromField, signalbox.WithProcess(steps.Process()))
	})
}

// BenchmarkReplayJSONLLookup is BenchmarkReplayJSONL (time: field) side by
// side: plain, a two-field map, and the same map with one field a lookup
// into a table of 100k keys (three versions each; the replay's 1,000 items
// among them, package tables): the difference of the last two is what a
// lookup costs a replay.
//
//	go test -run - -bench ReplayJSONLLookup -benchtime 3x .
func BenchmarkReplayJSONLLookup(b *testing.B) {
	parts, n := jsonlParts()
	products, err := tables.New("products", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for k := range 100_000 {
		for v := range 3 {
			products.Put(fmt.Sprintf("i-%03d", k), 1_700_000_000_000+int64(v)*5_000, fmt.Appendf(nil, `{"name":"product %d","v":%d}`, k, v), false)
		}
	}
	set, err := tables.NewSet(products)
	if err != nil {
		b.Fatal(err)
	}
	compile := func(src string) signalbox.Option {
		x, err := process.Compile("process.map", src, process.Map, process.WithTables(set))
		if err != nil {
			b.Fatal(err)
		}
		return signalbox.WithProcess(process.Steps{Map: x}.Process())
	}
	b.Run("plain", func(b *testing.B) { benchReplayJSONL(b, parts, n, signalbox.TimeFromField) })
	b.Run("map2", func(b *testing.B) {
		benchReplayJSONL(b, parts, n, signalbox.TimeFromField, compile(`{"item": value.item, "kind": value.kind}`))
	})
	b.Run("map2+lookup", func(b *testing.B) {
		benchReplayJSONL(b, parts, n, signalbox.TimeFromField, compile(`{"item": value.item, "product": lookup("products", value.item)}`))
	})
}
