package signalbox_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	kafkasrc "github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/sources/script"
)

// TestStopDuringStartupIsClean: a stop (ctx cancelled, as SIGINT does)
// while the source is still opening is a clean stop, not an error: nothing
// was read, so there is nothing to commit.
func TestStopDuringStartupIsClean(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			defer c.Close()
		}
	}()
	for _, group := range []string{"", "g"} {
		src, err := kafkasrc.New(kafkasrc.Config{Brokers: []string{ln.Addr().String()}, Topics: []string{"t"}, Group: group})
		if err != nil {
			t.Fatal(err)
		}
		p, err := signalbox.New(src, signalbox.WithInputs(signalbox.Input{Topic: "t"}),
			signalbox.WithSink(jsonl.New(io.Discard, jsonl.Options{})))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		before := accepted.Load()
		go func() { done <- p.Run(ctx) }()
		waitFor(t, "Open to reach the silent broker", func() bool { return accepted.Load() > before })
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("group %q: Run after a stop during start-up = %v, want nil", group, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("group %q: Run did not return after its context was cancelled", group)
		}
	}
}

// startupBlocker is a checkpoint sink whose Open (or Restore) waits for its
// context, then fails with the context's error wrapped, as a sink that
// dials a silent server does.
type startupBlocker struct {
	collect
	inRestore bool
	reached   chan struct{}
}

func (s *startupBlocker) wait(ctx context.Context) error {
	close(s.reached)
	<-ctx.Done()
	return fmt.Errorf("dialing the store: %w", ctx.Err())
}

func (s *startupBlocker) Open(ctx context.Context) error {
	if !s.inRestore {
		return s.wait(ctx)
	}
	return nil
}

func (s *startupBlocker) Restore(ctx context.Context) (*record.Checkpoint, error) {
	return nil, s.wait(ctx)
}

func (s *startupBlocker) FlushCheckpoint(context.Context, record.Checkpoint) error { return nil }

// TestStopDuringSinkStartupIsClean: a stop while a sink is still opening,
// or while the engine reads its checkpoint, is a clean stop too.
func TestStopDuringSinkStartupIsClean(t *testing.T) {
	for _, inRestore := range []bool{false, true} {
		s := &startupBlocker{inRestore: inRestore, reached: make(chan struct{})}
		p, err := signalbox.New(script.New(1, 1, script.Partition{TopicPartition: tp("t", 0)}),
			signalbox.WithInputs(signalbox.Input{Topic: "t"}), signalbox.WithSink(s))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		<-s.reached
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stopped in Restore %v: Run = %v, want nil", inRestore, err)
		}
	}
}
