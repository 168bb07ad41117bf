package signalbox_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/sinks/jsonl"
	kafkasrc "github.com/signalbox/signalbox/sources/kafka"
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
