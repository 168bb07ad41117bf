// Package tables keeps versioned tables: for each key, the versions a
// table topic's records made of it, each valid from its version time on,
// so that a record can be enriched with the version as of its own event
// time (issue 38, docs/config.md "Tables and enrichment"). It keeps no
// clock: the engine puts versions and trims with the watermark it
// decided; lookups pass the record's event time.
//
// A table lives in memory (New, or Open without a Dir: no I/O) or in
// pebble (Open with Options.Dir): every version on disk, keyed by (key,
// version time), and in memory only a cache of the entries of the keys
// used last (and of the keys looked up that it does not have, so that a
// lookup that misses again reads nothing: a put ends that), and pebble's
// memtables and block cache, all within
// Options.MemoryBudget whatever the number of keys. Both storages change
// and answer a key through the same code (entry), so the invariants below
// hold alike; the tests run on both and compare them on random
// operations. In memory (mem.go) the keys are in an open-addressing index
// whose slots hold no pointer, the key's hash and its one version beside
// it, and the keys' and values' bytes in an arena of big chunks: a new key
// allocates nothing of its own, the garbage collector visits none of it,
// and a lookup of a key of one version reads two places, its slot and
// its key's bytes followed by its value's (a key of several versions keeps
// them in an entry, as pebble's cache does). HintKey and HintValue ask
// for those two places ahead of a lookup, so that the lookups of a block
// of records wait for memory together (package process's Hints); on
// Linux the index and the arena's big chunks ask for huge pages, so that
// random lookups in a big table miss the TLB far less. A put in
// pebble reads the key's entry (from the cache, else from pebble), so that
// the table's size is counted exactly as in memory; a trim reads an index
// of the versions put since the last trim, by version time, so it visits only
// the keys that may have a version to drop (disk's comment says why).
//
// The pebble storage is not durable, on purpose: the engine never commits
// a table's offsets past where its partition was assigned, and rebuilds a
// table by re-reading its topic after every restart. So Open wipes the
// directory (only an absent, empty or table's directory, marked
// SIGNALBOX-TABLE), pebble runs without a WAL and never syncs a file, and
// Close removes the directory.
//
// Invariants:
//
//  1. AsOf(key, t) is the version with the greatest version time at or
//     before t: a version exactly at t is joined, one 1 ms later is not.
//     No such version, or a tombstone there, is "not found".
//  2. The versions of a key are kept in version-time order whatever the
//     order of the puts. A put at a version time the key already has
//     replaces that version: the later put wins (a topic partition's later
//     offset).
//  3. Trim(bound) drops the versions of each key older than bound except
//     the newest of them, so that AsOf(key, t) for every t ≥ bound answers
//     as before the trim. A key whose only version left is a tombstone
//     older than bound is forgotten: it answers "not found" as before.
//  4. A lookup older than what a trim kept (t before the oldest version
//     kept of a key that lost versions) answers the oldest version kept
//     and counts in Beyond: the answer may differ from before the trim.
//     (A key forgotten by a trim answers "not found" uncounted.)
//  5. A Set's names are distinct; a Lookup in a table it does not hold is
//     an error naming the table.
//  6. A Table is not safe for concurrent use; Beyond and Size may be read
//     from any goroutine (Set.Sizes too). The keys and values given to
//     Put are copied.
//  7. In pebble, the Go heap a table keeps is bounded by its
//     Options.MemoryBudget, not by its size (TestPebbleHeapBound). A
//     storage failure is sticky: Err reports it, and from then on Put and
//     Trim do nothing and AsOf finds nothing, so the caller must check Err
//     and stop the run.
//  8. Size's keys, versions and bytes are exactly what the table holds
//     (in pebble, what a scan of it reads: TestStoragesAgree), updated by
//     every Put and Trim; a pebble table's disk and memory bytes are
//     pebble's metrics as of its last commit, the memory within
//     Options.MemoryBudget.
//  9. In pebble a Trim visits at most about a thousand keys (trimKeys);
//     the rest of its trim goes on at the next Trims while Trimming says
//     one is under way, each Trim moving the trim's bound on to its own.
//     Meanwhile some keys keep versions the trim will drop: a lookup as
//     of t ≥ the latest Trim's watermark − history answers as if the trim
//     were over (and as in memory, TestTrimSpread), one older answers as
//     before the trim or as after it (invariant 4). Once Trimming is
//     false again, no key has a version older than the bound but its
//     newest there (a put behind the trim under way makes it go round
//     again), as in memory after the same puts and a Trim; only a key
//     forgotten (invariant 3) may differ, with the same answers as of
//     t ≥ the bound, as the order of its trim and of a put after it has it
//     (in memory the trims are whole, in pebble a key's may come after).
//  10. In memory the index is at most three quarters full and finds
//     every key it holds; the arena holds exactly the bytes of the keys
//     and values in use (every value in it) plus those given up, at most
//     about twice as many (it is compacted when it holds more given up
//     than in use); a compaction moves bytes only within a Put or Trim,
//     so an AsOf's value stays valid until the next one
//     (TestMemIsTheModel). Hints change nothing and read only what a
//     lookup reads.
package tables
