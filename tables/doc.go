// Package tables keeps versioned tables: for each key, the versions a
// table topic's records made of it, each valid from its version time on,
// so that a record can be enriched with the version as of its own event
// time (issue 38, docs/config.md "Tables and enrichment"). It does no I/O
// and keeps no clock: the engine puts versions and trims with the
// watermark it decided; lookups pass the record's event time.
//
// Invariants:
//
//  1. AsOf(key, t) is the version with the greatest version time at or
//     before t: a version exactly at t is joined, one 1 ms later is not.
//     No such version, or a tombstone there, is "not found".
//  2. The versions of a key are kept in version-time order whatever the
//     order of the puts. A put at a version time the key already has
//     replaces that version: the later put wins (a topic partition's later
//     offset).
//  3. Trim(bound) drops the versions of each key older than bound except
//     the newest of them, so that AsOf(key, t) for every t ≥ bound answers
//     as before the trim. A key whose only version left is a tombstone
//     older than bound is forgotten: it answers "not found" as before.
//  4. A lookup older than what a trim kept (t before the oldest version
//     kept of a key that lost versions) answers the oldest version kept
//     and counts in Beyond: the answer may differ from before the trim.
//     (A key forgotten by a trim answers "not found" uncounted.)
//  5. A Set's names are distinct; a Lookup in a table it does not hold is
//     an error naming the table.
//  6. A Table is not safe for concurrent use; Beyond may be read from any
//     goroutine. The keys and values given to Put are copied.
package tables
