package engine

// The driver's other inputs (a restored checkpoint, a fence, the end of a
// run) and what it reads for the published stats.

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// Restored is what a restart resumes from, read by the driver before the
// source opens: the checkpoint whose partitions' records below their
// position and at or below their watermark were emitted (nil: none), and,
// from a durable store, the records it holds per partition and the late
// counters it kept.
type Restored struct {
	Checkpoint *record.Checkpoint
	Floors     map[record.TopicPartition]record.Parked
	Late       map[record.TopicPartition]LateCounter
}

// Restore takes what a restart resumes from; the driver calls it once,
// before the first Fetch.
func (c *Engine) Restore(r Restored) {
	c.floors = r.Floors
	for tp, l := range r.Late {
		c.lateCounts[tp] = &l
	}
	cp := r.Checkpoint
	if cp == nil {
		return
	}
	c.cpWM, c.hasCP = cp.Watermark, true // per task: see assign
	c.wm = max(c.wm, cp.Watermark)
	for _, pc := range cp.Partitions {
		c.restored[pc.TopicPartition] = pc
	}
}

// Fenced is the sinks' report that the checkpoint sink refused tp's
// checkpoint (another member owns it): its revoke must not remember what
// this instance emitted of it.
func (c *Engine) Fenced(tp record.TopicPartition) { c.fenced[tp] = true }

// Finish is the last step of a run that stops (a stop, or a bounded run
// complete), once a release under way is over: it takes the last
// checkpoint (a barrier with a durable store).
func (c *Engine) Finish(now time.Time) { c.checkpoint(now, true, false) }

// FutureBound is max_future ahead of now (watermark.MaxTime without
// Config.MaxFuture): the highest watermark a checkpoint may restore, and
// the poison guard's bound.
func (c *Engine) FutureBound(now time.Time) int64 { return c.futureBound(now) }

// Snapshot is the engine's part of the published stats.
type Snapshot struct {
	Counters
	Watermark  int64
	Parked     int
	ParkedB    int64
	Holders    []watermark.Hold
	Paused     []record.TopicPartition
	Progress   []catchup.Progress
	Partitions []catchup.Status
	Late       map[record.TopicPartition]LateCounter // the partitions with late records
	Tasks      []TaskWatermark
	Windows    []WindowStats
}

// TaskWatermark is the watermark of one co-partitioned task.
type TaskWatermark struct {
	Task      int32
	Watermark int64
}

// Snapshot returns the engine's part of the published stats: nothing in
// it is shared with the engine's state.
func (c *Engine) Snapshot() Snapshot {
	s := Snapshot{Counters: c.stats, Watermark: c.wm, Parked: c.store.Len(), ParkedB: c.store.Bytes()}
	s.ExpressionFailed = maps.Clone(c.stats.ExpressionFailed)
	for _, t := range c.tasks {
		s.Holders = append(s.Holders, t.strat.Holders()...)
	}
	watermark.SortHolds(s.Holders)
	s.Paused = c.pausedList()
	s.Progress = c.catch.Progress()
	s.Partitions = c.catch.Statuses()
	s.Late = make(map[record.TopicPartition]LateCounter, len(c.lateCounts))
	for tp, l := range c.lateCounts {
		if l.Count > 0 {
			cl := *l
			cl.Histogram = slices.Clone(l.Histogram)
			s.Late[tp] = cl
		}
	}
	s.Tasks = make([]TaskWatermark, 0, len(c.tasks))
	for id, t := range c.tasks {
		s.Tasks = append(s.Tasks, TaskWatermark{Task: id, Watermark: t.wm})
	}
	slices.SortFunc(s.Tasks, func(a, b TaskWatermark) int { return cmp.Compare(a.Task, b.Task) })
	s.Windows = c.windowStats()
	return s
}

// LateCounters returns every partition's late counters with a count, for
// a durable store to keep (Restored.Late).
func (c *Engine) LateCounters() map[record.TopicPartition]LateCounter {
	m := map[record.TopicPartition]LateCounter{}
	for tp, l := range c.lateCounts {
		if l.Count > 0 {
			m[tp] = *l
		}
	}
	return m
}

// IsFenced reports whether tp's checkpoint was refused since it was last
// revoked (Fenced).
func (c *Engine) IsFenced(tp record.TopicPartition) bool { return c.fenced[tp] }
