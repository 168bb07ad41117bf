// Package gcpace keeps the Go heap of a long run at the size its typical
// collection calls for, not at the size its worst one did.
//
// Go's collector sets each heap goal from the live heap the previous
// collection marked: goal = live × (1 + GOGC/100). A replay's live heap is
// small and steady, but what one collection marks moves by a third or more
// from one collection to the next: objects allocated while it marks count as
// live, and the fetch and sink pipelines are full or empty at that moment.
// Each high mark lifts the next heap goal, and the process's peak RSS is the
// highest goal reached, so a long run's peak creeps above a short run's with
// the number of collections, though nothing it holds grew. The Pacer
// instead proposes a soft memory limit (runtime/debug.SetMemoryLimit) from
// the median of the recent marks, under which the collector starts earlier
// after a high one.
//
// Invariants:
//
//  1. Pacer.Observe is pure and deterministic: its answer depends only on
//     the Config and the observations given, in order. Only Start touches
//     the runtime.
//  2. No limit until Window collections have been observed: while the heap
//     grows to its working size at start-up, GOGC alone paces the
//     collector.
//  3. Afterwards the heap allowance is the larger of (1 + GCPercent/100) ×
//     the (lower) median live heap of the last Window collections and
//     (1 + GCPercent/400) × the newest live heap. So one high mark lifts
//     the allowance by at most a quarter of GOGC's growth over itself, and a
//     live heap that really grows (parked records in live traffic) always
//     leaves the collector a quarter of GOGC's headroom while the median
//     catches up: it is never driven to collect back to back.
//  4. The limit is the allowance plus the runtime's overhead as observed
//     (memory it counts towards the limit beside heap objects: stacks,
//     metadata, fragmentation), never above Config.Ceiling: the pacer only
//     ever lowers the static limit.
//  5. Start observes every collection it sees complete and sets the limit
//     Observe proposes; the function it returns stops observing and puts
//     back the limit that was in force before Start.
package gcpace
