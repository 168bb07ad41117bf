package signalbox

// What a step of the engine's core asks of the outside world, and the
// driver's part that does it (doc.go: the step core).

import (
	"context"
	"fmt"
	"time"

	"github.com/signalbox/signalbox/record"
)

// effects is what the core's steps asked for since the driver last applied
// them: the core decides, the driver (apply) does the I/O, in the order the
// fields are listed. The core only writes it (doc.go S5).
type effects struct {
	// events for the observer (WithObserver), in order.
	events []Event
	// resume and pause: flow control's changes at the source (Pauser).
	resume, pause []record.TopicPartition
	// handled: partitions whose records were handled (HandledNotifier).
	handled []record.TopicPartition
	// evidence: the due time to ask the source's evidence for
	// (EvidenceDemander), when wantEvidence.
	evidence     time.Time
	wantEvidence bool
	// recycle: source record arrays the engine is done with (Recycler).
	recycle [][]record.Record
	// live: when the replay was done (Unix ms, WithClock), for the sinks'
	// latency meters; publish: publish the stats (Pipeline.Stats).
	live    int64
	publish bool
	// outs: sealed out batches for the sink goroutine, in order. One the
	// driver could not hand over (a stop) stays, and goes first at the
	// final checkpoint: its records are counted as released.
	outs []*out
	// barrier: after handing over outs, wait until the sinks have
	// acknowledged the last of them (a checkpoint), then, with a
	// DurableStore, store the checkpoint and commit.
	barrier *barrier
}

// barrier is a checkpoint the driver waits for (checkpoint).
type barrier struct {
	o     *out // the out batch that carries cp
	cp    *record.Checkpoint
	start time.Time // when it was taken (WithClock)
	final bool
	// revoke: partitions are revoked once it is done, so the fences the
	// sink goroutine reported before its ack are taken in first.
	revoke bool
}

// apply does what the core asked for since the last apply, and clears it.
// It blocks while the sinks lag (backpressure) and at a barrier; on an
// error the out batches it did not hand over stay for the final checkpoint.
func (r *run) apply(ctx context.Context) error {
	fx := &r.fx
	for _, e := range fx.events {
		r.notify(e)
	}
	clear(fx.events)
	if len(fx.resume) > 0 {
		r.pauser.Resume(fx.resume...)
	}
	if len(fx.pause) > 0 {
		r.pauser.Pause(fx.pause...)
	}
	if len(fx.handled) > 0 {
		r.handledTo.Handled(fx.handled...)
	}
	if fx.wantEvidence {
		r.demander.WantEvidence(fx.evidence)
	}
	for _, recs := range fx.recycle {
		r.recycler.Recycle(recs)
	}
	clear(fx.recycle)
	if fx.live != 0 {
		r.p.live.Store(fx.live)
	}
	if fx.publish {
		r.publish()
	}
	b := fx.barrier
	if b != nil && b.o.ack == nil {
		b.o.ack = make(chan struct{})
	}
	*fx = effects{events: fx.events[:0], pause: fx.pause[:0], resume: fx.resume[:0], handled: fx.handled[:0], recycle: fx.recycle[:0], outs: fx.outs, barrier: b}
	// Sent in place, so that the slice keeps its capacity (no allocation
	// per out batch); on an error the ones not sent move to the front.
	for i, o := range fx.outs {
		if err := r.send(ctx, o); err != nil {
			n := copy(fx.outs, fx.outs[i:])
			clear(fx.outs[n:])
			fx.outs = fx.outs[:n]
			return err
		}
		fx.outs[i] = nil
	}
	fx.outs, fx.barrier = fx.outs[:0], nil
	if b == nil {
		return nil
	}
	return r.awaitBarrier(ctx, b)
}

// awaitBarrier waits until the sink goroutine has flushed b's checkpoint
// (and, without a DurableStore, committed it); with one, it then stores
// the parked set with the checkpoint (one sync), commits Low offsets and
// reports EventCheckpoint. A crash between any two steps loses nothing:
// the previous checkpoint still covers everything not acknowledged.
func (r *run) awaitBarrier(ctx context.Context, b *barrier) error {
	if err := r.await(ctx, nil, b.o.ack, r.sinkDone); err != nil {
		return err
	}
	for b.revoke && len(r.acks) > 0 {
		r.notify(<-r.acks)
	}
	if r.durable == nil {
		return nil // the sink goroutine committed
	}
	if err := r.durable.Checkpoint(storable(*b.cp, b.o.fenced), r.blobs()); err != nil {
		return fmt.Errorf("signalbox: storing checkpoint: %w", err)
	}
	if err := r.commit(ctx, b.cp, b.final, b.o.fenced); err != nil {
		return err
	}
	r.countCheckpoint(b.start)
	r.notify(Event{Kind: EventCheckpoint, Watermark: b.cp.Watermark})
	return nil
}
