// Package progress shows a running pipeline to people: the replay progress
// display of `signalbox run`, and the /status document served by the admin
// server (internal/admin) and printed by `signalbox status`, which explains
// who holds the watermark and why.
//
// Invariants:
//
//  1. Everything shown comes from signalbox.Stats snapshots; this package
//     never touches the pipeline's state.
//  2. Run shows a frame (or log lines) once a partition is assigned, and
//     always a final one when the replay is done, so a short replay is never
//     silent: when ctx ends it takes one last snapshot, so a replay done
//     just before the stop (a job run to its end offsets) is shown done,
//     and a terminal's last frame is the job's last state. It returns when
//     the replay is done or ctx ends, and never writes after returning. A snapshot with no partition (the pipeline not
//     started yet) is never shown: it would claim a watermark of 0.
//  3. On a terminal it redraws one line per input in place; anywhere else it
//     writes nothing to w and logs periodic structured lines instead, so
//     redirected output never fills with control characters.
//  4. Status is plain data with stable JSON names: −∞ and unknown values are
//     spelled out ("-inf", eta_seconds −1), never sentinel integers alone.
package progress
