package startup

import (
	"context"
	"errors"
	"time"
)

// ErrTimeout is wrapped by the error Run returns when the deadline passes.
var ErrTimeout = errors.New("start-up timed out")

type key struct{}

// WithDeadline returns ctx carrying d as the start-up deadline that every
// component opened with it shares.
func WithDeadline(ctx context.Context, d time.Time) context.Context {
	return context.WithValue(ctx, key{}, d)
}

// Deadline is when a start-up bounded by bound must end: now+bound, or the
// deadline ctx carries when that is earlier (then carried is true).
func Deadline(ctx context.Context, bound time.Duration) (deadline time.Time, carried bool) {
	d := time.Now().Add(bound)
	if c, ok := ctx.Value(key{}).(time.Time); ok && c.Before(d) {
		return c, true
	}
	return d, false
}

// Run runs step and returns its error, or ErrTimeout once deadline passes,
// or ctx's error when ctx ends first. A step abandoned that way keeps
// running in the background.
func Run(ctx context.Context, deadline time.Time, step func() error) error {
	if !time.Now().Before(deadline) {
		return ErrTimeout
	}
	done := make(chan error, 1)
	go func() { done <- step() }()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return ErrTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}
