// Package kafka is signalbox's Kafka source, built on franz-go (kgo, kadm,
// kmsg). It implements the root package's Source, Pauser, EvidenceDemander,
// Recycler and HandledNotifier interfaces structurally.
//
// One kgo client (ConnOpts: seeds, client id, TLS, SASL) carries metadata,
// ListOffsets, OffsetFetch, FindCoordinator and the fetches. In group mode
// a second kgo client is the group member: kgo.ConsumerGroup with the
// signalbox-task balancer (range the fallback), static membership
// (kgo.InstanceID), auto-commit off, and OnPartitionsAssigned,
// OnPartitionsRevoked and OnPartitionsLost driving the assignment changes
// (group.go). That client fetches nothing: it pauses every topic it is
// assigned in OnPartitionsAssigned, which kgo runs before it would consume
// them. Commits are OffsetCommitRequests through it, to the generation of
// the session they are for, with the checkpoint as metadata (kgo's
// CommitOffsets carries none).
//
// The source runs its own fetch loop, because kgo's consumer does not
// expose the consumer position after trailing control batches, aborted
// batches and compacted-away offsets, and the whole ordering argument rests
// on that position. Each fetcher builds FetchRequest v11 itself (kmsg) and
// sends it through the client's own connection to the leader
// (kgo.Broker.Request), so plaintext, TLS and SASL take one path; the
// answer's record batches stay raw bytes that internal/kbatch decodes
// without a heap object per record (block.go). A connection error fails
// the partitions it carried (invariant 3) and the client reconnects on the
// next fetch.
//
// Lifecycle: New → Open (connect, resolve partitions; reads no record) →
// Poll repeatedly from one goroutine → Close. Commit, CommitCheckpoint, Pause
// and Resume may be called from other goroutines between Open and Close.
//
// Invariants:
//
//  1. Snapshot before read. The End reported in Assigned for a partition is
//     taken by ListOffsets before any record of that partition is fetched:
//     under read_committed it is the last stable offset (a ListOffsets
//     request with IsolationLevel ReadCommitted, sent to the partition
//     leader),
//     otherwise the high-water mark.
//  2. Position, not last offset. PartitionFetch.Position is the next offset
//     to fetch: the last record batch's FirstOffset+LastOffsetDelta+1,
//     control batches and aborted batches included. It never goes backwards
//     except when the broker's log start moved past it (then forwards to the
//     log start, logged).
//  3. Evidence is fresh or absent. PartitionFetch.End is the LSO
//     (read_committed) or high-water mark of the response the records came
//     from, or of a ListOffsets taken for a paused partition; a failed fetch
//     reports Err and End -1, never stale evidence. record.Fetch.At is, per
//     fetcher, the oldest certification of its partitions that are not
//     failing: an answer received at T certifies its partitions up to T, a
//     paused partition only up to its last ListOffsets (every
//     EvidenceInterval).
//  4. Under read_committed no record of an aborted transaction and no
//     control record is delivered.
//  5. Every partition appears in an Assigned before any PartitionFetch of it,
//     and a Fetch that assigns or revokes carries no records, so assignment
//     changes and data never interleave within one Fetch.
//  6. In group mode a partition's fetching stops before its Revoked is
//     delivered, and the rebalance waits (up to RevokeTimeout) for the next
//     Poll, so the caller can Commit the revoked partitions' safe offsets.
//  7. Start positions: committed group offsets when there are any, else
//     Start ("earliest" = log start offset, "latest" = the end snapshot, a
//     time = the first offset whose Kafka timestamp is at or after it, by
//     ListOffsets at the source's isolation level, else the end snapshot;
//     a duration before now is resolved once, at Open);
//     a partition created after Open starts at its log start whatever
//     Start says. A committed offset whose metadata is a checkpoint that
//     CommitCheckpoint wrote for that offset comes with it in
//     PartitionInfo.Checkpoint; a StartAt offset comes with none, and
//     applies to the first assignment after Open only (static mode: the
//     partitions found at Open; group mode: the first generation that
//     assigns the member a partition), never to a partition assigned again
//     or first assigned later (design R10).
//  8. Memory is bounded: at most one undelivered response per fetcher is
//     buffered; fetchers block while Poll is not called.
//  9. Discovery (design G7): every DiscoveryInterval the source lists its
//     topics (and, with TopicPatterns, every topic of the cluster, to match
//     them: a larger interval suits a large cluster). New partitions are
//     assigned (no group) or make the member rejoin (group); partitions of
//     a deleted topic stop being fetched before their Revoked is delivered.
//     record.Fetch.At never passes the start of the last round that found
//     nothing new plus one interval, and that round counts only once the
//     caller has taken the Assigned it produced.
//  10. Open fails, naming the cause, when the cluster cannot be reached or
//     refuses the credentials, in both modes. The start-up has one
//     deadline (Config.StartupTimeout, or an earlier one Open's context
//     carries), shared by every step up to the first snapshot (static
//     mode) or the first assignment (group mode), the join's wait for a
//     rebalance excepted up to RebalanceTimeout: when a broker does not
//     answer by then, Open (static) or the first Poll (group) returns
//     ErrStartupTimeout naming the request and the broker, and Close
//     returns at once. An Open whose context ends during a step returns
//     the context's error as promptly. After start-up a lost broker is waited for: failed
//     fetches hold their partitions (invariant 3), a failed group session
//     is rejoined with backoff.
//  11. Commits in group mode go to the current session's generation, for
//     the partitions it assigned this member. The session is recorded
//     before its Assigned (or an undelivered Revoked) reaches Poll, so a
//     commit made as soon as Poll returns them goes through. A commit made
//     between two sessions waits for the next (up to RevokeTimeout; Setup
//     never waits for the caller before recording it) and goes to it.
//     Offsets of partitions the session did not assign, or all of them
//     when no session started in time, are not committed: Commit reports
//     them in a *record.CommitSkippedError, never silently.
//  12. No Poll between Pause(tp) and Resume(tp) returns a record of tp.
//     Records of tp fetched before the Pause and not yet delivered are
//     kept back (in their place Poll reports tp's End with the Position of
//     the first record kept back, so tp is not caught up while they wait),
//     and the first Poll after Resume delivers them in order, before any
//     newer record of tp. A Revoked of tp drops them.
//  13. Tables (Config.Tables) are read whole: a table's partition starts
//     at its earliest offset whatever Start, a committed offset or StartAt
//     say, and in group mode the task balancer gives every subscribed
//     member every partition of it, counting it in no task
//     (TestTaskBalancerGlobalTables).
package kafka
