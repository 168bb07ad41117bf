package engine

import (
	"slices"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// lowestHolder is the timed partition that holds the watermark lowest,
// ties broken by topic and partition; nil when none holds (every timed
// partition is caught up, so the evidence clock drives the watermark).
// Flow control never pauses it, so the watermark can always move.
func (c *Engine) lowestHolder() *partState {
	var lowest *partState
	lowC := watermark.MaxTime
	for _, ps := range c.parts {
		if ps.timeless || !ps.holds {
			continue
		}
		if c := ps.contribution(c.cfg.Delay); lowest == nil || c < lowC || c == lowC && ps.tp.Compare(lowest.tp) < 0 {
			lowest, lowC = ps, c
		}
	}
	return lowest
}

// align decides which partitions to pause and resume at the source
// (Effects), sparing lowest (the lowest holder). It is called after every
// handled Fetch and every release.
func (c *Engine) align(lowest *partState) {
	if !c.cfg.CanPause || (c.cfg.Align <= 0 && c.cfg.ParkedLimit <= 0) || len(c.parts) == 0 {
		return
	}
	if lim := c.cfg.ParkedLimit; lim > 0 {
		b := c.store.Bytes()
		switch {
		case b > lim:
			c.overLimit = true
		case b < lim/4*3:
			c.overLimit = false
		}
	}
	lowC := watermark.MaxTime
	if lowest != nil {
		lowC = lowest.contribution(c.cfg.Delay)
	}
	window := c.cfg.Align.Milliseconds()
	nextC := c.nextHolders(lowest)
	var pause, resume []record.TopicPartition
	for tp, ps := range c.parts {
		if ps.timeless {
			continue
		}
		reason := ""
		// A partition re-reading below its restored position holds the
		// watermark (restoreHold): pausing it could stop everything.
		if ps != lowest && !ps.restoring {
			ctb := ps.contribution(c.cfg.Delay)
			if window > 0 && ps.maxET != watermark.MinTime {
				base := max(c.wm, watermark.Settled(ps.firstET, c.cfg.Delay.Milliseconds()))
				allowance := window + ps.ahead()
				if ctb <= nextC {
					allowance += ps.span // a lookahead partition: one answer more
				}
				if ctb-base > allowance {
					reason = "align"
				}
			}
			if c.overLimit && ps.maxET != watermark.MinTime && (lowest == nil || ctb >= lowC) {
				reason = "memory"
			}
		}
		switch {
		case reason != "" && ps.paused == "":
			pause = append(pause, tp)
		case reason == "" && ps.paused != "":
			resume = append(resume, tp)
		}
		ps.paused = reason
	}
	if len(pause) > 0 {
		c.fx.Pause = append(c.fx.Pause, pause...)
		c.debug("paused partitions running ahead", "count", len(pause), "parked_limit", c.overLimit)
	}
	if len(resume) > 0 {
		c.fx.Resume = append(c.fx.Resume, resume...)
		c.debug("resumed partitions", "count", len(resume))
	}
}

// lookahead is how many holders after the lowest one may fetch their next
// answer while their last is parked. Each step of the watermark waits for
// the next answer of the partition that holds it lowest; fetched only when
// that partition becomes the lowest, the answer is a round trip, a decode
// and a pass of the engine away, during which nothing else can be released.
// With big producer batches a step is one batch (thousands of records), so
// a replay ran at the speed of that chain; fetched ahead for the next few
// holders, the chain overlaps with the releases before it. Each costs at
// most one answer of memory.
const lookahead = 3

// nextHolders returns the contribution of the lookahead-th holder after
// lowest in the order lowestHolder uses, or of the last one when there are
// fewer (watermark.MinTime when there are none): a partition whose
// contribution is at or below it is one of the lookahead partitions, ties
// included.
func (c *Engine) nextHolders(lowest *partState) int64 {
	var next [lookahead]int64 // the lowest contributions, ascending
	n := 0
	for _, ps := range c.parts {
		if ps == lowest || ps.timeless || !ps.holds || ps.maxET == watermark.MinTime {
			continue
		}
		ctb := ps.contribution(c.cfg.Delay)
		i := n
		for i > 0 && next[i-1] > ctb {
			i--
		}
		if i < lookahead {
			n = min(n+1, lookahead)
			copy(next[i+1:n], next[i:n-1])
			next[i] = ctb
		}
	}
	if n == 0 {
		return watermark.MinTime
	}
	return next[n-1]
}

// NoteHandled remembers the partitions whose records f delivered, for
// ackHandled.
func (c *Engine) NoteHandled(f *record.Fetch) {
	if !c.cfg.TellsHandled {
		return
	}
	for i := range f.Partitions {
		if len(f.Partitions[i].Records) > 0 {
			c.handledTPs = append(c.handledTPs, f.Partitions[i].TopicPartition)
		}
	}
}

// ackHandled reports the partitions NoteHandled remembered as handled
// (Effects); it is called after align, so their pauses go first.
func (c *Engine) ackHandled() {
	if !c.cfg.TellsHandled || len(c.handledTPs) == 0 {
		return
	}
	c.fx.Handled = append(c.fx.Handled, c.handledTPs...)
	c.handledTPs = c.handledTPs[:0]
}

// contribution is the partition's contribution to the watermark while it
// holds it, as the watermark package computes it (watermark.Settled): its
// newest event time − delay − 1 ms, −∞ before its first record. Flow
// control compares it with the watermark; ingest uses it as the mark by
// the data (dataMark).
func (ps *partState) contribution(delay time.Duration) int64 {
	return watermark.Settled(ps.maxET, delay.Milliseconds())
}

// unpause forgets a partition's pause when it leaves the engine, so that a
// later assignment of it starts fetching (Effects).
func (c *Engine) unpause(ps *partState) {
	if ps.paused != "" && c.cfg.CanPause {
		c.fx.Resume = append(c.fx.Resume, ps.tp)
	}
	ps.paused = ""
}

// pausedList is Stats.Paused: the paused partitions, sorted.
func (c *Engine) pausedList() []record.TopicPartition {
	var out []record.TopicPartition
	for tp, ps := range c.parts {
		if ps.paused != "" {
			out = append(out, tp)
		}
	}
	slices.SortFunc(out, record.TopicPartition.Compare)
	return out
}

// aheadRecords is how many of its last answer's records a partition may
// run ahead of its base on top of the window (the answer's span counts
// for at most this many of its records): one answer of the usual size.
// Sources size answers to fewer (sources/kafka: about 768 records); only
// whole producer batches make them larger, and a 1 MiB batch of small
// records is thousands, hours of event time in a long history: with its
// full span a partition fetched a second such batch while the first was
// all parked.
const aheadRecords = 1024

// ahead is the event time a partition may run ahead of its base on top of
// the window: the event time its last answer spanned, counted for at most
// aheadRecords of the answer's records.
func (ps *partState) ahead() int64 {
	if ps.spanRecs <= aheadRecords {
		return ps.span
	}
	return ps.span * aheadRecords / int64(ps.spanRecs)
}
