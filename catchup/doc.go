// Package catchup decides, from evidence, whether each partition has caught
// up with the data that existed when signalbox started, and whether it is
// keeping up since.
//
// It is a pure, synchronous state machine: positions, end offsets and the
// current time come in as arguments; it does no I/O and logs nothing.
//
// Phases of a partition:
//
//	Replaying ──position ≥ snapshot end──▶ CaughtUp ⇄ Behind
//	     │                                    │        │
//	     └───── fetch failed / stale ────▶ Unknown ◀───┘
//
// Invariants:
//
//  1. A partition is caught up only when its position — the next offset to
//     fetch — has reached the end offset. "Last record offset + 1" is never
//     used: transaction markers and compacted gaps take offsets.
//  2. Replaying ends only when the position reaches the end offset snapshotted
//     at assignment (or a fresh, lower end offset after a log truncation). A
//     partition assigned with position ≥ end (an empty partition) is caught up
//     at once.
//  3. After replay, fresh evidence (high-water mark or last stable offset)
//     beyond the position makes the partition Behind; reaching it again makes
//     it CaughtUp.
//  4. A partition whose fetch failed, or whose last evidence is older than
//     StaleAfter, is Unknown until fresh evidence arrives. Unknown never
//     counts as caught up: a timeout can hold the watermark back, never
//     advance it.
//  5. Only CaughtUp releases the watermark (Phase.Holds).
package catchup
