package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

var fast = retry.Policy{Initial: time.Microsecond, Max: 10 * time.Microsecond, NoJitter: true, MaxElapsed: -1}

func TestFatalReturnedAtOnce(t *testing.T) {
	calls := 0
	fatal := errors.New("bad request")
	err := fast.Do(context.Background(), func(context.Context) error { calls++; return fatal })
	if !errors.Is(err, fatal) || calls != 1 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

func TestRetriesUntilSuccess(t *testing.T) {
	calls, retries := 0, 0
	p := fast
	p.OnRetry = func(int, error, time.Duration) { retries++ }
	err := p.Do(context.Background(), func(context.Context) error {
		calls++
		if calls < 5 {
			return fmt.Errorf("wrapped: %w", retry.Retryable(errors.New("503")))
		}
		return nil
	})
	if err != nil || calls != 5 || retries != 4 {
		t.Fatalf("err %v calls %d retries %d", err, calls, retries)
	}
}

func TestRetryableThenFatal(t *testing.T) {
	calls := 0
	fatal := errors.New("mapping error")
	err := fast.Do(context.Background(), func(context.Context) error {
		calls++
		if calls == 1 {
			return retry.Throttled(errors.New("429"), 0)
		}
		return fatal
	})
	if !errors.Is(err, fatal) || calls != 2 {
		t.Fatalf("err %v calls %d", err, calls)
	}
}

func TestMaxElapsedReturnsLastRetryableError(t *testing.T) {
	p := retry.Policy{Initial: time.Hour, Max: time.Hour, MaxElapsed: time.Minute}
	calls := 0
	err := p.Do(context.Background(), func(context.Context) error { calls++; return retry.Retryable(errors.New("down")) })
	if calls != 1 || !retry.IsRetryable(err) {
		t.Fatalf("calls %d err %v: want one call and a retryable error", calls, err)
	}
}

func TestContextCancelEndsWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := retry.Policy{Initial: time.Hour, Max: time.Hour, MaxElapsed: -1}
	p.OnRetry = func(int, error, time.Duration) { cancel() }
	err := p.Do(ctx, func(context.Context) error { return retry.Retryable(errors.New("down")) })
	if !errors.Is(err, context.Canceled) || !retry.IsRetryable(err) {
		t.Fatalf("err %v", err)
	}
}

func TestBackoff(t *testing.T) {
	p := retry.Policy{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2, NoJitter: true}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := p.Backoff(i+1, nil, 0); got != w*time.Millisecond {
			t.Fatalf("attempt %d: %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	if got := p.Backoff(10, nil, 0); got != time.Second {
		t.Fatalf("cap: %v", got)
	}
	hinted := retry.Throttled(errors.New("429"), 30*time.Second)
	if got := p.Backoff(1, hinted, 0); got != 30*time.Second {
		t.Fatalf("Retry-After must win over Max: %v", got)
	}
	j := retry.Policy{Initial: time.Second, Jitter: 0.5}
	if lo, hi := j.Backoff(1, nil, 0), j.Backoff(1, nil, 0.999999); lo != 500*time.Millisecond || hi < 1499*time.Millisecond || hi > 1500*time.Millisecond {
		t.Fatalf("jitter range [%v, %v]", lo, hi)
	}
}

func TestMarks(t *testing.T) {
	if retry.Retryable(nil) != nil || retry.Throttled(nil, time.Second) != nil {
		t.Fatal("nil must stay nil")
	}
	base := errors.New("x")
	if retry.IsRetryable(base) || retry.IsThrottled(retry.Retryable(base)) {
		t.Fatal("wrong marks")
	}
	th := fmt.Errorf("ctx: %w", retry.Throttled(base, 3*time.Second))
	if !retry.IsRetryable(th) || !retry.IsThrottled(th) || !errors.Is(th, base) {
		t.Fatal("marks lost through wrapping")
	}
	if d, ok := retry.RetryAfter(th); !ok || d != 3*time.Second {
		t.Fatalf("RetryAfter %v %v", d, ok)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		"-1":                            0,
		"junk":                          0,
		"Thu, 01 Jan 2026 00:00:30 GMT": 30 * time.Second,
		"Wed, 31 Dec 2025 00:00:30 GMT": 0,
	} {
		if got := retry.ParseRetryAfter(h, now); got != want {
			t.Errorf("%q: %v, want %v", h, got, want)
		}
	}
}

func TestRejectedIsNotRetriedAndSurvivesWrapping(t *testing.T) {
	rec := record.Record{Topic: "in", Partition: 2, Offset: 7, EventTime: 1_800_000_000_000}
	calls := 0
	err := fast.Do(context.Background(), func(context.Context) error {
		calls++
		return fmt.Errorf("sink: %w", retry.Rejected(retry.Rejection{Record: rec, Reason: "22P02: bad"}))
	})
	rej := retry.AsRejected(err)
	if calls != 1 || rej == nil || retry.IsRetryable(err) {
		t.Fatalf("calls %d, rejected %v, retryable %v", calls, rej, retry.IsRetryable(err))
	}
	if got := rej.Rejections[0]; got.Record.Offset != 7 || got.Reason != "22P02: bad" {
		t.Fatalf("rejection %+v", got)
	}
	if want := "sink: record in/2@7 rejected: 22P02: bad"; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	if retry.Rejected() != nil || retry.AsRejected(errors.New("x")) != nil {
		t.Fatal("empty rejection or plain error seen as rejected")
	}
}

func TestFatalMarkSurvivesWrappingAndIsNotRetried(t *testing.T) {
	calls := 0
	err := retry.Policy{Initial: time.Millisecond}.Do(context.Background(), func(context.Context) error {
		calls++
		return fmt.Errorf("decoder: %w", retry.Fatal(errors.New("401")))
	})
	if !retry.IsFatal(err) || retry.IsRetryable(err) || calls != 1 || err.Error() != "decoder: 401" {
		t.Fatalf("Do = %v (fatal %v, retryable %v) after %d calls; want the fatal error after one call", err, retry.IsFatal(err), retry.IsRetryable(err), calls)
	}
	if retry.Fatal(nil) != nil || retry.IsFatal(errors.New("x")) || retry.IsFatal(retry.Retryable(errors.New("x"))) {
		t.Fatal("Fatal(nil) is not nil, or an unmarked error is fatal")
	}
}
