// Package bulk is the HTTP bulk sink for Elasticsearch and OpenSearch: it
// indexes every record's envelope (see package envelope) as a document
// through the `_bulk` NDJSON API.
//
// Lifecycle: New → Open → (Write | Flush)* → Close. Write, Flush and Close
// come from one goroutine; a linger timer may send a batch in the background,
// under the same lock, so a Write or Flush that arrives meanwhile waits.
//
// Batching: a request closes on whichever comes first of Config.MaxDocs
// documents (default 1000), Config.MaxBytes of NDJSON (default 5 MiB), or
// Config.Linger after its first document (default 200 ms).
//
// Invariants:
//
//  1. Backpressure: while a request is being retried (429, 5xx, transport
//     errors, per-item 429/5xx), Write and Flush block, so the engine stops
//     consuming and Kafka keeps the backlog. Memory is bounded by MaxDocs /
//     MaxBytes plus one Write batch: a Write first drains a full queue and
//     only then accepts its batch.
//  2. A Write that returns an error did not accept its batch. A retryable
//     error (retry budget spent) leaves every undelivered item queued; the
//     next Write or Flush resends it.
//  3. Newest wins. A retry never lets an older version of a document
//     overwrite a newer one:
//     a. with external versioning (default) every item carries
//     version_type=external and a version that grows with event time, so
//     the server rejects an older version with 409, which counts as done;
//     b. independently, within a request, a failed item is dropped rather
//     than retried when a later item for the same _id succeeded, and
//     failed items are retried in their original order;
//     c. requests are sequential: a batch is delivered (or fails) before the
//     next one is sent.
//  4. Per-item results are always inspected. 2xx is done; 409 under external
//     versioning is done (superseded); 408, 429 and 5xx are retried (and
//     each retry is reported to the hook set by ReportRetries, which the
//     engine logs); 401, 403 and 404 are about the target, not the document,
//     and fatal; any other 4xx (400 mapper_parsing_exception, ...) rejects
//     that document only: the next Flush, once everything else is
//     acknowledged, returns the rejected documents as a
//     *retry.RejectedError with status, type and reason, and the engine
//     dead-letters them. Nothing is lost silently. A failed item superseded
//     under 3b is done too: the newer version of its document is indexed.
//  5. After a fatal error every call returns it.
//  6. Flush returns nil only when every item written before it has a final
//     per-item result (done, or rejected and reported by this or an earlier
//     Flush).
//  7. A request the server refuses as too large (413) is sent again as
//     requests of half as many documents, in order; a single document that
//     is still too large is rejected like a per-item 4xx (invariant 4), so
//     one oversized document never stops the stream.
//  8. Ids are lossless and collision-free: KeyID maps every key through
//     envelope.ID, injective over all byte strings (a text key is its own
//     id unless it starts with envelope.IDPrefix; any other key is the
//     prefix and its base64url). A record whose id is longer than
//     MaxIDBytes (512, the server's limit, which fails a whole request) or
//     not valid UTF-8 is never sent: it is rejected like a per-item 4xx
//     (invariant 4), so one long key never stops the stream.
//
// Guarantee: at-least-once delivery of index operations; with deterministic
// document ids and versions, re-delivery after a restart is idempotent.
package bulk
