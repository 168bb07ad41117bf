// Package timers parks records under their event time and releases them in
// a total order once the watermark passes them.
//
// The Queue is a btree (github.com/google/btree) keyed by Pos. It does no I/O
// and keeps no clock: the caller passes the watermark in.
//
// Invariants:
//
//  1. The order is total: (event time, key, input, partition, offset). Two
//     distinct records never compare equal, so the btree never replaces one
//     record with another. Pushing the same Pos twice (a re-read after a
//     restart) keeps one copy: the operation is idempotent.
//  2. PopUntil(w) returns every parked record with event time ≤ w, in
//     ascending Pos order, and nothing later. After it returns, Min() > w.
//  3. Len and Bytes always equal the count and the accounted size of the
//     records parked.
//  4. In steady state (the tree no longer growing), Push and PopUntil do not
//     allocate: btree nodes are recycled through a free list.
package timers
