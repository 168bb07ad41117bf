package engine

import (
	"time"

	"github.com/signalbox/signalbox/timers"
	"github.com/signalbox/signalbox/watermark"
)

// A pass: the steps after each wake-up.

// StartPass is the engine's step at time now after each wake-up: catch-up's
// ticks, then the watermark, and the release of what it passes starts.
func (c *Engine) StartPass(now time.Time) {
	c.now = now
	for _, t := range c.catch.Tick(now) {
		c.phase(t)
	}
	c.release(now)
}

// EndPass is the engine's step once a pass's release is over: flow control,
// the end of the replay, checkpoints, sealing the out batch and the
// published stats. done reports that the run is over.
func (c *Engine) EndPass(now time.Time) (done bool, err error) {
	cfg, last := c.cfg, &c.last
	if c.untilReached {
		c.info("the watermark reached until; stopping", "until", time.UnixMilli(c.cfg.StopAt).UTC())
		return true, c.windowsClose() // Run takes the last checkpoint and commits
	}
	lowest := c.lowestHolder()
	c.align(lowest)
	c.ackHandled()
	c.demandEvidence(lowest != nil)
	if !c.replayed && c.fetched && !c.revokedAll && c.catch.ReplayDone() {
		c.replayed = true
		c.fx.Live = now.UnixMilli()
		c.stats.ReplayDone, c.stats.ReplayTime = true, now.Sub(cfg.Start)
		c.event(Event{Kind: EventReplayDone, Watermark: c.wm})
		if cfg.UntilEnd {
			c.flushAll()
			return true, nil
		}
	}
	if now.Sub(last.cp) >= cfg.CheckpointEvery {
		last.cp = now
		c.checkpoint(now, false, false)
	}
	c.seal(now)
	if !c.unflushed.IsZero() && now.Sub(c.unflushed) >= cfg.FlushLinger {
		c.cur.Flush = true
		c.seal(now)
	}
	if now.Sub(last.pub) >= cfg.Tick {
		last.pub = now
		c.fx.Publish = true
	}
	return false, nil
}

// NextWake is how long to sleep before re-evaluating the watermark: the
// exact release time of the first parked record when the engine's own clock
// drives the processing-time fallback, else the tick. With a source that
// keeps an evidence clock, only a new Fetch can move the fallback, and a
// Fetch wakes the engine anyway: waking at the due time would only spin.
func (c *Engine) NextWake(now time.Time) time.Duration {
	d := c.cfg.Tick
	if !c.unflushed.IsZero() {
		d = min(d, max(c.unflushed.Add(c.cfg.FlushLinger).Sub(now), 0))
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

// demandEvidence asks an EvidenceDemander source (Effects) when the first parked
// record is due, once only the evidence clock keeps it back: every timed
// partition is caught up, so the watermark follows that clock.
func (c *Engine) demandEvidence(holding bool) {
	if !c.cfg.Demands || !c.stamped {
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
		c.fx.Evidence, c.fx.WantEvidence = at, true
	}
}

// dueAt is when the processing-time fallback releases a record parked at
// pos: the clock at which its event time is settled (watermark.SettledAt).
func (c *Engine) dueAt(pos timers.Pos) time.Time {
	return time.UnixMilli(watermark.SettledAt(pos.EventTime, c.cfg.Delay.Milliseconds()))
}
