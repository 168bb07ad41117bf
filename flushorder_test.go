package signalbox_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
)

// orderLog records, across sinks, the order of their flushes.
type orderLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *orderLog) add(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
}

type plainSink struct {
	collect
	log *orderLog
}

func (s *plainSink) Flush(context.Context) error { s.log.add("plain"); return nil }

type cpSink struct {
	collect
	log *orderLog
}

func (s *cpSink) Restore(context.Context) (*record.Checkpoint, error) { return nil, nil }
func (s *cpSink) FlushCheckpoint(context.Context, record.Checkpoint) error {
	s.log.add("checkpoint")
	return nil
}

// TestCheckpointSinkFlushedLast: whatever the order the sinks are given in,
// the sink that stores the checkpoint is flushed after every other sink, so
// its checkpoint never covers a record another sink has not acknowledged.
func TestCheckpointSinkFlushedLast(t *testing.T) {
	log := &orderLog{}
	parts := heldBack(5, 50)
	for i := range parts {
		parts[i].Silent = 0
	}
	p, err := signalbox.New(script.New(5, 8, parts...), tsInputs("a", "slow"),
		signalbox.WithDelay(100*time.Millisecond), signalbox.WithClock(ticking()),
		signalbox.WithSink(&cpSink{log: log}), signalbox.WithSink(&plainSink{log: log}),
		signalbox.WithCheckpointInterval(1), signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(log.ops, " ")
	if len(log.ops) < 4 || strings.Count(got, "checkpoint") != strings.Count(got, "plain") {
		t.Fatalf("flushes: %s", got)
	}
	for i := 0; i < len(log.ops); i += 2 {
		if log.ops[i] != "plain" || log.ops[i+1] != "checkpoint" {
			t.Fatalf("flush %d: %v; want the plain sink, then the checkpoint sink", i/2, log.ops[i:i+2])
		}
	}
}

// TestOneCheckpointSink: a restart resumes from one sink's checkpoint, so a
// pipeline with two is refused.
func TestOneCheckpointSink(t *testing.T) {
	_, err := signalbox.New(script.New(1, 1), signalbox.WithSink(&cpSink{}), signalbox.WithSink(&cpSink{}))
	if err == nil || !strings.Contains(err.Error(), "sinks[1]: only one exactly-once sink") {
		t.Fatalf("New with two checkpoint sinks: %v", err)
	}
}
