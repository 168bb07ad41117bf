package signalbox

// The engine goroutine's loop: each wake-up, then one pass of its work
// (doc.go maps the stages).

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/timers"
	"github.com/signalbox/signalbox/watermark"
)

// loop is the engine: it returns nil when a bounded run is complete, or the
// reason it stopped.
func (r *run) loop(ctx context.Context, fetches <-chan polled) error {
	cfg := r.cfg
	tick := time.NewTimer(cfg.tick)
	defer tick.Stop()
	last := passTimes{cp: cfg.clock()}
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
		if done, err := r.pass(ctx, now, &last); done || err != nil {
			return err
		}
		resetTimer(tick, r.nextWake(now))
	}
}

// passTimes are when the engine last took a checkpoint and published its
// stats.
type passTimes struct{ cp, pub time.Time }

// pass is the engine's work at time now after each wake-up (a Fetch, an
// acknowledgement, the tick): the core's steps (startPass, releaseMore,
// endPass), their effects applied after each release chunk that another
// may follow, and at the end (doc.go S2). done reports that the run is
// over (err says why, nil when a bounded run is complete).
func (r *run) pass(ctx context.Context, now time.Time, last *passTimes) (done bool, err error) {
	r.startPass(now)
	if err := r.releaseAll(ctx); err != nil {
		return true, err
	}
	if done, err = r.endPass(now, last); err != nil {
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
		r.trimSpares(wall)
	}
	return done, nil
}

// releaseAll goes on with the release under way until it is over, handing
// over the batches it seals chunk by chunk.
func (r *run) releaseAll(ctx context.Context) error {
	for {
		more, err := r.releaseMore()
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

// startPass is the core's step at time now after each wake-up: catch-up's
// ticks, then the watermark, and the release of what it passes starts.
func (c *core) startPass(now time.Time) {
	c.now = now
	for _, t := range c.catch.Tick(now) {
		c.phase(t)
	}
	c.release(now)
}

// endPass is the core's step once a pass's release is over: flow control,
// the end of the replay, checkpoints, sealing the out batch and the
// published stats. done reports that the run is over.
func (c *core) endPass(now time.Time, last *passTimes) (done bool, err error) {
	cfg := c.cfg
	if c.untilReached {
		c.cfg.logger.Info("the watermark reached until; stopping", zap.String("until", string(c.cfg.until)))
		return true, c.windowsClose() // Run takes the last checkpoint and commits
	}
	lowest := c.lowestHolder()
	c.align(lowest)
	c.ackHandled()
	c.demandEvidence(lowest != nil)
	if !c.replayed && c.fetched && !c.revokedAll && c.catch.ReplayDone() {
		c.replayed = true
		c.fx.live = now.UnixMilli()
		c.stats.ReplayDone, c.stats.ReplayTime = true, now.Sub(c.started)
		c.event(Event{Kind: EventReplayDone, Watermark: c.wm})
		if cfg.until == UntilEndOffsets {
			c.flushAll()
			return true, nil
		}
	}
	if now.Sub(last.cp) >= cfg.checkpointEvery {
		last.cp = now
		c.checkpoint(now, false, false)
	}
	c.seal(now)
	if !c.unflushed.IsZero() && now.Sub(c.unflushed) >= cfg.flushLinger {
		c.cur.flush = true
		c.seal(now)
	}
	if now.Sub(last.pub) >= cfg.tick {
		last.pub = now
		c.fx.publish = true
	}
	return false, nil
}

// nextWake is how long to sleep before re-evaluating the watermark: the
// exact release time of the first parked record when the engine's own clock
// drives the processing-time fallback, else the tick. With a source that
// keeps an evidence clock, only a new Fetch can move the fallback, and a
// Fetch wakes the engine anyway: waking at the due time would only spin.
func (c *core) nextWake(now time.Time) time.Duration {
	d := c.cfg.tick
	if !c.unflushed.IsZero() {
		d = min(d, max(c.unflushed.Add(c.cfg.flushLinger).Sub(now), 0))
	}
	if !c.replayed || c.stamped {
		return d
	}
	if pos, ok := c.store.Min(); ok {
		due := c.dueAt(pos)
		if w := due.Sub(now); w < d {
			d = max(w, 0)
		}
	}
	return d
}

// demandEvidence asks an EvidenceDemander source (effects) when the first parked
// record is due, once only the evidence clock keeps it back: every timed
// partition is caught up, so the watermark follows that clock.
func (c *core) demandEvidence(holding bool) {
	if !c.demands || !c.stamped {
		return
	}
	var at time.Time
	if c.replayed && !holding {
		if pos, ok := c.store.Min(); ok {
			at = c.dueAt(pos)
		}
	}
	if !at.Equal(c.demanded) {
		c.demanded = at
		c.fx.evidence, c.fx.wantEvidence = at, true
	}
}

// dueAt is when the processing-time fallback releases a record parked at
// pos: the clock at which its event time is settled (watermark.SettledAt).
func (c *core) dueAt(pos timers.Pos) time.Time {
	return time.UnixMilli(watermark.SettledAt(pos.EventTime, c.cfg.delay.Milliseconds()))
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
