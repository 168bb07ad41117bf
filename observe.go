package signalbox

// What the engine reports: events to the observer, and the Stats
// snapshot.

import (
	"maps"
	"slices"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// event is the core's report of e: the driver reports it to the observer
// at the next apply (effects).
func (c *core) event(e Event) {
	if c.cfg.observer != nil {
		c.fx.events = append(c.fx.events, e)
	}
}

// notify reports e to the observer (WithObserver), from the engine
// goroutine: the core's events (apply) and the sink goroutine's
// acknowledgements, which are the core's input too (EventFenced).
func (r *run) notify(e Event) {
	if e.Kind == EventFenced {
		r.fenced[e.Partition] = true // what this instance emitted of it was not stored
	}
	if r.cfg.observer != nil {
		r.cfg.observer(e)
	}
}

func (r *run) publish() {
	s := r.stats
	s.Dead += r.sinkDead.Load()
	s.Watermark = r.wm
	s.Parked, s.ParkedB = r.store.Len(), r.store.Bytes()
	s.Holders = nil
	for _, t := range r.tasks {
		s.Holders = append(s.Holders, t.strat.Holders()...)
	}
	watermark.SortHolds(s.Holders)
	s.Paused = r.pausedList()
	r.heldMu.Lock()
	s.SchemaHolds = r.heldSnap
	r.heldMu.Unlock()
	s.Progress = r.catch.Progress()
	s.Partitions = r.catch.Statuses()
	s.Late = make(map[record.TopicPartition]LateCounter, len(r.lateCounts))
	for tp, c := range r.lateCounts {
		if c.Count > 0 {
			cc := *c
			cc.Histogram = slices.Clone(c.Histogram) // the snapshot must not share the live counters
			s.Late[tp] = cc
		}
	}
	r.publishOps(&s)
	s.ExpressionFailed = maps.Clone(r.stats.ExpressionFailed) // the snapshot must not share the live counters
	s.Windows = r.windowStats()
	r.p.mu.Lock()
	checkpoints, delivery := r.p.stats.Checkpoints, r.p.stats.Delivery
	r.p.stats = s
	r.p.stats.Checkpoints, r.p.stats.Delivery = checkpoints, delivery
	r.p.mu.Unlock()
}
