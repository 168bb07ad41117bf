// Package durable is keyed state beyond memory: a pebble-backed
// keyed.Store with a cache bounded by a byte budget, which also holds the
// Processor's timers (keyed.TimerStore) under the same budget. Package
// keyed stays pure (no I/O); everything that touches pebble lives here.
//
// The state is scratch: a Store starts empty in a directory of its own
// and forgets it on Close. A restart rebuilds the windows from Kafka,
// from the start or from offsets held back to the oldest record of a
// window still open (docs/design.md K5-K9), so nothing here is
// checkpointed: the state can never be ahead of the last checkpoint.
//
// Invariants:
//
//  1. keyed invariant 4 holds: Get returns what the last Put stored for
//     the key (until a Delete), whether the key is in the cache or only
//     in pebble; Len counts the keys with state.
//  2. The TimerQueue is a set in (At, Key) order (keyed.TimerQueue),
//     whether a timer is in memory or only in pebble: Due returns the
//     least timer of both at or below now, each timer once.
//  3. Memory: the cache holds at most Options.CacheBytes of state
//     (Codec.Size plus the key and an entry's overhead; it spills the rest
//     to pebble, down to half of it, once over), plus the one entry being
//     handled; the in-memory timers take at most Options.TimerBytes, plus
//     one read-ahead chunk from pebble. A Bloom filter of the keys in
//     pebble (10 bits a key, counted in CacheBytes) has no false
//     negatives: a Get or a timer's check that it rules out skips pebble.
//     pebble's memtables and block cache are sized from
//     Options.MemoryBudget as the parked store's are
//     (timers/durable.StoreOptions); the cache is created two memtables
//     larger, as pebble reserves its memtables in it. SetMemory changes
//     the two bounds of a Store in use (spilling at once what is over
//     them); pebble's sizes stay as Open made them.
//  4. An error of pebble or of the Codec is sticky (Err): every later
//     call is a no-op, and the keyed.Processor returns it.
package durable
