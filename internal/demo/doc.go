// Package demo runs signalbox on the reference scenario (package workload)
// on an embedded broker, through the engine, the Kafka source and a
// measuring sink, and summarizes what came out. RunDemo backs `signalbox
// demo`; the benchmark harness (bench/harness) runs the same lanes with its
// baseline strategies beside the offset gate. This package imports no
// baseline, so the product binary links none.
//
// A lane is one strategy's pipeline with its measuring sink. Lanes run in
// two ways:
//
//  1. Replay: one lane alone replays the history in bounded mode (until the
//     start-up end offsets), for its throughput.
//  2. Ordering (Scenario.Ordering): every lane at once, from earliest, with
//     some topics slow to connect (workload.SlowStart), then live traffic.
//     Without live traffic the pipelines run bounded and flush at the end.
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
//  5. Nothing in this package asserts timing; its tests check correctness
//     figures only.
//  6. Visible latency (Options.Visible) is measured by a reader of a real
//     sink that the lane writes beside its measuring sink, for the same
//     live records: wall time when the reader sees the record − (event
//     time + delay). The JSONL reader tails the file (resolution
//     pollEvery); the Kafka readers are read_committed consumers. The
//     readers stop only after seeing every timed record the lane wrote, or
//     after a bounded wait.
package demo
