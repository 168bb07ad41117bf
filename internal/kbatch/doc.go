// Package kbatch decodes the record batches of one Kafka partition, as a
// fetch response carries them (the raw RecordBatches bytes of a partition),
// without a heap object per record.
//
// It is pure: no I/O, no clock, no global state but a shared zstd decoder.
//
// Invariants:
//
//  1. Zero-copy: a record's Key, Value and header values alias the input
//     bytes, or, for a compressed batch, that batch's own decompressed
//     buffer (allocated per compressed batch, once at its size, never
//     reused, at most MaxDecompressed bytes; what the Decoder does reuse,
//     its gzip and lz4 readers and their scratch, nothing aliases).
//     Callers may keep them as long as they like but must not write into
//     them.
//  2. No per-record allocation: records are appended to the Decoder's
//     reusable slab; only a record with headers allocates (its []Header
//     and its header keys, as strings).
//     Batches and Records returned by Decode are valid until the next
//     Decode or Release on the same Decoder; the bytes they point to stay
//     valid. Release drops the slabs' references, so that a long-lived
//     Decoder does not keep decoded bytes reachable.
//  3. Only complete batches are returned. A trailing batch whose bytes are
//     cut off (a broker fills a response up to its byte limit) is reported
//     as partial, never as an error, and nothing of it is returned.
//  4. Every returned batch passed its CRC-32C check; a bad CRC, a bad
//     length or undecodable records are an error, and Decode returns the
//     batches before the bad one together with the error.
//  5. Entries of legacy message sets (magic 0 and 1, legacy.go) are
//     decoded, as Kafka's consumer and franz-go decode them, each as a
//     Batch with Legacy set, compressed (gzip, snappy, lz4) or not: every
//     record with its Kafka offset (a magic-1 wrapper's relative inner
//     offsets made absolute) and timestamp (none under magic 0; under
//     LogAppendTime the wrapper's). Nothing is skipped: a form that cannot
//     be decoded (a bad CRC or size, zstd or nested compression, inner
//     offsets out of order or beyond the wrapper's) is an error naming it.
//  6. Decode never panics, whatever the input (FuzzDecode), and agrees with
//     kmsg's allocating decode on every record's offset delta, timestamp
//     delta, key, value and headers (legacy messages: kmsg's MessageV0
//     and MessageV1 by franz-go's rules).
//  7. Scan, then AppendTo or Check on each batch in order, is Decode with
//     one copy fewer: the records go straight into the caller's
//     record.Record array, not through the Decoder's slab. It checks and
//     returns the same batches and records (header fields, offsets,
//     timestamps, keys, values, headers) and the same first error
//     (FuzzDecode checks both ways against each other).
package kbatch
