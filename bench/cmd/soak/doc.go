// Command soak runs one `signalbox run` job for a given time at a steady
// rate under periodic faults, samples each member's resources, and checks
// the output at the end:
//
//	eval "$(bash .ci/postgres.sh | tail -n 1)"   # exports SIGNALBOX_PG_DSN
//	go run ./bench/cmd/soak -duration 1h -rate 1000 -out /tmp/soak
//
// Set-up, all started by the command itself: an embedded Kafka cluster
// (kfake over TCP) in this process, whose listener tracks every accepted
// connection; a `_bulk` HTTP server in this process; the job as the real
// `signalbox run` binary (built from this module unless -signalbox names
// one) with a PostgreSQL sink (exactly-once, table soak_<unix time>), a
// bulk sink (at-least-once, one document per record) and a JSONL
// dead-letter sink per member. Member "a" runs the whole time; member "b"
// of the same consumer group comes and goes.
//
// Load: a short history, then live records at -rate over 4 topics × 4
// partitions (internal/workload: event time ≈ now, disorder ≤ 100ms, keys
// co-partitioned), produced by this process over connections the faults
// never touch.
//
// Faults, each on its own period (flags; 0 turns one off):
//
//   - -drop-every: every connection the members hold to the broker is
//     closed (the members' only; the producer's are kept);
//   - -pg-lock-every / -pg-lock-for: a separate connection holds LOCK
//     TABLE … IN ACCESS EXCLUSIVE MODE on the data table;
//   - -bulk-every / -bulk-for: the _bulk server answers every request with
//     429, or 503 on alternate outages;
//   - -member-period: member b joins at a quarter of each period, is killed
//     with SIGKILL and restarted at once at half, and leaves (SIGTERM) at
//     three quarters.
//
// A member that exits on its own is an unexpected exit: reported with its
// exit status and log tail, and restarted. A member that releases nothing
// for -stall while records are produced is stalled, and one that does not
// exit -stop-wait after SIGTERM hangs: both are reported and sent SIGQUIT,
// so that its log ends with its goroutines' stacks, then restarted (a
// stall) or killed (a hang). Each of these fails the soak.
//
// Samples, every -sample: each member's RSS (/proc/<pid>/status VmRSS), open
// files (/proc/<pid>/fd) and, from its admin server's /metrics,
// go_goroutines and go_memstats_heap_inuse_bytes.
//
// At the end the producer stops, the members drain until both sinks hold
// every record (or -drain passes: a stall, a failure) and stop with
// SIGTERM. After a stall a last member runs alone with `until: end-offsets`,
// so that the check tells records stalled from records lost. The output is
// then checked against the topics' end offsets:
//
//   - PostgreSQL: every record exactly once, and per key in the engine's
//     release order (event time, topic, partition, offset): the rows of a
//     key read by seq (insertion order) strictly increase in that order;
//   - bulk: every record at least once; re-deliveries counted (allowed at a
//     SIGKILL); the first delivery of each record per key in release order;
//   - no late record in either sink, and no dead letter;
//   - flat resources: for member a, the mean over the last sixth of the run
//     within 10% of the mean over its second sixth (for 1h: minutes 50–60
//     against 10–20).
//
// It writes -out/soak.json (every sample, event and check), -out/soak.svg
// (RSS, Go heap, goroutines and open files over time, faults marked; drawn
// from the JSON by bench/chart) and -out/soak.md (the figures), prints a
// summary, and exits 1 when a check fails. -doc splices the figures into a
// Markdown file (docs/bench.md) between the soak markers and writes
// soak.json and soak.svg beside it; -replot redraws all of it from a
// soak.json without running anything.
package main
