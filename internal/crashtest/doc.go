// Package crashtest is the SIGKILL crash-test harness of signalbox (issues
// 4 and 5): it runs `signalbox run` as a subprocess against `signalbox
// broker` in another process, kills the job with SIGKILL at seeded random
// points, both while it replays history and while it follows live traffic,
// restarts it after each kill, finishes with an `until: end-offsets` run and
// then checks the output against every record produced. With
// Crasher.Signals it stops the job with those signals (SIGINT, SIGTERM)
// instead, and the JSONL outputs must then hold every record exactly once:
//
//   - no loss: every produced record is in the output (at least once; exactly
//     once for an exactly-once sink);
//   - no reordering: the first occurrence of each record, late records
//     aside, is sorted by (event time, key, topic, partition, offset), the
//     engine's total timer order;
//   - no late history record (live records are late only when the machine
//     delays them beyond the job's delay bound; they are counted). In an
//     at-least-once output such a live record, acknowledged by the broker
//     more than the delay after its event time, may also come out of turn
//     unflagged: a killed run released past it before it was in the log,
//     and the restart, at the last checkpoint's lower watermark, released
//     it in order (Mode.Delay); counted too.
//
// TestCrashTableKafka and TestCrashTableKafkaState kill a table job (issue
// 38: orders enriched with lookup("products", value.sku)) during the
// replay after each start and while the orders are released (the first
// run once a sixth of them is released and checkpointed:
// Crasher.FirstWatermark), so that restarts resume the orders from a
// checkpoint inside them while they rebuild the table from the table
// topic's beginning; the exactly-once
// output must hold every order once, in order, with the product as of its
// event time (AsOf, the oracle; CheckEnriched), and no table record. The
// orders' event times lie just ahead of the first start, so that the
// clock releases them pass after pass, with checkpoints between: the
// engine checkpoints only between passes, and a history whose records are
// all due at once is released in one pass, with no checkpoint before its
// end.
//
// TestCrashWindowKafka kills a window job (one-second tumbling windows per
// key; issue 37) in no group during its replays; TestCrashWindowGroup and
// TestCrashWindowGroupKafka run it in a group with state.dir, keyed by the
// Kafka key, each key's records in one task (Producer.TaskKeys), over a
// history the clock releases after the start, pass after pass with
// checkpoints between (as the table tests' orders), the first kill once
// the watermark is past a third of it and the run has checkpointed
// (Crasher.FirstWatermark): a kill after a checkpoint with windows open.
// TestCrashWindowGroup's job has a hopping window too. The window output
// must hold every window of the oracle (CheckWindows: all the records, in
// one batch; tumbling or hopping windows) with its values: exactly once
// for the transactional Kafka sink, at least once for JSONL (a repeat is
// an exact copy), first emissions in the order of their ends (within each
// task, in a group).
//
// On failure the work directory (job files, per-run logs and outputs) is
// kept and its path logged.
//
// Everything random (record keys and disorder, kill targets and kill
// thresholds) derives from one seed, logged by every test together with
// each kill point. Replay a failure with
//
//	SIGNALBOX_CRASH_SEED=<seed> go test -run <Test> ./internal/crashtest
//
// or `go test ./internal/crashtest -run <Test> -args -seed=<seed>`. A kill
// point is a condition on the job's /status document (replay progress, or
// time since the replay finished), so a replay reproduces the kill plan;
// the exact instant still depends on scheduling.
//
// Check, the output checker, is a pure function with its own tests, so that
// each property is shown to fail on an output that breaks it.
package crashtest
