package signalbox

// Doing what the engine's steps asked for (engine.Effects): the driver's
// one blocking part, with backpressure and the checkpoint barriers.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/signalbox/signalbox/internal/engine"
)

// apply does what the engine asked for since the last apply (Ready), in
// the order of engine.Effects' fields, and tells it (Advance). It blocks
// while the sinks lag (backpressure) and at a barrier; on an error the out
// batches it did not hand over stay for the final checkpoint.
func (r *run) apply(ctx context.Context) error {
	r.takeSpares()
	fx := r.eng.Ready()
	for _, e := range fx.Events {
		r.notify(event(e))
	}
	if len(fx.Resume) > 0 {
		r.pauser.Resume(fx.Resume...)
	}
	if len(fx.Pause) > 0 {
		r.pauser.Pause(fx.Pause...)
	}
	if len(fx.Handled) > 0 {
		r.handledTo.Handled(fx.Handled...)
	}
	if fx.WantEvidence {
		r.demander.WantEvidence(fx.Evidence)
	}
	for _, recs := range fx.Recycle {
		r.recycler.Recycle(recs)
	}
	if fx.Live != 0 {
		r.p.live.Store(fx.Live)
	}
	if fx.Publish {
		r.publish()
	}
	b := fx.Barrier
	var ack *out
	for i, o := range fx.Outs {
		w := &out{Out: o}
		if b != nil && o == b.Out {
			w.ack, ack = make(chan struct{}), w
		}
		if err := r.send(ctx, w); err != nil {
			r.eng.Advance(len(fx.Outs) - i)
			return err
		}
	}
	r.eng.Advance(0)
	r.takeSpares()
	if b == nil {
		return nil
	}
	return r.awaitBarrier(ctx, b, ack)
}

// takeSpares gives the engine the batches the sink goroutine gave back.
func (r *run) takeSpares() {
	for {
		select {
		case s := <-r.spare:
			r.eng.Spare(s)
		default:
			return
		}
	}
}

// awaitBarrier waits until the sink goroutine has flushed b's checkpoint
// (o, its batch; without a DurableStore, committed it too); with one, it
// then stores the parked set with the checkpoint (one sync), commits Low
// offsets and reports EventCheckpoint: a commit, the engine's barrier
// effect, is made here and only here with a DurableStore, and by the sink
// goroutine (writer.go) without one. A crash between any two steps loses
// nothing: the previous checkpoint still covers everything not
// acknowledged.
func (r *run) awaitBarrier(ctx context.Context, b *engine.Barrier, o *out) error {
	if err := r.await(ctx, nil, o.ack, r.sinkDone); err != nil {
		return err
	}
	for b.Revoke && len(r.acks) > 0 {
		r.notify(<-r.acks)
	}
	if r.durable == nil {
		return nil // the sink goroutine committed
	}
	if err := r.durable.Checkpoint(storable(*b.CP, o.fenced), r.blobs()); err != nil {
		return fmt.Errorf("signalbox: storing checkpoint: %w", err)
	}
	if err := r.commit(ctx, b.CP, b.Final, o.fenced); err != nil {
		return err
	}
	r.countCheckpoint(b.Start)
	r.notify(Event{Kind: EventCheckpoint, Watermark: b.CP.Watermark})
	return nil
}

// send hands o to the sink goroutine. It blocks while the sinks lag
// (backpressure). A driver without one (stepped) writes o itself.
func (r *run) send(ctx context.Context, o *out) error {
	if r.stepped != nil {
		if err := r.stepped.writeOne(context.WithoutCancel(ctx), o); err != nil {
			return err
		}
		r.stepped.giveBack(o)
		return nil
	}
	select {
	case r.outs <- o:
		return nil
	default:
	}
	return r.await(ctx, o, nil, r.sinkDone)
}

// errSinkStopped surfaces when the sink goroutine ended while the engine
// waited for it.
var errSinkStopped = errors.New("signalbox: sink goroutine stopped")

// await is the engine goroutine's one blocking wait: until o is handed to
// the sink goroutine (o != nil) or done is closed. Meanwhile it reports the
// sink goroutine's acknowledgements to the observer and keeps the
// published stats fresh for status views; it gives up on a sink error, on
// ctx, or when sinkDone (if not nil) is closed. Only Run's shutdown drains
// the sink goroutine differently: there its error is read after it has
// ended.
func (r *run) await(ctx context.Context, o *out, done, sinkDone <-chan struct{}) error {
	var outs chan<- *out
	if o != nil {
		outs = r.outs
	}
	pub := time.NewTicker(r.cfg.tick)
	defer pub.Stop()
	for {
		select {
		case outs <- o:
			return nil
		case <-done:
			return nil
		case <-pub.C:
			r.publish()
		case e := <-r.acks:
			r.notify(e)
		case err := <-r.errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-sinkDone:
			return errSinkStopped
		}
	}
}
