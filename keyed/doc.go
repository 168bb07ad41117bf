// Package keyed is keyed processing of released records, on the model of
// Flink's KeyedProcessFunction, and event-time windows built on it.
//
// A Processor calls a Function once per record, in the order the caller
// passes them (the engine's release order: event time, key, input,
// partition, offset), with per-key state (a Store: get, put, delete) and
// per-key event-time timers (a TimerQueue: MemTimers, or the Store's own
// when it is a TimerStore). The Store is MemStore by default; package
// keyed/durable has one in pebble, with a bounded cache, that holds the
// timers too (New's WithStore for Windows), so that state and timers go
// beyond memory. A Store or TimerQueue that can fail (a Failer) has its
// sticky error returned by the Processor call during which it happened. Windows is such a Function: tumbling, hopping
// and session windows per key, with count, sum, min, max, avg, first and
// last. Like watermark/ and timers/, the package does no I/O and keeps no
// clock: the caller passes each record's place in the release order and
// the watermark. The signalbox engine feeds it from its release path
// (signalbox.WithWindow); a library user may drive a Processor from a
// Sink or a Process.
//
// Time. Each record comes with at, its place in the release order: its
// event time, or, for a record released out of turn (late by the data,
// released just after its partition's mark), that later time. The
// caller guarantees that at never decreases and that Advance(wm) comes
// only once every record with at ≤ wm was passed to Process.
//
// Invariants:
//
//  1. The Processor's time only rises: Process(at) raises it to at − 1,
//     Advance(wm) to wm, Close to MaxTime. Every timer at or below the
//     time has fired, and none above it.
//  2. Tie rule: a timer at t fires after every record with at ≤ t and
//     before any record with at > t; timers of one time fire in key order
//     (bytes), and a timer set at or below the time fires before the next
//     record or within the same Advance. A key has at most one timer per
//     time.
//  3. Given the records in order, the sequence of Function calls (records
//     and timers, with their keys and times) is the same whatever the
//     schedule of Advance calls: output is a function of the data, as the
//     release order is.
//  4. A Store's Get returns what the last Put stored for the key (until a
//     Delete); Len counts the keys with state. A TimerQueue is a set of
//     timers in (At, Key) order: Due returns its least one at or below
//     now. Invariants 1 to 8 hold whatever the Store and TimerQueue
//     (the package's tests run them against MemStore and keyed/durable).
//  5. Windows: a record at event time t is in every window [start, end)
//     with start ≤ t < end: tumbling ones start at multiples of Size,
//     hopping ones at multiples of Every (epoch-aligned); a session is
//     [first, last + Gap) of records of one key less than Gap apart, and a
//     record whose [t, t + Gap) overlaps several open sessions of its key
//     merges them (one exactly Gap after a session's last record starts a
//     new one).
//  6. A window is emitted once, when the time reaches End − 1 + Lateness
//     (its last instant plus the allowed lateness): by invariant 1, every
//     record released at or before its last instant was added to it
//     first. Results come in the order of (End, key) for one Lateness.
//     Close emits every open window.
//  7. A record whose window was already emitted (End − 1 + Lateness at or
//     below the time; for a session, the session [t, t + Gap) it would
//     start) is late for it: in none of those windows, counted once in
//     Late, and no window is ever emitted twice. Within the allowed
//     lateness it joins the window, which is still open: there are no
//     updated results, a window waits for its lateness before its one
//     emission.
//  8. First and Last pick by event time, ties by the order records were
//     added (the release order). Sums add float64s in release order
//     (a session merge adds partial sums): exact for integers up to 2^53.
//  9. Windows keep no memory of the caller's: Add copies the key (the
//     Context copies it before the store or the timers can keep it) and
//     any First or Last argument it keeps, so the caller may reuse an
//     Item's bytes (the engine's come from buffers reused for every
//     record); Windows.Item reuses one Args slice. Over a MemStore, whose
//     states are the Windows' own values, a state changed in place (the
//     same slice) is not Put again. So a record that opens no window
//     allocates nothing.
package keyed
