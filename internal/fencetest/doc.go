// Package fencetest runs two members of one consumer group against a real
// PostgreSQL server and the embedded Kafka cluster (kfake over TCP), with a
// table lock that stalls the first member's sink while the second joins.
// It holds tests only.
//
// Invariants checked:
//
//  1. Both members stay alive: a stale member's checkpoint is refused
//     (fenced), never fatal to either member.
//  2. Every input record is stored exactly once.
//  3. A commit the stale member could not make is counted as skipped, never
//     as committed: each member's last counted commit of a partition it owns
//     is what Kafka holds.
package fencetest
