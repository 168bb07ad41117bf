package signalbox

// The engine goroutine's loop: each wake-up, the engine's steps for it,
// and their effects done (doc.go maps the stages).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
)

// loop is the engine goroutine: it returns nil when a bounded run is
// complete, or the reason it stopped.
func (r *run) loop(ctx context.Context, fetches <-chan polled) error {
	cfg := r.cfg
	tick := time.NewTimer(cfg.tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-r.errs:
			return err
		case p := <-fetches:
			err := r.fetchStep(ctx, p)
			if p.handled != nil {
				close(p.handled)
			}
			if err != nil {
				return err
			}
		case e := <-r.acks:
			r.notify(e)
		case <-tick.C:
		}
		now := cfg.clock()
		if done, err := r.pass(ctx, now); done || err != nil {
			return err
		}
		resetTimer(tick, r.eng.NextWake(now))
	}
}

// fetchStep is the driver's work for one polled Fetch: the engine's steps
// for it, with the revoke barrier and the checkpoint sink's reads
// (readRestored) done in between, their effects applied, its partitions
// noted as handled.
func (r *run) fetchStep(ctx context.Context, p polled) error {
	now := r.cfg.clock()
	r.eng.BeginFetch(&p.f, now)
	err := r.apply(ctx)
	var cp *record.Checkpoint
	if err == nil {
		cp, err = r.readRestored(ctx, p.f.Assigned, p.f.Member)
	}
	if err == nil {
		err = r.eng.TakeFetch(&p.f, p.marks, cp, now)
	}
	if err == nil {
		err = r.apply(ctx)
	}
	r.eng.NoteHandled(&p.f)
	return err
}

// pass is the engine's work at time now after each wake-up (a Fetch, an
// acknowledgement, the tick): its steps (StartPass, ReleaseMore, EndPass),
// their effects applied after each release chunk that another may follow,
// and at the end (doc.go S2). done reports that the run is over (err says
// why, nil when a bounded run is complete).
func (r *run) pass(ctx context.Context, now time.Time) (done bool, err error) {
	r.eng.StartPass(now)
	if err := r.releaseAll(ctx); err != nil {
		return true, err
	}
	if done, err = r.eng.EndPass(now); err != nil {
		return true, err
	}
	if err := r.releaseAll(ctx); err != nil { // flushAll's
		return true, err
	}
	if err := r.apply(ctx); err != nil {
		return true, err
	}
	// Wall time: the spare window bounds memory held idle, whatever the job's clock says.
	if wall := time.Now(); !done && wall.Sub(r.spareWindow) >= r.cfg.tick {
		r.eng.TrimSpares()
		r.spareWindow = wall
	}
	return done, nil
}

// releaseAll goes on with the release under way until it is over, handing
// over the batches it seals chunk by chunk.
func (r *run) releaseAll(ctx context.Context) error {
	for {
		more, err := r.eng.ReleaseMore()
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if err := r.apply(ctx); err != nil {
			return err
		}
	}
}

// finish ends a run whose loop returned err: on a stop (ctx cancelled or
// past its deadline) or a completed bounded run, it finishes a release the
// stop interrupted (the watermark already claims it), flushes what was
// released, checkpoints and commits.
func (r *run) finish(ctx context.Context, err error) error {
	if err != nil && !stopped(ctx, err) {
		return err
	}
	if err = r.releaseAll(context.Background()); err != nil {
		return err
	}
	r.eng.Finish(r.cfg.clock())
	return r.apply(context.Background())
}

func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// apply does what the engine asked for since the last apply (Ready), in
// the order of engine.Effects' fields, and tells it (Advance). It blocks
// while the sinks lag (backpressure) and at a barrier; on an error the out
// batches it did not hand over stay for the final checkpoint.
func (r *run) apply(ctx context.Context) error {
	r.takeSpares()
	fx := r.eng.Ready()
	if r.trace != nil {
		r.trace(fx)
	}
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
	for i, o := range fx.Outs {
		w := &out{Out: o}
		if b != nil && o == b.Out {
			w.ack, r.barrierOut = make(chan struct{}), w
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
	// The barrier's batch went out in this apply, or in one a stop cut
	// short after it (Advance kept the barrier with the batches after it).
	o := r.barrierOut
	r.barrierOut = nil
	if o == nil || o.Out != b.Out {
		return errors.New("signalbox: a barrier whose batch was never handed over") // the engine seals it first (S2)
	}
	return r.awaitBarrier(ctx, b, o)
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
