// Package record holds the data types that cross signalbox's package
// boundaries: the raw record a source delivers, the fetch that carries it
// together with the evidence of where its partition ends, and the envelope a
// sink receives.
//
// It is a leaf package (stdlib only) so that sources and sinks can implement
// the interfaces owned by the root package without importing it.
//
// Invariants:
//
//  1. Within one Fetch, the records of one partition are in increasing offset
//     order, and Position is strictly greater than the last record's offset.
//     Position is the next offset to fetch; offsets in between that carry no
//     record (transaction markers, compacted records) are covered by it.
//  2. End < 0 means "no fresh evidence in this fetch"; it never means zero.
//  3. A Record is owned by whoever holds it; signalbox never mutates a record
//     after it was handed to a sink.
//  4. A source that sets Fetch.At never lets it go back, and never sets it
//     later than the moment its last answer for every assigned partition was
//     received: a record the broker already held at At is in this Fetch or
//     an earlier one. The engine's processing-time fallback follows this
//     clock, so records waiting in buffers between the broker and the
//     engine can never become late.
package record
