// Package sinktest is the conformance suite every signalbox sink runs:
//
//	func TestConformance(t *testing.T) { sinktest.Run(t, factory) }
//
// The factory builds one fresh Target per subtest: an unopened sink, a way to
// read back what its destination durably holds, and optionally a way to make
// the destination fail.
//
// What it checks (the sink contract of the root package's Sink interface):
//
//  1. Order: every record sharing an OrderKey is stored in the order it was
//     written; with Target.TotalOrder, all records are.
//  2. Acknowledgement: when Flush returns nil, every record written before it
//     can be read back from the destination.
//  3. Close: records written and never flushed are stored by Close, or,
//     with Target.CloseDiscards (a sink whose Close never commits), never
//     stored; what Flush acknowledged stays either way.
//  4. Empty flushes and an immediate Close succeed.
//  5. Fatal errors: while the destination fails fatally, some Write or Flush
//     returns an error that is not retry.IsRetryable, and from then on every
//     Write and Flush returns an error, even after the destination recovers:
//     a sink never silently continues past a fatal error.
//  6. Retryable errors: while the destination fails transiently, the error
//     surfaces as retry.IsRetryable; a Write that fails so did not accept its
//     batch and is repeated, and once the destination recovers a repeated
//     Flush succeeds and every record is stored (at least once), with the
//     first occurrences of each key still in order.
//  7. Per-record rejection (Target.Poison): a record the destination
//     refuses for its data comes back in a *retry.RejectedError from Write
//     or Flush, unchanged (topic, partition, offset, event time) and with a
//     reason, never retryable; repeating the call without it stores every
//     other record exactly once and in order, and the sink goes on.
//  8. Bytes (Target.ReadRecords): keys and values that are not valid UTF-8
//     (Kafka IntegerSerializer keys 0..255, binary values), hold NUL, look
//     like an encoded id (envelope.IDPrefix), are empty or nil (no key, a
//     tombstone) are stored once each and read back byte for byte, nil
//     staying nil and empty staying empty. Values here are not JSON, whose
//     bytes a jsonb destination may reformat.
//  9. Checkpoint round trip (CheckpointSink, Target.Restart): Restore,
//     called after Open and before the first Write, returns nil on an empty
//     destination; after FlushCheckpoint returns nil, a restarted sink's
//     Restore returns that checkpoint field for field and the destination
//     holds its records exactly once. A checkpoint of some partitions
//     keeps the others', and Restore's watermark is the lowest partition's,
//     never above any partition's own.
//  10. Checkpoint atomicity (Target.FailCheckpoint): when the destination
//     refuses the checkpoint part, FlushCheckpoint fails, not as a
//     rejection, and stores neither the checkpoint nor the records written
//     since the last one (a Target.StoresOnWrite destination may hold some
//     of those, once each); a restart restores the previous checkpoint and
//     re-delivering from it stores every record exactly once.
//  11. Checkpoint Close: Close never commits; records written after the
//     last FlushCheckpoint are not stored (Target.StoresOnWrite aside) and
//     a restart restores the last checkpoint.
//
// Records carry their identity in the value ({"seq":n,"key":"k"}), so the
// suite reads destinations that re-encode JSON (jsonb, Kafka) the same way.
package sinktest
