// Package kafka is the Kafka topic sink (franz-go: kgo, kadm, kmsg).
//
// Lifecycle: New → Open (connects, reads the output topic's partition count,
// and in transactional mode initialises the producer id, fencing any earlier
// instance with the same TransactionalID) → Restore → (Write | Flush |
// FlushCheckpoint)* → Close. All calls come from one goroutine.
//
// Invariants:
//
//  1. The producer is idempotent: acks=all and kgo's sequence numbers,
//     whatever Config.Conn says; a broker-side retry never duplicates or
//     reorders a partition's records.
//  2. Keys are preserved: the output record carries the input's Key, Value
//     and Headers; a late record (record.Record.Late, emitted or
//     dead-lettered) carries one header more, record.LateByHeader with its
//     lateness in decimal ms.
//  3. Output partitioning keeps each key's order: the partition is
//     murmur2(OrderKey, else Key) mod partitions — the Java client's default
//     hash, so it co-partitions with Java producers when OrderKey equals the
//     key. Records without either go to partition 0.
//  4. Flush returns nil only when every record written before it is
//     acknowledged by the broker (and, in transactional mode, committed).
//  5. Transactional mode (Config.TransactionalID): records are produced inside
//     a transaction; FlushCheckpoint adds the checkpoint's Low offsets for
//     Config.GroupID to the same transaction (AddOffsetsToTxn +
//     TxnOffsetCommit, sent by the sink under the producer's id and epoch)
//     and commits, so output and input progress commit
//     atomically. The rest of the checkpoint (position, end, replaying and
//     the partition's own watermark) travels in each partition's offset
//     commit metadata, so Restore returns the whole checkpoint, with
//     Checkpoint.Watermark the min of the partitions' watermarks. Plain Flush commits the transaction without
//     offsets. A transaction that holds offsets and no records commits
//     too: kgo ends only transactions it produced into, so the sink sends
//     that EndTxn itself. kgo also ends only the partitions it has
//     published, and it publishes a topic's first metadata after handing
//     records to the partitions: before ending a transaction with an
//     acknowledged record, the sink waits for that publication. The producer speaks the transaction protocol
//     without KIP-890 part 2 (no epoch bump at EndTxn), so the epoch the
//     sink's requests carry is always the producer's.
//  6. Failures: in transactional mode an abortable transaction error aborts
//     the transaction and returns a retryable error; the records of the
//     aborted transaction are kept and re-produced, in order, by the next
//     Flush. Abortable is every error the abort then succeeds for, except
//     a newer instance's fence (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH), a
//     refused transactional id or cluster authorisation, an unsupported
//     version and a context that ended while records were in flight: those
//     are fatal. Any other produce error is fatal and sticky: re-sending only
//     the failed records would reorder a key.
//  7. Close never commits a transaction: in transactional mode it aborts
//     the open one, whatever the reason for closing (a fatal error, a close
//     without a final checkpoint), so read_committed readers see only what
//     a Flush or FlushCheckpoint committed. Close without a transaction
//     waits for the acknowledgement of everything produced (at-least-once).
//  8. Per-record rejection: Open lowers the producer's record batch limit
//     (DefaultBatchBytes, 1,000,012 bytes, Kafka's default
//     max.message.bytes) to the output topic's max.message.bytes when that
//     is lower (read with DescribeConfigs; if the cluster does not tell,
//     the producer's limit stands). A record that cannot fit a batch under
//     that limit (counted as kgo does) is refused
//     before anything of its batch is produced: Write returns it in a
//     *retry.RejectedError and accepts nothing, and the engine dead-letters
//     it and repeats the Write without it. Produced, such a record would
//     fail the producer, and in transactional mode the transaction. Every
//     other produce error follows invariant 6.
//  9. Group fence: Claim (called by the engine, from its own goroutine, at
//     each assignment) records the group membership the partitions were
//     assigned under when its group is Config.GroupID. The offsets of each
//     later transaction are sent with it (TxnOffsetCommit v3+: generation,
//     member id, instance id; KIP-447), so the coordinator refuses them once the
//     generation is over. Such a refusal (ILLEGAL_GENERATION,
//     UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) aborts the transaction and
//     drops its records, which are never re-produced. FlushCheckpoint
//     returns a *retry.FencedError for every partition of the checkpoint,
//     and until the next Claim the sink drops what Write gives it and
//     refuses each checkpoint the same way. The new owner re-reads those
//     partitions from the last committed offsets.
//
// Guarantee: exactly-once Kafka→Kafka in transactional mode with
// FlushCheckpoint, for consumers reading with isolation.level=read_committed;
// otherwise at-least-once (a restart re-emits what was produced after the
// last committed offsets). The sink says which (Config.Info: exactly once
// with a TransactionalID and a GroupID), and signalbox asks it: without
// them it is flushed like any at-least-once sink, and its Restore,
// FlushCheckpoint and Claim are never called.
package kafka
