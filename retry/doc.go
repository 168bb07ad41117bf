// Package retry classifies sink errors and keeps retry policy apart from
// transport. It is shared by the engine and the sinks (neither imports the
// other). A sink classifies each error as one of three kinds:
//
//   - transient: Retryable or Throttled. The same call is tried again by a
//     Policy; nothing is lost meanwhile.
//   - per-record permanent: Rejected. The named records can never be stored
//     (bad data: PostgreSQL SQLSTATE class 22, a bulk item's 4xx, a record
//     larger than the Kafka producer's limit). The caller dead-letters them,
//     with the sink's reason, and repeats the call without them.
//   - fatal: anything else. The job stops. Fatal marks an error so for a
//     caller to whom an unmarked error means less (a ValueDecoder's
//     unmarked error is one bad record; a registry refusing the
//     credentials is Fatal).
//
// A Policy decides when, and whether, to try a transient failure again.
//
// Lifecycle: a Policy is a value; Do runs one operation to completion
// (success, fatal error, exhausted budget, or cancelled context). Policies
// are safe for concurrent use.
//
// Invariants:
//
//  1. An error that is not marked Retryable (or Throttled) is returned by Do
//     at once, after exactly one call: fatal errors are never retried.
//  2. The wait before retry n (n ≥ 1) is Initial·Multiplierⁿ⁻¹, capped at
//     Max, then spread by ±Jitter; a Throttled hint raises it to at least
//     the hint (the server's Retry-After wins over Max).
//  3. Do never sleeps past ctx: cancellation ends the wait at once and Do
//     returns the context's error joined with the last operation error.
//  4. When MaxElapsed is exceeded Do returns the last error unchanged, so it
//     is still marked retryable and an outer layer may decide again.
//  5. Marks survive wrapping: IsRetryable and RetryAfter use errors.As, so
//     fmt.Errorf("...: %w", retry.Retryable(err)) stays retryable; so do
//     rejections (AsRejected).
//  6. A rejection is not retryable (a sink never marks a RejectedError
//     Retryable), so Do returns it after one call, like a fatal error, and
//     the caller, not the Policy, decides what follows.
//  7. A call that returns a RejectedError did not complete, and the sink
//     has dropped the rejected records: repeating the call without them
//     stores the rest, never the rejected ones (a Write that returns it
//     accepted nothing of its batch).
package retry
