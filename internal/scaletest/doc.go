// Package scaletest holds end-to-end tests of signalbox's distributed engine:
// several pipelines in one Kafka consumer group (sources/kafka in group mode)
// against an embedded kfake cluster over TCP, through rebalances caused by an
// instance joining and by one leaving gracefully.
//
// What the tests check (see scale_test.go):
//
//  1. At-least-once across rebalances: every produced offset appears in the
//     union of the instances' outputs.
//  2. Order: within one instance's output, the records not flagged late are
//     in the timer order (event time, key, topic, partition, offset), with no
//     repeat. A record re-read after a rebalance may appear again, flagged
//     late.
//  3. Co-partitioning: every assignment an instance receives holds partition
//     p of every input topic or of none, and no partition is owned by two
//     instances at once (ownership ends when the engine has handled the
//     revoking Fetch, or at Close).
//  4. Commits at a revoke (and at a graceful stop): the group's committed
//     offset of each partition is at or below the lowest offset the instance
//     read but had not emitted (so the next owner re-reads it), and every
//     offset below it that the instance read was flushed to its sink.
//  5. Brief, "Scale" (design.md W7): each co-partitioned task has its own
//     watermark, so history that was never emitted is never released late
//     just because its task moved to an instance whose watermark is ahead.
//
// TestWindowGroupMembers (window_test.go, issue 37) runs the real binary
// instead (internal/crashtest's Binary and broker): two `signalbox run`
// members of a group with 2 s tumbling windows keyed by the Kafka key,
// each with its own state.dir and JSONL sinks, through a join, a clean
// leave and a return under live traffic, each moving tasks in the middle
// of their windows (the test waits for each move to show in the members'
// logs). In the union of the members'
// window outputs every window is present with the oracle's values
// (crashtest.CheckWindows); a window emitted by both a task's old and new
// owner is an exact copy.
//
// Sarama's default group strategy is range. With the same member set on
// every topic and equal partition counts, range gives partition p of every
// topic to the same member, which is the co-partitioning signalbox needs;
// TestRangeAssignorCoPartitions pins that, and shows how unequal partition
// counts break it.
//
// The package contains tests only.
package scaletest
