package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is the mark carried by retryable errors. Use Retryable or Throttled
// to make one and IsRetryable / RetryAfter to inspect one.
type Error struct {
	Err error
	// After is the earliest time to retry suggested by the server (a
	// Retry-After header), or 0.
	After time.Duration
	// Throttled is true when the server asked the client to slow down
	// (HTTP 429, Kafka throttling) rather than failing.
	Throttled bool
}

func (e *Error) Error() string {
	if e.Throttled {
		return "throttled: " + e.Err.Error()
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable marks err as worth retrying. Retryable(nil) is nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err}
}

// Throttled marks err as a request to slow down, retryable no sooner than
// after (0 when the server gave no hint). Throttled(nil, _) is nil.
func Throttled(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, After: after, Throttled: true}
}

// IsRetryable reports whether err, or an error it wraps, is marked retryable.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// IsThrottled reports whether err is marked by Throttled.
func IsThrottled(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Throttled
}

// RetryAfter returns the server's retry hint carried by err, if any.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.After > 0 {
		return e.After, true
	}
	return 0, false
}

// ParseRetryAfter parses an HTTP Retry-After header value (delay in seconds
// or an HTTP date) relative to now. It returns 0 when h is empty or invalid.
func ParseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Defaults of Policy, used for zero fields by EnsureDefaults.
const (
	DefaultInitial    = 100 * time.Millisecond
	DefaultMax        = 10 * time.Second
	DefaultMultiplier = 2.0
	DefaultJitter     = 0.2
	DefaultMaxElapsed = 2 * time.Minute
)

// Policy is exponential backoff with jitter. The zero value means "all
// defaults".
type Policy struct {
	// Initial is the wait before the first retry. Default 100ms.
	Initial time.Duration
	// Max caps the computed wait (not a server's Retry-After). Default 10s.
	Max time.Duration
	// Multiplier grows the wait per attempt. Default 2.
	Multiplier float64
	// Jitter spreads each wait uniformly over ±Jitter of itself, in [0, 1].
	// Default 0.2. Set NoJitter for deterministic waits.
	Jitter float64
	// NoJitter disables jitter (Jitter is then ignored).
	NoJitter bool
	// MaxElapsed bounds the total time spent retrying one operation; once a
	// retry would start later than this, Do returns the last error.
	// Default 2m. Negative means no bound (retry until ctx is done).
	MaxElapsed time.Duration
	// OnRetry, if set, is called before each wait with the attempt number
	// (1 for the first retry), the error, and the wait.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// EnsureDefaults returns p with zero fields set to their defaults.
func (p Policy) EnsureDefaults() Policy {
	if p.Initial <= 0 {
		p.Initial = DefaultInitial
	}
	if p.Max <= 0 {
		p.Max = DefaultMax
	}
	if p.Multiplier < 1 {
		p.Multiplier = DefaultMultiplier
	}
	if p.Jitter <= 0 || p.Jitter > 1 {
		p.Jitter = DefaultJitter
	}
	if p.MaxElapsed == 0 {
		p.MaxElapsed = DefaultMaxElapsed
	}
	return p
}

// Backoff returns the wait before retry attempt (1-based) after err,
// following invariant 2. u in [0, 1) is the jitter draw.
func (p Policy) Backoff(attempt int, err error, u float64) time.Duration {
	p = p.EnsureDefaults()
	d := float64(p.Initial)
	for i := 1; i < attempt && d < float64(p.Max); i++ {
		d *= p.Multiplier
	}
	d = min(d, float64(p.Max))
	if !p.NoJitter {
		d *= 1 + p.Jitter*(2*u-1)
	}
	wait := time.Duration(d)
	if hint, ok := RetryAfter(err); ok && hint > wait {
		wait = hint
	}
	return wait
}

// Do calls fn until it returns nil or an error that is not retryable, the
// retry budget is spent, or ctx is done.
func (p Policy) Do(ctx context.Context, fn func(context.Context) error) error {
	p = p.EnsureDefaults()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !IsRetryable(err) {
			return err
		}
		wait := p.Backoff(attempt, err, rand.Float64())
		if p.MaxElapsed > 0 && time.Since(start)+wait > p.MaxElapsed {
			return err
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
	}
}
