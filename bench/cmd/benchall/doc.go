// Command benchall runs signalbox's whole benchmark comparison in one
// command and writes the report:
//
//	go run ./bench/cmd/benchall -seed 1 -out docs/
//
// It writes <out>/bench.json (the report, for scripts), <out>/bench.svg (the
// chart, drawn by package chart) and the generated section of <out>/bench.md,
// between the markers below; everything else in bench.md (e.g. a section on
// micro-benchmarks) is kept as it is.
//
// Each throughput replay runs in a fresh subprocess (this binary re-executed
// with -child), so its peak RSS (VmHWM) is its own and not the broker's or
// another strategy's.
package main
