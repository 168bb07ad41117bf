// Package signalbox is an event-time ordering stream processor for Kafka.
//
// A Pipeline reads records from a Source (sources/kafka), parks each under
// its event time, and writes them to its Sinks (sinks/jsonl, sinks/kafka,
// sinks/postgres, sinks/bulk) in event-time order, once the broker's end
// offsets show that nothing older can still arrive:
//
//	inputs := []signalbox.Input{{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"}}
//	topics, patterns := signalbox.InputTopics(inputs...) // the topics are declared once, in the inputs
//	src, err := kafka.New(kafka.Config{Brokers: []string{"localhost:9092"}, Topics: topics, TopicPatterns: patterns, Group: "orders-ordered"})
//	...
//	p, err := signalbox.New(src,
//		signalbox.WithInputs(inputs...),
//		signalbox.WithDelay(2*time.Second), // how late a producer may be and stay in order
//		signalbox.WithSink(jsonl.New(os.Stdout, jsonl.Options{})),
//	)
//	...
//	err = p.Run(ctx) // live until ctx is done; then flushes, checkpoints and commits
//
// Example and Example_kafka run the same against an in-process broker
// (package embedded); examples/library in the repository is a whole
// program, and the signalbox command runs the same from a YAML job file
// (package config).
//
// # What you configure
//
//   - The inputs (WithInputs): where each topic's event time and ordering
//     key come from (a JSON field, a header, the Kafka timestamp, a
//     schema'd value through a ValueDecoder), or TimeNone for reference
//     data that passes straight through.
//   - The sinks (WithSink, WithRoutedSink, WithDeadLetter), and what they
//     receive: WithProcess (filter and map), WithWindow (event-time windows
//     whose results go to sinks of their own), WithTables (tables a Process
//     looks up as of each record's event time).
//   - How late a producer may be (WithDelay) and what a later record does
//     (WithLatePolicy); when the run ends (WithUntil: live, the end of the
//     history present at start-up, or an event time).
//   - Bounds: memory (WithParkedLimit, WithParkedStore for a store that
//     spills to disk), flow control (WithAlignment), batches, checkpoints.
//     Every option's default and range is on its With function; leave an
//     option out for its default.
//
// # What it guarantees
//
//   - Order: every record is released in event-time order, ties broken by
//     key, input, partition and offset, identically on a replay and on live
//     traffic; a partition holds the others back until its consumer
//     position reaches the end offsets snapshotted at start-up, never on a
//     timeout (docs/design.md G1–G7, W1–W7, O1–O3).
//   - Late records are a function of the data: more than the delay behind
//     their partition's newest event time; flagged, counted, and emitted,
//     dead-lettered or dropped as the late policy says (L1–L3).
//   - Nothing is lost: an offset is committed only once every sink has
//     acknowledged its record, or the dead-letter sink has taken it; a bad
//     record goes to the dead-letter sink with its reason, and without one
//     Run stops rather than drop it (B1–B4, C1–C4).
//   - With a CheckpointSink (sinks/postgres, the transactional sinks/kafka)
//     a restart re-emits nothing that sink holds (R1–R11); Run's stop, a
//     rebalance and a fatal error all end with what was acknowledged
//     committed.
//
// New validates every option and names what is wrong; Run documents the
// lifecycle; Source and Sink are the contracts of your own adapters.
//
// # Public API
//
// Public is what a user builds a job with: this package (New, the With
// options, the Source and Sink contracts and their optional interfaces, the
// ParkedStore interfaces a store of their own implements), record, the
// adapters (sources/..., sinks/..., formats/..., timers/durable), process,
// keyed and tables for processing, config for job files, metrics and retry
// for what sinks return, and embedded, an in-process Kafka cluster kept
// public so that users can test their own jobs against the real protocol
// as this module's tests do. The cores watermark, catchup and timers stay
// public as documented, pure state machines whose types Stats and Event
// report (watermark.Hold, catchup.Phase). The engine (internal/engine),
// record decoding (internal/decode) and what only benchmarks and tests
// need (internal/strategy: the baselines' watermark strategies) are
// internal.
//
// # For contributors: the driver
//
// This package is the public API and the driver around the engine. The
// engine (internal/engine, its doc.go) is a synchronous state machine that
// decides everything: what to park and release, the watermark, pauses,
// late records, checkpoints, processing, windows, tables. It takes inputs
// and the time, and returns its effects (engine.Effects, pulled with Ready
// and acknowledged with Advance). The driver does the I/O, on three
// goroutines of one Run, connected by bounded channels:
//
//		source fetchers ──▶ poller ──fetches──▶ engine ──outs──▶ sink writer
//		                    (poll.go poll)      (loop.go loop)   (writer.go write)
//
//	  - The poller calls Source.Poll and decodes every record off the
//	    engine's goroutine (poll.go prepare; internal/decode: event time,
//	    ordering key, schema'd values; P6). A record whose ValueDecoder
//	    cannot answer yet holds its partition there, retried with backoff
//	    (hold.go: B4).
//	  - The engine goroutine feeds the engine each Fetch and each wake-up at
//	    the time WithClock gives, and does its effects at fixed points
//	    (loop.go: apply; S2): events to the observer, pauses and resumes at
//	    the source, out batches to the sink goroutine (backpressure), and
//	    barriers: wait until the sinks acknowledged a checkpoint, then, with
//	    a DurableStore, store it and commit (checkpoint.go restores them).
//	  - The sink goroutine writes each out batch to every sink in order,
//	    flushes the at-least-once sinks after the flush linger, and at a
//	    checkpoint flushes every sink, checkpoint sink last, then commits
//	    (writer.go; deliver.go calls a sink under the retry policy, meters
//	    it, and dead-letters what it rejects: C3).
//
// Every wall-clock read in this package says why wall time is right
// (TestClockReadsGoThroughWithClock); the engine reads none.
//
// The files:
//
//   - pipeline.go: Pipeline, New, Stats and Run (the lifecycle).
//   - options.go: the With options, their defaults and their validation.
//   - source.go, sink.go, store.go: the contracts of a Source, a Sink and
//     a ParkedStore, with their optional interfaces; sink.go also reads
//     each sink's description (describe) and picks the exactly-once sink
//     from it, the one place that decides how a sink is treated.
//   - input.go: Input, its validation and compiled form, and the
//     ValueDecoder contract.
//   - processing.go: Process and Where (WithProcess, WithRoutedSink),
//     windows (WithWindow) and tables (WithTables).
//   - stats.go: Stats and Event; publishing them.
//   - run.go: one Run's driver state, and the engine's configuration.
//   - loop.go: the engine goroutine (its loop, a Fetch, a pass, applying
//     the effects, the barriers, backpressure).
//   - poll.go, hold.go: the poller goroutine, the pause gate, and the
//     holds of partitions whose records cannot be decoded yet.
//   - writer.go, deliver.go: the sink goroutine, committing, calling and
//     metering a sink.
//   - checkpoint.go: restoring checkpoints at start and at an assignment.
//
// Names: the engine outputs a record (to the sinks) and notifies an Event
// (to the observer).
package signalbox
