// Package early carries the processing that package config runs as a
// record is decoded, before it is parked, to the root package, which runs
// it where it decodes records (docs/design.md K12). It is the root
// package's one option that is not part of its API: a Go program runs
// its Process at release, with WithProcess.
//
// Invariants:
//
//  1. A Func changes nothing of a record but what its Process reads back
//     at release (package process's Early: record.Record.DecodedValue, of
//     a JSON input only), so that a record it did not prepare, or whose
//     preparation a store did not keep, gets the same result at release.
//  2. The root package calls a topic's Func only on that topic's records,
//     right after a successful decode, with the members of the value the
//     decode scanned; never on a record of a table's topic or of a
//     schema'd input. It may call it on two records at once (the poller
//     and its helper, prepareSplit), never twice on one.
package early
