package startup

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDeadlineIsTheEarliest(t *testing.T) {
	ctx := context.Background()
	before := time.Now()
	if d, carried := Deadline(ctx, time.Minute); carried || d.Before(before.Add(time.Minute)) || d.After(time.Now().Add(time.Minute)) {
		t.Fatalf("no carried deadline: got %v (carried %v), want now+1m", d, carried)
	}
	c := time.Now().Add(time.Second)
	if d, carried := Deadline(WithDeadline(ctx, c), time.Minute); !carried || !d.Equal(c) {
		t.Fatalf("earlier carried deadline: got %v (carried %v), want %v", d, carried, c)
	}
	late := time.Now().Add(time.Hour)
	if d, carried := Deadline(WithDeadline(ctx, late), time.Minute); carried || !d.Before(late) {
		t.Fatalf("later carried deadline: got %v (carried %v), want now+1m", d, carried)
	}
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	if err := Run(ctx, time.Now().Add(time.Minute), func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("step error: got %v", err)
	}
	block := make(chan struct{})
	defer close(block)
	start := time.Now()
	err := Run(ctx, time.Now().Add(50*time.Millisecond), func() error { <-block; return nil })
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("blocked step: got %v, want ErrTimeout", err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("returned before the deadline")
	}
	if err := Run(ctx, time.Now().Add(-time.Second), func() error { t.Error("step ran after the deadline"); return nil }); !errors.Is(err, ErrTimeout) {
		t.Fatalf("past deadline: got %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := Run(cctx, time.Now().Add(time.Minute), func() error { <-block; return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ctx: got %v", err)
	}
}
