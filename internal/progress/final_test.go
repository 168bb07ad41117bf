package progress

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox"
)

// replayAt is sample with the orders input at fraction f, done at 1.
func replayAt(f float64) signalbox.Stats {
	s := sample(f == 1)
	s.Progress[0].Fraction, s.Progress[0].Remaining = f, int64((1-f)*float64(s.Progress[0].Total))
	if f == 1 {
		s.Progress[0].CaughtUp = s.Progress[0].Partitions
	}
	return s
}

// stopAfterFirstFrame runs Run with a stats func that reports replayAt(0.859)
// until ctx ends and then final, ends ctx once the first snapshot is taken,
// long before any tick, and returns once Run has.
func stopAfterFirstFrame(t *testing.T, final signalbox.Stats, w *bytes.Buffer, tty bool, log *zap.Logger) {
	t.Helper()
	defer func(r, l time.Duration) { RedrawEvery, LogEvery = r, l }(RedrawEvery, LogEvery)
	RedrawEvery, LogEvery = time.Hour, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan struct{})
	calls := 0
	stats := func() signalbox.Stats {
		calls++
		if calls == 1 {
			close(first)
			return replayAt(0.859)
		}
		return final
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, stats, w, tty, log)
	}()
	<-first
	cancel() // as run does once the pipeline has stopped and published its last Stats
	<-done
	if calls != 2 {
		t.Fatalf("stats called %d times, want 2 (a last snapshot when ctx ends)", calls)
	}
}

// lastFrame is what the display drew last.
func lastFrame(out string) string {
	if i := strings.LastIndex(out, "\x1b[3A"); i >= 0 {
		return out[i:]
	}
	return out
}

func TestTerminalDrawsTheFinalFrameWhenStoppedAfterReplay(t *testing.T) {
	var buf bytes.Buffer
	stopAfterFirstFrame(t, replayAt(1), &buf, true, zap.NewNop())
	out := buf.String()
	if !strings.Contains(out, " 85.9%") {
		t.Fatalf("no first frame at 85.9%%:\n%q", out)
	}
	if f := lastFrame(out); strings.Count(f, "100.0%") != 2 || strings.Contains(f, "85.9%") || !strings.Contains(f, "3/3 partitions") {
		t.Fatalf("last frame not at 100%% for both inputs:\n%q", f)
	}
}

func TestTerminalDrawsTheLastStateWhenStoppedMidReplay(t *testing.T) {
	var buf bytes.Buffer
	stopAfterFirstFrame(t, replayAt(0.9), &buf, true, zap.NewNop())
	if f := lastFrame(buf.String()); !strings.Contains(f, " 90.0%") {
		t.Fatalf("last frame not the last state (90.0%%):\n%q", f)
	}
}

func TestLogsReplayDoneWhenStoppedAfterReplay(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	var buf bytes.Buffer
	stopAfterFirstFrame(t, replayAt(1), &buf, false, zap.New(core))
	if buf.Len() != 0 {
		t.Fatalf("wrote %q to a non-terminal", buf.String())
	}
	if n, m := logs.FilterMessage("replaying").Len(), logs.FilterMessage("replay done").Len(); n != 1 || m != 1 {
		t.Fatalf("%d replaying and %d replay done lines, want 1 and 1: %v", n, m, logs.All())
	}
	// Stopped before the replay is done: no replay done line, and no
	// second replaying line before LogEvery (the stopped line follows).
	core, logs = observer.New(zap.InfoLevel)
	stopAfterFirstFrame(t, replayAt(0.9), &buf, false, zap.New(core))
	if n, m := logs.FilterMessage("replaying").Len(), logs.FilterMessage("replay done").Len(); n != 1 || m != 0 {
		t.Fatalf("%d replaying and %d replay done lines, want 1 and 0: %v", n, m, logs.All())
	}
}
