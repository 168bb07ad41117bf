// Package watermark computes signalbox's event-time watermark from evidence.
//
// It is a pure, synchronous state machine: event times, partition states and
// the current time come in as arguments; it does no I/O and logs nothing.
//
// Invariants:
//
//  1. The watermark is the minimum, over the partitions that hold it, of
//     (maximum event time seen − delay − 1 ms) (Settled). A holding
//     partition may still deliver records at its newest event time minus
//     the delay, so only what is strictly older is settled: a record more
//     than delay behind its partition's newest event time is the only kind
//     the watermark can have passed. A holding partition that has
//     delivered nothing yet contributes −∞ (MinTime).
//  2. When no partition holds it — every timed partition is caught up — the
//     processing-time fallback applies: now − delay − 1 ms (Settled of the
//     clock), so that a record appended from now on, at most delay behind
//     now, is never passed.
//  3. With no timed partition assigned at all, there is no evidence, and the
//     watermark does not move.
//  4. A timeless (`time: none`) partition never holds the watermark.
//  5. The watermark is monotonic: Advance never returns less than before.
//  6. Holders explains the value: which partitions hold it, in which state,
//     how many offsets behind, ordered by their contribution.
package watermark
