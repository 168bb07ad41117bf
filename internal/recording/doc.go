// Package recording starts the runtime's recordings of a process for the
// commands' profiling flags: a CPU profile (`signalbox run --cpuprofile`,
// `procreplay -cpuprofile`) and an execution trace (`--trace`, `-trace`).
//
// Invariants:
//   - A recording starts at once or fails at once: a path that cannot be
//     created, or a recording of the same kind already running, is an
//     error that names the flag, and leaves no recording running and no
//     file open.
//   - The stop function ends the recording, then closes its file; call it
//     once.
package recording
