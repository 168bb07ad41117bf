// Package harness runs signalbox's benchmark: every watermark strategy side
// by side on the same data in one run, through the same engine, Kafka source
// and measuring sink, plus the ceiling, raw sarama consumption of the same
// data with no ordering. RunDemo is the same machinery with the offset gate
// alone; it backs `signalbox demo`.
//
// A run has two phases on one embedded broker:
//
//  1. Throughput (optional): each strategy alone, then raw sarama, replays
//     the history in bounded mode (until the start-up end offsets), one
//     after the other so none competes for the cores. A Runner may run each
//     in a subprocess, which makes its peak RSS its own.
//  2. Ordering: every strategy at once, from earliest, with some topics slow
//     to connect (workload.SlowStart), then live traffic. Without live
//     traffic the pipelines run bounded and flush at the end.
//
// Invariants:
//
//  1. Only the strategy differs between lanes: same source configuration,
//     inputs, delay, sink type and engine options.
//  2. The measuring sink counts a record as out of order when its event time
//     is below the greatest event time the same lane emitted before it
//     (timeless reference records are not ordered and not counted).
//  3. Release latency is measured only for live records (event time above
//     the history's end) that were not released late: wall time at the
//     sink's Write − (event time + delay).
//  4. Late counts come from the engine's Stats, never from the sink.
//  5. Nothing in this package asserts timing; the smoke test checks
//     correctness figures only.
package harness
