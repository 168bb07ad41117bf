package signalbox

// The engine goroutine's loop: each wake-up, the engine's steps for it,
// and their effects done (doc.go maps the stages).

import (
	"context"
	"time"

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
