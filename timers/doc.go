// Package timers parks records under their event time and releases them in
// a total order once the watermark passes them.
//
// The Queue is a radix heap over event times (a push is an append; only the
// records of one event time are ever sorted, by the tie-break of the total
// order). It does no I/O and keeps no clock: the caller passes the watermark
// in.
//
// Invariants:
//
//  1. The order is total: (event time, key, input, partition, offset). Two
//     distinct records never compare equal. Pushing the same Pos twice (a
//     re-read after a restart) releases one copy, the later push: the
//     output is idempotent.
//  2. PopUntil(w) returns every parked record with event time ≤ w, in
//     ascending Pos order, and nothing later. After it returns, Min() > w.
//  3. Len and Bytes always equal the count and the accounted size of the
//     records pushed and not yet released or dropped (a Pos pushed twice
//     counts twice until it is released).
//  4. In steady state (the parked set no longer growing), Push and PopUntil
//     do not allocate: the bucket slices and the sort scratch are reused.
//     Released capacity is kept only up to keepFactor times the largest
//     parked set since the last turnover (plus a floor per bucket); beyond
//     it the buckets give memory back.
//  5. A push at or above the event time of the last release step costs
//     O(1). One below it costs O(Len), once: every later push is O(1) until
//     the next release step. The engine pushes below it only when a newly
//     assigned task lowers the released watermark (design W7).
package timers
