package signalbox_test

import (
	"testing"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/process"
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
