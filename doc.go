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
// New refuses an Input naming a topic the source does not read
// (TopicLister), so that a typo never leaves a topic to the default event
// time, the Kafka timestamp.
//
// WithUntil bounds a run: UntilEndOffsets stops at the end of the history
// present at start-up, UntilTime(t) once the watermark reaches the event
// time t; with kafka.Config.Start at a time, that replays a time range. The
// examples (Example_kafka, ExampleUntilTime) run against an in-process
// broker (package embedded); examples/library in the repository is a whole
// program, and the signalbox command runs the same from a YAML job file.
//
// Run documents the lifecycle, New and the With options the settings and
// their defaults, Source and Sink the contracts of your own. See
// docs/design.md for the semantics; the invariant IDs below (G, W, O, L, B,
// C, R, P, M, S) are defined there.
//
// # Public API
//
// Public is what a user builds a job with: this package (New, the With
// options, the Source and Sink contracts and their optional interfaces, the
// ParkedStore interfaces a store of their own implements), record, the
// adapters (sources/..., sinks/..., formats/..., timers/durable), config for
// job files, metrics and retry for what sinks return, and embedded, an
// in-process Kafka cluster kept public so that users can test their own jobs
// against the real protocol as this module's tests do. The cores watermark,
// catchup and timers stay public as documented, pure state machines whose
// types Stats and Event report (watermark.Hold, catchup.Phase). What only
// benchmarks and tests need is under internal/: internal/strategy replaces
// the offset gate with the baselines' watermark strategies, so no option
// names watermark.ID or catchup.Phase.
//
// # The engine on one page
//
// This section is for contributors.
//
// One Run has three goroutines of its own, connected by bounded channels:
//
//	source fetchers ──▶ poller ──fetches──▶ engine ──outs──▶ sink writer
//	                    (poll.go poll)      (loop.go loop)   (writer.go write)
//
// The stages:
//
//   - The poller calls Source.Poll and decodes every record off the engine's
//     goroutine: meta filter, event time, ordering key (ingest.go prepare;
//     P6), through an input's ValueDecoder for schema'd values
//     (schemad.go). A record its decoder cannot decode yet (the registry
//     down) holds its partition there, retried with backoff (hold.go: B4).
//     A Fetch that revokes partitions waits until the engine has committed
//     their safe offsets (C4).
//   - The engine is the only goroutine that touches the run's state. For
//     each Fetch (fetch.go handle) it assigns and revokes partitions
//     (partition.go), feeds catch-up (package catchup: G1–G6) and the
//     watermark strategy (internal/strategy, package watermark: W1–W7), and parks
//     each record (ingest.go ingest: late records L1–L3, bad input B1–B3).
//     Then, in one pass (loop.go pass) at the time WithClock gives, it
//     decides the watermark and releases (see below), pauses the
//     partitions that run ahead (align.go: P3–P5), asks for evidence when a
//     record is due (W2b), and checkpoints on its interval (checkpoint.go:
//     R1–R6).
//   - The sink writer writes each released batch to every sink in order,
//     flushes the at-least-once sinks after the flush linger, and at a
//     checkpoint flushes every sink, checkpoint sink last, then commits
//     (writer.go; deliver.go retries and dead-letters, commit.go commits: C3).
//
// # The step core
//
// The engine goroutine is a driver (run) around a synchronous core (core,
// core.go, which run embeds). The core's steps are methods of core: they
// take one input and the time, and change only the core's state; the
// driver's channels, the source's and the sinks' handles are run's fields,
// out of the core's reach (the compiler checks it). The steps:
//
//   - a Fetch: beginFetch (the evidence clock; at a revoke, a checkpoint
//     barrier), then takeFetch (revoke, assign, ingest) once the driver has
//     done the barrier and read the checkpoint sink's checkpoint for the
//     assigned partitions (readRestored);
//   - a wake-up (a Fetch, a tick, an acknowledgement): startPass (the
//     watermark), releaseMore (one WithBatchSize chunk of the release;
//     flushAll's too), endPass (flow control, the end of the replay,
//     checkpoints);
//   - an acknowledgement from the sinks: notify (EventFenced changes what a
//     revoke remembers).
//
// What the outside world should do, the core writes into effects
// (effects.go): events for the observer, pauses and resumes, handled
// partitions, an evidence demand, record arrays to give back, sealed out
// batches, and a barrier (wait until the sinks acknowledged a checkpoint;
// with a DurableStore, store it and commit). The driver applies them
// (apply) between steps: Run with its poller and sink goroutine, or a test
// on one goroutine (export_test.go Stepper, which the engine transcripts
// use). Invariants:
//
//   - S1. A core step reads the time only from its argument (WithClock's
//     value, read by the driver) and never blocks: no channel send or
//     wait, no sink, source or observer call; the one exception is taking
//     a spare batch the sink goroutine returned (core.batch, the driver's
//     batchFor: a non-blocking receive).
//   - S2. The driver applies effects at fixed points: after beginFetch,
//     after takeFetch, after each release chunk that another may follow
//     (releaseMore's more), at the end of a pass (startPass, the release's
//     last chunk, endPass and flushAll's chunks together), and after the
//     last checkpoint. Within a field, in the order the core asked for
//     them; across fields, in the order effects lists them (the out
//     batches and the barrier last). What comes out depends on the inputs
//     and their times, not on the driver.
//   - S3. A release leaves the store one WithBatchSize chunk at a time, and
//     the chunk's sealed batches are handed over (backpressure) before the
//     next; a stop finishes the release under way before the last
//     checkpoint, which would otherwise claim records still parked. An out
//     batch the driver could not hand over (a stop) stays in effects and
//     goes out first with the last checkpoint.
//   - S4. At a revoke, the core asks for a barrier, and lets the revoked
//     partitions go only in its next step (takeFetch), once the driver has
//     had every sink acknowledge what was released and committed the safe
//     offsets (C4).
//   - S5. The core writes fx and never reads it (TestCoreOnlyWritesEffects):
//     no step decides on what an earlier step asked for, or on whether
//     the driver has applied it yet. Writing into c.fx is therefore the
//     same as each step returning its effects and the driver merging them,
//     in step order, into what it has not applied: lists are appended;
//     publish is or-ed; of evidence, live and barrier the later wins. Two
//     barriers meet only at a stop, when the last checkpoint's replaces one
//     the driver could not complete: its out batch comes later and its
//     checkpoint covers the other's. Apply's fixed order, resume before
//     pause, is never the reverse of the order asked: align, the only step
//     that pauses, runs once per pass and decides each partition once, and
//     a revoke's resume (takeFetch) is applied before the pass.
//
// Not pure yet: the parked store is the core's state but may be pebble
// (Park, Release do I/O); rendering a schema'd value for the sinks
// (renderOut) may wait for the registry; the core logs with the
// configured logger.
//
// Where to look:
//
//   - the watermark is decided in release.go, (*core).release: the lowest
//     of the tasks' strategies' Advance, at the evidence clock (W2a, W7);
//   - a record is released in release.go, (*core).released: the store hands
//     it over in timer order (O1–O2), it leaves its partition's outstanding
//     offsets, and goes into the current out batch;
//   - a commit is made by commit.go's (*run).commit once every sink has
//     acknowledged the checkpoint's records (C1–C3): on the sink goroutine,
//     or, with a DurableStore, on the engine goroutine once the store holds
//     the checkpoint (checkpoint.go checkpoint asks for a barrier,
//     effects.go awaitBarrier does it).
//
// The files:
//
//   - pipeline.go: Pipeline, New, Stats and Run (the lifecycle).
//   - run.go: one Run (run, newRun): the driver's state; the out batches.
//   - core.go: the step core's state (core).
//   - poll.go: the poller goroutine.
//   - loop.go: the engine's loop (the driver) and its pass after each
//     wake-up, with the core's pass steps.
//   - effects.go: what the core's steps ask of the outside world, and
//     apply, the driver's part that does it (barriers included).
//   - drive.go: the driver's lifecycle around the core, shared by Run and
//     the stepped driver: open, one Fetch's steps, the graceful finish.
//   - fetch.go: handling one Fetch (rebalance, records, evidence): the
//     driver's handle and the core's beginFetch and takeFetch.
//   - ingest.go: decoding (prepare) and parking (ingest) one record; dead
//     records. late.go: late records (the mark by the data, the policy).
//   - partition.go: a partition's and a task's state; assign, revoke, phases.
//   - release.go: the watermark, release and flushAll.
//   - handoff.go: out batches: sealed by the core (seal), handed to the
//     sink goroutine by the driver (send, backpressure, await); the spare
//     batches.
//   - checkpoint.go: checkpoints, and restoring them at start and at an
//     assignment.
//   - writer.go: the sink goroutine: write, flush, a checkpoint's flush.
//   - deliver.go: calling a sink under the retry policy; what it rejects
//     to the dead-letter sink; the rate-limited retry log.
//   - commit.go: committing a checkpoint's offsets to the source (low).
//   - align.go, pause.go: flow control, and the Pauser shared with the holds.
//   - schemad.go, hold.go: schema'd values (ValueDecoder) and the holds of
//     partitions whose records cannot be decoded yet.
//   - recycle.go: giving the source's record arrays back (Recycler).
//   - input.go: Input, and how a record's event time and key are decoded;
//     timeparse.go: an event time's text to milliseconds; topics.go: the
//     inputs' topics (InputTopics) and New's check that the source reads
//     each (TopicLister).
//   - options.go: the With options, their defaults and their validation.
//   - process.go: Process and Where (WithProcess, WithRoutedSink) as a
//     record is output; the routed sinks' batches.
//   - window.go: windows (WithWindow, package keyed) and their sinks'
//     routes; windowrun.go: the engine's part, fed as a record is output
//     and advanced with the release; windowhold.go: windows across
//     restarts (the held Low, the re-read records, the refused restores).
//   - table.go: tables (WithTables): an input whose records are versions
//     of a table that a Process looks up, applied as they are read.
//   - source.go, sink.go, strategy.go: the contracts of a Source, a Sink
//     and a ParkedStore, with their optional interfaces; sink.go also
//     reads each sink's description (describe) and picks the exactly-once
//     sink from it, the one place that decides how a sink is treated.
//   - stats.go, observe.go, opsstats.go: Stats and Event; publishing them.
//   - sinkmeter.go: the meter around every sink (timings, ordering audit).
//
// Names: the engine outputs a record (to the sinks) and notifies an Event
// (to the observer).
package signalbox
