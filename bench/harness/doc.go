// Package harness runs signalbox's benchmark: every watermark strategy side
// by side on the same data in one run, through the same engine, Kafka source
// and measuring sink (the lanes of package internal/demo), plus the ceiling,
// franz-go's consumer with its defaults reading the same data with no
// ordering (RawConsume). The baseline
// strategies (bench/baseline) are wired in here, never in internal/demo, so
// the product binary does not link them.
//
// A run has two phases on one embedded broker:
//
//  1. Throughput (optional): each strategy alone, then raw franz-go, replays
//     the history in bounded mode (until the start-up end offsets), one
//     after the other so none competes for the cores. A Runner may run each
//     in a subprocess, which makes its peak RSS its own.
//  2. Ordering: every strategy at once, from earliest, with some topics slow
//     to connect (workload.SlowStart), then live traffic. Without live
//     traffic the pipelines run bounded and flush at the end.
//
// The lanes' invariants (same engine and sink for all, what counts as out
// of order, where release latency is measured, late counts from the
// engine's Stats) are package demo's. Nothing in this package asserts
// timing; the smoke test checks correctness figures only.
package harness
