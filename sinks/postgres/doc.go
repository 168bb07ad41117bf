// Package postgres is the PostgreSQL sink (github.com/jackc/pgx/v5). It
// stores one row per record and, with FlushCheckpoint, signalbox's
// checkpoint in the same transaction, which makes delivery exactly-once.
//
// Lifecycle: New → Open (connects, creates the tables unless
// Config.NoCreate) → Restore → (Write | Flush | FlushCheckpoint)* → Close.
// All calls come from one goroutine. Purge empties the data table and this
// job's checkpoint.
//
// Layout (Config.Table, default "signalbox_records"):
//
//	seq            bigserial primary key   -- insertion order
//	topic          text not null
//	partition      integer not null
//	"offset"       bigint not null          -- unique (topic, partition, "offset")
//	key            text                     -- null when the record has no key, or key_bytes holds it;
//	                                        -- the decoded key's JSON when the input decodes keys
//	event_time     timestamptz              -- null for timeless records
//	event_time_ms  bigint
//	value          jsonb (or text, Config.ValueType) -- the envelope's value (the decoded value for a
//	                                        -- schema'd input); null for a tombstone, or value_bytes holds it
//	late           boolean not null
//	late_by_ms     bigint
//	reason         text                     -- dead-letter reason, if any
//	key_bytes      bytea                    -- the key, when it is not valid UTF-8 or holds NUL
//	value_bytes    bytea                    -- the value, when it is neither JSON nor valid UTF-8, or (jsonb) its JSON holds \u0000
//	schema_id      integer                  -- the value's writer schema id (schema'd inputs), else null
//
// Open adds key_bytes, value_bytes and schema_id to a data table created by an earlier
// build (ALTER TABLE … ADD COLUMN IF NOT EXISTS; with Config.NoCreate the
// table must have them).
// The checkpoint lives in <Table>_checkpoint (name, topic, partition, low,
// position, end_offset, replaying, watermark; primary key (name, topic,
// partition)) and <Table>_watermark (name primary key, watermark,
// updated_at), keyed by Config.Name so several jobs can share the tables.
// The checkpoint table's watermark column is the partition's own
// PartitionCheckpoint.Watermark; the <Table>_watermark row is
// Checkpoint.Watermark, stored as given (not derived from the partitions,
// so a checkpoint without partitions keeps it). Open adds the column to a
// checkpoint table created by an earlier build (ALTER TABLE … ADD COLUMN IF
// NOT EXISTS watermark bigint NOT NULL DEFAULT -9223372036854775808, skipped
// with Config.NoCreate); Restore raises each partition's watermark to at
// least Checkpoint.Watermark, so such old rows restore with the checkpoint
// watermark, which bounded every partition when they were written.
//
// Invariants:
//
//  1. Idempotence: rows are inserted with ON CONFLICT (topic, partition,
//     "offset") DO NOTHING, so a record delivered twice (a retried commit
//     whose outcome was unknown, a restart) is stored once, at its first
//     position.
//  2. Order: a batch is staged with COPY into a temporary table with an
//     ordinal and inserted ORDER BY that ordinal, so seq follows Write order.
//  3. Atomicity: FlushCheckpoint commits the buffered rows and the checkpoint
//     in one transaction; the checkpoint never names a record whose row is
//     not committed, and no committed row outlives a rolled-back checkpoint.
//  4. Flush commits the buffered rows only (at-least-once; invariant 1 makes
//     the re-delivery after a restart harmless).
//  5. A Write that returns an error did not accept its batch: when
//     Config.MaxBatch rows are buffered, Write first commits them, and only
//     then buffers the new batch. Buffered rows survive a failed commit and
//     are committed by the next Flush.
//  6. Errors: connection failures, serialization failures, deadlocks, lock
//     and statement timeouts and server shutdowns are marked retryable; data
//     exceptions are rejections (invariant 9); any other error is fatal and
//     sticky (every later call returns it).
//  7. Keys and values are stored losslessly. Text columns never receive
//     NUL or invalid UTF-8 (PostgreSQL rejects them), nor jsonb a \u0000
//     escape: such a key goes to key_bytes and such a value to value_bytes,
//     byte for byte, with key or value null. Exactly one of key and
//     key_bytes is set, unless the record has no key; likewise value and
//     value_bytes, unless it is a tombstone. Reasons, signalbox's text,
//     have NUL and invalid UTF-8 replaced by U+FFFD.
//  8. Close never commits: it drops the buffered rows (a fatal error ends
//     the job without its last checkpoint, and the rows are re-read from
//     Kafka on restart). Only Flush, FlushCheckpoint and a Write that
//     reaches Config.MaxBatch commit; invariant 1 makes an early commit
//     harmless to exactly-once (a rerun stores each record once).
//  9. Per-record rejection: when a commit fails with a data exception
//     (SQLSTATE class 22, e.g. 22003 from 1e1000000 in a jsonb value, 22P02
//     from "\ud800"), the sink finds the failing rows by bisection
//     under savepoints in a transaction it rolls back, drops them from its
//     buffer and returns them as a *retry.RejectedError with the SQLSTATE
//     and message, committing nothing; the engine dead-letters them and
//     repeats the call, which commits the rest. The error is not sticky.
//
// Guarantee: exactly-once with FlushCheckpoint and Restore (the engine
// re-reads Kafka from the stored Low offsets and skips what the stored
// position and watermark say was emitted; invariant 1 absorbs the rest);
// at-least-once delivery with plain Flush, stored once by invariant 1.
package postgres
