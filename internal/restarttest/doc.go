// Package restarttest holds end-to-end tests of what a restart restores:
// signalbox jobs, built from job files as `signalbox run` builds them, read
// an embedded kfake cluster over TCP and write to real sinks (JSONL files,
// PostgreSQL); the tests stop a job, change the cluster, and restart it.
//
// What the tests check (newpartition_test.go, design.md G7): a partition
// created while a job is stopped starts, at the restart, at the restored
// watermark. Its records older than what the job had released are flagged
// late (`late: true` in the output) and counted
// (signalbox_late_records_total); nothing is released out of turn; the other
// records come out in timer order. This holds in each mode that restores a
// watermark: a checkpoint sink without a group (PostgreSQL), a parked-state
// store (state.dir), and a consumer group whose only record is the commits
// in Kafka (the checkpoints in the commit metadata).
//
// The package contains tests only.
package restarttest
