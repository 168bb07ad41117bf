// Package chart draws the benchmark commands' charts as self-contained SVG,
// in pure Go with no external tools: horizontal bar panels (SVG, with an
// optional bound drawn across) and time series (TimeSeries). Report draws
// the strategy comparison: out-of-order % per strategy, live release
// latency beyond the delay (mean and p99, log scale), and replay throughput
// beside the raw consumer's, which it calls the ceiling only when no
// strategy outruns it.
//
// Invariants:
//
//  1. The output is a pure function of its input: the same results give
//     byte-identical SVG, which is what lets each command's test redraw a
//     checked-in chart from its JSON and compare.
//  2. Every bar is labelled with its value, so the chart reads without the
//     table; text is XML-escaped.
//  3. A title's lines after the first are notes (the command, machine,
//     date and commit of the data), wrapped to the chart's width.
package chart
