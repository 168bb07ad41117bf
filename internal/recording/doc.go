// Package recording starts the runtime's recordings of a process for the
// commands' profiling flags: a CPU profile (`signalbox run --cpuprofile`,
// `procreplay -cpuprofile`), an execution trace (`--trace`, `-trace`), an
// allocation profile at the end (`--allocprofile`) and snapshots of the
// live heap (`--heapprofile`, every `--heapprofile-every`).
//
// Invariants:
//   - A recording starts at once or fails at once: a path that cannot be
//     created, a CPU profile or trace while one is running, or a heap
//     interval that is not positive, is an error that names the flag, and
//     leaves no recording running and no file open.
//   - The stop function ends the recording (the last profile written),
//     then closes its file, and reports the first error, a periodic heap
//     snapshot's included; call it once.
package recording
