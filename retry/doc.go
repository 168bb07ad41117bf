// Package retry keeps retry policy apart from transport. A sink classifies
// its errors — Retryable, Throttled, or anything else (fatal) — and a Policy
// decides when, and whether, to try again.
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
//     fmt.Errorf("...: %w", retry.Retryable(err)) stays retryable.
package retry
