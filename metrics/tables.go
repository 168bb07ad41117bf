package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/signalbox/signalbox/tables"
)

// The descriptors of TableCollector, by the tables.Size field they read.
var (
	dTableKeys     = desc("table_keys", "Keys a table holds now.", "table")
	dTableKept     = desc("table_kept_versions", "Versions a table keeps now (its history behind the watermark, and the newest before it).", "table")
	dTableBytes    = desc("table_value_bytes", "Bytes of the values of the versions a table keeps now.", "table")
	dTableDisk     = desc("table_disk_bytes", "Disk space of a table kept in pebble (state.dir), as of its last write to pebble. Absent for a table in memory.", "table")
	dTableMemBytes = desc("table_memory_bytes", "Memory a table kept in pebble (state.dir) holds: pebble's memtables and block cache, its pending writes and its cache of entries, as of its last write to pebble; within its memory budget. Absent for a table in memory.", "table")

	tableDescs = []*prometheus.Desc{dTableKeys, dTableKept, dTableBytes, dTableDisk, dTableMemBytes}
)

// TableCollector is a prometheus.Collector of the size of a job's tables
// (tables.Table.Size), read at each scrape.
type TableCollector struct {
	sizes func() []tables.Size
}

// NewTableCollector returns a TableCollector that calls sizes (typically
// tables.Set.Sizes) once per scrape; sizes must be safe from any
// goroutine, as tables.Table.Size is.
func NewTableCollector(sizes func() []tables.Size) *TableCollector {
	return &TableCollector{sizes: sizes}
}

// Describe sends every descriptor.
func (c *TableCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range tableDescs {
		ch <- d
	}
}

// Collect sends the size of each table.
func (c *TableCollector) Collect(ch chan<- prometheus.Metric) {
	e := emitter{ch}
	for _, s := range c.sizes() {
		e.gauge(dTableKeys, float64(s.Keys), s.Name)
		e.gauge(dTableKept, float64(s.Versions), s.Name)
		e.gauge(dTableBytes, float64(s.Bytes), s.Name)
		if s.Pebble {
			e.gauge(dTableDisk, float64(s.DiskBytes), s.Name)
			e.gauge(dTableMemBytes, float64(s.MemoryBytes), s.Name)
		}
	}
}
