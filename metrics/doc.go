// Package metrics exports a pipeline's statistics to Prometheus.
//
// NewCollector returns a prometheus.Collector that reads the snapshot a
// Pipeline publishes (signalbox.Pipeline.Stats) at each scrape and turns it
// into const metrics. The engine keeps its counters as it always does; this
// package adds nothing to the path of a record.
//
// NewTableCollector exports the size of a job's tables (keys, versions
// kept, their values' bytes; for a table in pebble, its disk and memory
// bytes) from tables.Table.Size, which the table keeps as it changes: the
// command registers it beside the Collector (admin.Options.Tables).
//
// Invariants:
//
//  1. A scrape calls the stats function (and a TableCollector's sizes) once and reads only the snapshot it
//     returns: no lock of the engine is held while metrics are built, and
//     nothing is looked up per record.
//  2. Every name has the signalbox_ prefix and a base unit (seconds, bytes,
//     records); counters end in _total. Label sets are bounded by the job:
//     topic, partition, input, task, sink, policy, phase, window, table,
//     expression.
//  3. A value that is not known yet is absent, never a sentinel: the
//     watermark at −∞ has no signalbox_watermark_seconds sample, an input
//     without a read rate no signalbox_replay_eta_seconds sample.
//  4. Every metric is described (Describe sends every descriptor), so a
//     registry checks names and label sets once, at registration.
package metrics
