// Package chart draws the benchmark report as a self-contained SVG, in pure
// Go with no external tools: out-of-order % per strategy, live release
// latency beyond the delay (mean and p99, log scale), and replay throughput
// against the raw sarama ceiling.
//
// Invariants:
//
//  1. The output is a pure function of the report: the same report gives
//     byte-identical SVG.
//  2. Every bar is labelled with its value, so the chart reads without the
//     table; text is XML-escaped.
package chart
