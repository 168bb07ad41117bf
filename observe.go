package signalbox

// What the engine reports: events to the observer, and the Stats
// snapshot.

import (
	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
)

// event is the engine's event e as an Event (the kinds share their values:
// TestEventKindsMatchEngine).
func event(e engine.Event) Event {
	return Event{Kind: EventKind(e.Kind), Partition: e.Partition, From: e.From, To: e.To,
		Watermark: e.Watermark, Offset: e.Offset, LateBy: e.LateBy, Reason: e.Reason}
}

// notify reports e to the observer (WithObserver), from the engine
// goroutine: the engine's events (apply) and the sink goroutine's
// acknowledgements, of which EventFenced is the engine's input too.
func (r *run) notify(e Event) {
	if e.Kind == EventFenced {
		r.eng.Fenced(e.Partition) // what this instance emitted of it was not stored
	}
	if r.cfg.observer != nil {
		r.cfg.observer(e)
	}
}

// publish makes the Stats snapshot that Pipeline.Stats returns.
func (r *run) publish() {
	es := r.eng.Snapshot()
	c := es.Counters
	s := Stats{
		In: c.In, Filtered: c.Filtered, Out: c.Out, Timeless: c.Timeless, Dead: c.Dead + r.sinkDead.Load(),
		Skipped: c.Skipped, Future: c.Future, Rebalances: c.Rebalances, TableVersions: c.TableVersions,
		ExpressionFailed: c.ExpressionFailed, ReplayDone: c.ReplayDone, ReplayTime: c.ReplayTime,
		Watermark: es.Watermark, Parked: es.Parked, ParkedB: es.ParkedB, Holders: es.Holders, Paused: es.Paused,
		Progress: es.Progress, Partitions: es.Partitions,
	}
	r.heldMu.Lock()
	s.SchemaHolds = r.heldSnap
	r.heldMu.Unlock()
	s.Late = make(map[record.TopicPartition]LateCounter, len(es.Late))
	for tp, l := range es.Late {
		s.Late[tp] = LateCounter(l)
	}
	s.Tasks = make([]TaskWatermark, len(es.Tasks))
	for i, t := range es.Tasks {
		s.Tasks[i] = TaskWatermark(t)
	}
	for _, w := range es.Windows {
		s.Windows = append(s.Windows, WindowStats(w))
	}
	r.publishOps(&s)
	r.p.mu.Lock()
	checkpoints, delivery := r.p.stats.Checkpoints, r.p.stats.Delivery
	r.p.stats = s
	r.p.stats.Checkpoints, r.p.stats.Delivery = checkpoints, delivery
	r.p.mu.Unlock()
}
