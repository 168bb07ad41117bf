// Command latency measures live latency where users see it:
// for each live rate and each real sink, the offset gate runs the reference
// scenario (internal/demo, no slow topic) with that sink beside its
// measuring sink, and a reader of the sink records when each live record
// becomes visible:
//
//	go run ./bench/cmd/latency -rates 500,2000,8000 -checkpoints 1s,200ms,50ms
//
// The sinks (demo.VisibleKinds): the JSONL file sink (at-least-once), read
// by a reader tailing the file; the Kafka sink (at-least-once), and the
// Kafka sink in transactional mode, each read by a read_committed consumer
// of its topic. Both figures are beyond the delay: release latency is the
// wall time at the sinks' Write − (event time + delay); visible latency is
// the wall time when the reader sees the record − (event time + delay).
//
// -checkpoints repeats every measurement at each engine checkpoint
// interval: the JSONL file sink is flushed, and the transactional Kafka sink
// commits, at checkpoints.
//
// Every run has its own embedded broker, history and live phase, in this
// process; the command prints a Markdown section and splices it into -out
// (docs/bench.md by default) between its markers.
package main
