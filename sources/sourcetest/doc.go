// Package sourcetest is the conformance suite of the root package's Source
// contract, run against every source (Kafka, file, script), as
// sinks/sinktest is for sinks. Each source's tests call Run with a Factory
// that serves the suite's Data.
//
// What it checks, for every source:
//
//  1. Open reads no record; the first Fetch that mentions a partition lists
//     it in Assigned, with the end offset of its data, before any of its
//     records; an empty partition is assigned with End = Start.
//  2. Each partition's records arrive once, in offset order, with their
//     values; the Position reported with them is the next offset to fetch,
//     never goes back, and reaches End.
//  3. Evidence: a reported end offset never claims a partition caught up
//     (End ≤ Position) while records remain, and never lies beyond the
//     data (it may be a lower bound); once a partition is read, its reported
//     position reaches its reported end (at assignment for an empty
//     partition), so the engine can tell it is caught up.
//  4. Pause and Resume (sources that implement them): a paused partition
//     delivers no record until resumed, then delivers all of them.
//  5. Commit: a committed offset is accepted and, where the Target can read
//     it back, stored.
//  6. Poll after its context is cancelled returns an error that is
//     context.Canceled, and Close then succeeds.
//
// The suite is for tests only; it imports package testing.
package sourcetest
