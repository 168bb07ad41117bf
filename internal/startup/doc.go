// Package startup carries one start-up deadline to every Kafka client a job
// opens, so that connecting, reading metadata, snapshotting offsets, joining
// the group and initialising producers share one bound instead of each
// getting its own.
//
// Invariants:
//
//  1. The deadline of a start-up is the earliest of the one carried by the
//     context (WithDeadline) and the component's own bound from now.
//  2. Run returns by the deadline whatever the step does: a step that
//     takes no context is left running in the background, and the caller
//     closes the connections it uses to end it.
package startup
