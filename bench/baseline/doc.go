// Package baseline implements the watermark strategies signalbox is compared
// against, as internal/strategy.Strategy values, so that the benchmark runs them
// through the same engine, source and sink as the offset gate and only the
// strategy differs.
//
//   - OneLayer: timeout idleness per partition. A partition that delivered no
//     record for Timeout is idle and stops holding the watermark; the
//     watermark is the minimum, over the active partitions, of (maximum event
//     time seen − delay).
//   - TwoLayers: the same per partition, plus Flink-style input idleness: an
//     input (topic) whose own watermark (the minimum over its active
//     partitions) has not advanced for InputTimeout is idle as a whole, even
//     if some of its partitions still deliver records. The watermark is the
//     minimum over the active inputs.
//   - FixedWindow: a sorter that holds every record for Window of wall time:
//     the watermark is the maximum event time observed as of now − Window.
//
// Invariants:
//
//  1. Every strategy here ignores the catch-up evidence (SetPhase): it
//     guesses from silence or from the wall clock, which is exactly what the
//     benchmark measures.
//  2. Advance is monotonic; Restore only raises the watermark.
//  3. With no active timed partition (or input) the timeout strategies hold
//     the watermark where it is: they never advance on a processing-time
//     clock. A `time: none` partition never holds and never counts.
//  4. They are pure: time comes in as arguments; no I/O, no logging.
package baseline
