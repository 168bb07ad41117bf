// Package engine is signalbox's engine: the synchronous state machine that
// decides what to park, what to release and when, what to pause, what a
// checkpoint claims and when to commit it. It is built from a plain Config
// (New) and driven by its caller, the root package's Run (or a test), one
// step at a time; it owns no goroutine, channel, context, source or sink,
// and its imports hold that (imports_test.go: no network, no context, no
// Kafka client, no pebble, no logger implementation).
//
// # Steps, Ready and Advance
//
// Every step takes its own input and the time (the driver reads the clock,
// WithClock's), changes the engine's state, and may ask the outside world
// for something. What it asks accumulates in Effects, which the driver
// pulls with Ready, does, and acknowledges with Advance, as raft's
// Ready/Advance does:
//
//   - a Fetch: BeginFetch (the evidence clock; at a revoke, a checkpoint
//     barrier), then TakeFetch (revoke, assign, ingest) once the driver has
//     done the barrier and read the checkpoint sink's checkpoint for the
//     assigned partitions; NoteHandled after it;
//   - a wake-up (a Fetch, a tick, an acknowledgement): StartPass (the
//     watermark), ReleaseMore until it reports no more (one
//     Config.BatchSize chunk of the release each, the driver doing the
//     effects between two), EndPass (flow control, the end of the replay,
//     checkpoints), then ReleaseMore again (the end of a bounded run);
//   - the sinks' reports: Fenced (the checkpoint sink refused a
//     partition's checkpoint), Spare (a written batch to fill again);
//   - TrimSpares each tick of the wall clock, Finish at the end of a run,
//     Restore once before the first Fetch.
//
// Effects are, in the order the driver does them: events for the observer,
// resumes and pauses, the partitions handled, an evidence demand, record
// arrays to give back, the live time and a publish, the sealed out batches
// (Out), and a barrier (Barrier: wait until the sinks acknowledged the
// last batch, which carries a checkpoint; with a durable store, store it
// and commit).
//
// A commit is one named effect: Barrier, whenever the engine needs one (a
// revoke, a durable store, the last checkpoint); otherwise a checkpoint
// rides in an Out (Out.CP), and the sinks' goroutine commits once every
// sink acknowledged it (the root package's writer.go).
//
// # Invariants
//
//   - S1. A step reads the time only from its argument and never blocks:
//     no channel, no goroutine, no wall clock (TestStepsDoNotBlock). Two
//     ports may do I/O on the caller's goroutine: the parked Store (it may
//     be pebble) and Config.Render, which decodes a schema'd value for the
//     sinks and may wait for the registry (design B4) for a record that was
//     not decoded as it was read (restored from a durable store, or changed
//     by a Transform). One port runs pure work beside a step:
//     Config.Spawn, through which a long release chunk's window items are
//     evaluated ahead (ahead.go, design K10); a step waits at most for
//     one block's evaluation, and what comes out does not depend on it.
//     Config.ProcessHint, called on each block before its Process runs
//     (design K11), only asks the CPU for memory: it changes nothing.
//   - S2. The driver does the effects at fixed points: after each of a
//     Fetch's two steps, after each release chunk that another may follow,
//     at the end of a pass, and after Finish; within a field in the order
//     asked, across fields in Effects' order (the batches and the barrier
//     last). What comes out depends on the inputs and their times, not on
//     the driver.
//   - S3. A release leaves the store one chunk at a time, and the chunk's
//     batches are handed over (backpressure) before the next; a stop
//     finishes the release under way before Finish, which would otherwise
//     claim records still parked. Batches a stop kept from being handed
//     over stay (Advance's unsent) and go out first with the last
//     checkpoint.
//   - S4. At a revoke, BeginFetch asks for a barrier, and the revoked
//     partitions go only in TakeFetch, once the driver had every sink
//     acknowledge what was released and committed the safe offsets (C4).
//   - S5. The steps only write their effects, never read them
//     (TestStepsOnlyWriteEffects): no step decides on what an earlier step
//     asked for, or on whether it was done yet. Writing into the effects is
//     the same as each step returning its own and the driver merging them
//     in step order: lists are appended; publish is or-ed; of the evidence
//     demand, the live time and the barrier the later wins. Two barriers
//     meet only at a stop, when Finish's replaces one the driver could not
//     complete: its batch comes later and its checkpoint covers the
//     other's.
//
// # Where a record is decided
//
//   - The watermark: release.go, release: the lowest of the tasks'
//     strategies' Advance, at the evidence clock (W2a, W7).
//   - Parking: ingest.go, ingest: the restart skip rule, the filter and
//     transform, timeless records, the poison guard, late records (late.go,
//     L1–L3), then the store in timer order (O1–O2).
//   - Output: ingest.go, output, where a released record goes out. This is
//     the plug-in place of processing: render (Config.Render), then
//     process.go (the Process and the sinks' wheres: route bits), then the
//     windows (windowrun.go: keyed.Windows fed in release order, advanced
//     with the release watermark, their results into the same batches,
//     routed to the windows' sinks; one scope for the run without a
//     group, one per task with one, dropped with the task: design K9),
//     then the out batch. In a long release the Process and the windows'
//     evaluation may have been done ahead, on a helper (ahead.go, design
//     K10): output takes the same results either way. Tables are
//     decided before it, as their records are read (table.go: versions
//     applied from their release position, design O6), and looked up from
//     a Process at output, when the gate guarantees every version at or
//     before the record's event time is in.
//   - A checkpoint's claim: checkpoint.go (emittedClaim, low, and the
//     windows' hold, windowhold.go).
//
// # The files
//
//   - engine.go: Config, the Engine's state, New.
//   - effects.go: Effects, Out, Barrier; Ready and Advance.
//   - api.go: the driver's other inputs (Restore, Fenced, Finish) and what
//     it reads (Snapshot).
//   - types.go: events, counters, late counters, the Store port, windows.
//   - fetch.go: BeginFetch, TakeFetch; partition.go: assign, revoke, the
//     catch-up phases; pass.go: StartPass, EndPass, NextWake.
//   - ingest.go, late.go: parking and output; release.go: the watermark and
//     the release; align.go: flow control (P3–P5); handoff.go: sealing out
//     batches, spare batches; recycle.go: giving record arrays back.
//   - checkpoint.go: checkpoints and the restored ones; store.go: the
//     in-memory Store.
//   - process.go, windowrun.go, windowhold.go, table.go: processing,
//     windows (and windows across restarts), tables; ahead.go: their
//     evaluation ahead of the step on a helper.
package engine
