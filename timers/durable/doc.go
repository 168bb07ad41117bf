// Package durable is the pebble-backed parked store: the durable
// counterpart of timers.Queue. It parks records under their timers.Pos,
// releases them in timers.Less order, stays within a memory budget by
// spilling to pebble, and restores the parked set of the last checkpoint
// after a restart. Its invariants are stated on Store.
//
// Package timers stays pure (no I/O); everything that touches pebble or
// the file system lives here.
package durable
