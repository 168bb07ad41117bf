package signalbox_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
)

// lockedBuffer is an io.Writer that the test may read while the sink
// goroutine writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Count(b.buf.Bytes(), []byte("\n"))
}

// TestIdleFlushMakesRecordsVisible: in a live job whose checkpoints are an
// hour apart, released records still reach the JSONL sink's writer — what a
// reader sees — without waiting for a checkpoint, because the at-least-once
// sinks are flushed a linger after records are handed to them. With the
// linger set to an hour, the same records stay in the sink's buffer.
func TestIdleFlushMakesRecordsVisible(t *testing.T) {
	// seen runs the job until cond holds of what a reader sees and what
	// the sink was handed, and returns the lines seen and the checkpoints.
	seen := func(linger time.Duration, what string, cond func(lines, handed int64) bool) (int, int64) {
		now := time.Now().Add(-time.Second).UnixMilli()
		part := script.Partition{TopicPartition: tp("a", 0)}
		for i := range int64(10) {
			part.Records = append(part.Records, tsRecord("a", 0, i, "k", now+i))
		}
		w := &lockedBuffer{}
		sink := &handed{Sink: jsonl.New(w, jsonl.Options{})}
		p, err := signalbox.New(script.New(1, 3, part), tsInputs("a"),
			signalbox.WithDelay(10*time.Millisecond), signalbox.WithCheckpointInterval(time.Hour),
			signalbox.WithFlushLinger(linger), signalbox.WithSink(sink))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		waitFor(t, what, func() bool { return cond(int64(w.lines()), sink.n.Load()) })
		n, cps := w.lines(), p.Stats().Checkpoints
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return n, cps
	}
	if n, cps := seen(signalbox.DefaultFlushLinger, "a reader to see 10 records",
		func(lines, _ int64) bool { return lines == 10 }); n != 10 || cps != 0 {
		t.Fatalf("with the default linger a reader saw %d of 10 records after %d checkpoints, want 10 after 0", n, cps)
	}
	if n, _ := seen(time.Hour, "the sink to be handed 10 records",
		func(_, handed int64) bool { return handed == 10 }); n != 0 {
		t.Fatalf("with an hour's linger a reader saw %d records before any checkpoint: the test does not exercise the idle flush", n)
	}
}

// handed counts the records its Sink accepted in Write.
type handed struct {
	signalbox.Sink
	n atomic.Int64
}

func (h *handed) Write(ctx context.Context, b []record.Record) error {
	err := h.Sink.Write(ctx, b)
	if err == nil {
		h.n.Add(int64(len(b)))
	}
	return err
}

// demandingSource stamps every Fetch with the wall clock as its evidence
// clock and records the engine's evidence demands.
type demandingSource struct {
	*script.Source
	mu      sync.Mutex
	demands []time.Time
}

func (d *demandingSource) Poll(ctx context.Context) (record.Fetch, error) {
	f, err := d.Source.Poll(ctx)
	f.At = time.Now()
	return f, err
}

func (d *demandingSource) WantEvidence(at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.demands = append(d.demands, at)
}

// TestEvidenceIsDemandedWhenARecordIsDue: once everything is caught up, the
// engine tells the source when the first parked record is due (event time
// + delay + 1 ms: the first clock whose fallback, now − delay − 1 ms,
// reaches it), so the source can answer right then rather than after its long
// poll; once nothing is parked, it withdraws the demand.
func TestEvidenceIsDemandedWhenARecordIsDue(t *testing.T) {
	t.Parallel()
	et := time.Now().Add(300 * time.Millisecond).UnixMilli()
	part := script.Partition{TopicPartition: tp("a", 0), Records: []record.Record{tsRecord("a", 0, 0, "k", et)}}
	src := &demandingSource{Source: script.New(1, 1, part)}
	out := &collect{}
	p, err := signalbox.New(src, tsInputs("a"), signalbox.WithDelay(100*time.Millisecond), signalbox.WithSink(out))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitFor(t, "the record's release, then no more demand", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return p.Stats().Out == 1 && len(src.demands) >= 2 && src.demands[len(src.demands)-1].IsZero()
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	due := time.UnixMilli(et + 1).Add(100 * time.Millisecond)
	if len(src.demands) < 2 || !src.demands[0].Equal(due) || !src.demands[len(src.demands)-1].IsZero() {
		t.Fatalf("demands %v: want the due time %v, then none", src.demands, due)
	}
}
