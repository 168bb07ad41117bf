package engine

import (
	"slices"
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/offsets"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// partState is the engine's state of one assigned partition.
type partState struct {
	tp  record.TopicPartition
	wid watermark.ID
	cid catchup.ID
	// timeless: its input has no event time (Config.Timeless).
	timeless bool
	// render decodes its schema'd records for the sinks (Config.Render);
	// nil: its input is not schema'd.
	render func(*record.Record) (string, error)
	task   *task
	table  TableStore // what its records update (Config.Tables); nil: output
	offs   *offsets.Partition
	late   *LateCounter
	// restart: records below restorePos with event time ≤ restoreWM were
	// already emitted before the restart.
	restoring  bool
	restorePos int64
	restoreWM  int64
	// lateAt: a partition new to the engine (G7), or one joining a task
	// that holds records (assign), starts at a restored watermark of its
	// own; its records at or below lateAt are late.
	lateAt int64
	// start is the position the partition was assigned at; floor counts the
	// records below it that a DurableStore restored, and their lowest
	// offset, so commits stay below them until they are released.
	start      int64
	floorCount int
	floorMin   int64
	// Flow control (align.go): the newest and the first event time
	// observed, the event time the last answer spanned and its records,
	// and why the partition is paused ("" when it is not).
	maxET, firstET int64
	span           int64
	spanRecs       int
	paused         string
	holds          bool  // its catch-up phase holds the watermark
	fetchMax       int64 // newest event time of the answer being handled
	// winHold holds its Low back for the windows (windowhold.go).
	winHold windowHold
	// arrays are the source's record arrays that records parked from this
	// partition are in, until they go back to it (recycle.go).
	arrays []parkedArray
}

// task is one co-partitioned task: partition number p of every input. It
// has its own watermark (its strategy.Strategy, fed by its partitions only) and its
// own release mark.
//
// The instance releases up to G, the lowest watermark of its tasks with
// timed partitions. Without rebalances G is the watermark over all
// partitions, so the output is in event-time order across the whole
// instance. A task that is newly assigned starts at its checkpointed
// watermark, or at the restored watermark when none of its partitions has a
// checkpoint of its own (newMark), else −∞: G may then fall, and the task's
// re-read records are released in order instead of being late against the
// instance's other tasks; order is per task (per key), as docs/design.md
// invariants W7 and G7 state.
type task struct {
	id    int32 // its partition number
	strat strategy.Strategy
	rel   int64        // highest G applied while owned: records at or below it are late
	wm    int64        // the task's own watermark at the last release
	parts []*partState // its assigned partitions
	timed int          // how many of parts are timed
	// win is its windows' scope with a group (windowrun.go), made with the
	// task and let go of with it.
	win *winScope
}

// restoredMark is where the partitions of one assignment that are new to the
// engine start (design G7).
type restoredMark struct {
	at    int64          // the restored watermark; watermark.MinTime: none
	owned map[int32]bool // tasks with a partition that is not new
}

// newMark returns the restored mark of an assignment: the watermark of the
// checkpoint restored at start (a CheckpointSink's or a DurableStore's), or
// without one the lowest watermark of the checkpoints committed with the
// assigned partitions' offsets (record.PartitionInfo.Checkpoint,
// CheckpointCommitter); −∞ when there is neither. A committed watermark
// more than max_future ahead of the clock is not used: nothing restores
// such a time (checkRestoredWatermark).
func (c *Engine) newMark(assigned []record.PartitionInfo) restoredMark {
	m, found := restoredMark{at: watermark.MinTime}, false
	future := c.futureBound(c.now)
	for _, a := range assigned {
		if !c.isNew(a) {
			if m.owned == nil {
				m.owned = map[int32]bool{}
			}
			m.owned[a.Partition] = true
		}
		switch {
		case a.Checkpoint == nil || c.hasCP:
		case a.Checkpoint.Watermark > future: // not restored either (refreshRestored)
		case !found || a.Checkpoint.Watermark < m.at:
			m.at, found = a.Checkpoint.Watermark, true
		}
	}
	if c.hasCP {
		m.at = c.cpWM
	}
	return m
}

// isNew reports whether a partition is new to the engine: it has no
// checkpoint, neither restored (or remembered at a revoke) nor committed
// with its offset.
func (c *Engine) isNew(a record.PartitionInfo) bool {
	_, ok := c.restored[a.TopicPartition]
	return !ok && a.Checkpoint == nil
}

// assign starts tracking a partition; m is its assignment's newMark.
func (c *Engine) assign(a record.PartitionInfo, m restoredMark, now time.Time) {
	timeless := c.cfg.Timeless(a.Topic)
	ps := &partState{
		tp:       a.TopicPartition,
		wid:      watermark.ID{Input: a.Topic, Partition: a.Partition},
		cid:      catchup.ID{Input: a.Topic, Partition: a.Partition},
		timeless: timeless,
		table:    c.tableOf(a.Topic),
		offs:     offsets.New(a.Start),
		start:    a.Start,
		maxET:    watermark.MinTime, firstET: watermark.MinTime, lateAt: watermark.MinTime,
	}
	if ps.late = c.lateCounts[a.TopicPartition]; ps.late == nil {
		ps.late = &LateCounter{}
		c.lateCounts[a.TopicPartition] = ps.late
	}
	if f, ok := c.floors[a.TopicPartition]; ok && f.Count > 0 {
		ps.floorCount, ps.floorMin = f.Count, f.MinOffset
	}
	if c.cfg.Render != nil {
		ps.render = c.cfg.Render(a.Topic)
	}
	ps.task = c.tasks[a.Partition]
	if ps.task == nil {
		ps.task = &task{id: a.Partition, strat: c.cfg.Strategy(), rel: watermark.MinTime}
		c.tasks[a.Partition] = ps.task
		if len(c.cfg.Windows) > 0 && c.cfg.InGroup {
			ps.task.win = c.newScope(ps.task)
		}
		if !m.owned[a.Partition] && m.at != watermark.MinTime && !(c.hasCP && len(c.cfg.Windows) > 0 && !c.cfg.InGroup) {
			// A task new to the engine starts at the restored watermark:
			// it releases nothing earlier, and holds G no lower (G7).
			ps.task.strat.Restore(m.at)
			ps.task.rel = m.at
		}
	}
	if c.isNew(a) {
		ps.lateAt = m.at
	}
	ps.task.parts = append(ps.task.parts, ps)
	if !timeless {
		ps.task.timed++
	}
	end := a.End
	if cp, ok := c.restored[a.TopicPartition]; ok {
		wm := max(cp.Watermark, c.cpWM)
		ps.restoring, ps.restorePos, ps.restoreWM = a.Start < cp.Position, cp.Position, wm
		c.scopeRestored(ps, wm)
		if ps.restoring {
			c.restoringN++
		}
		if ps.othersHold() {
			// Raising the task's mark would make the checkpoint claim
			// records its other partitions still hold (R8): the
			// partition alone starts at its restored watermark.
			ps.lateAt = max(ps.lateAt, wm)
		} else {
			if !c.rebuilds(ps) { // windows: the re-read records come back in order, by their data
				ps.task.strat.Restore(wm)
			}
			ps.task.rel = max(ps.task.rel, wm)
		}
		switch {
		case !cp.Replaying || cp.End <= 0:
		case c.cfg.UntilEnd:
			// A bounded run stops at this start-up's snapshot (M2), and
			// never before the original one (R2).
			end = max(end, cp.End)
		default:
			end = cp.End // keep the original snapshot: a restart cannot shorten history
		}
		c.event(Event{Kind: EventOffsetsReset, Partition: a.TopicPartition, Offset: cp.Position, Watermark: wm})
	}
	c.parts[a.TopicPartition] = ps
	c.pcache = partCache{}
	ps.task.strat.Add(ps.wid, timeless, now)
	ph := c.catch.Assign(ps.cid, a.Start, end, now)
	st, _ := c.catch.Status(ps.cid)
	ps.holds = ph.Holds()
	ps.task.strat.SetPhase(ps.wid, ph, st.Behind, now)
	c.event(Event{Kind: EventAssigned, Partition: a.TopicPartition, To: ph})
}

// othersHold reports whether another partition of ps's task holds records
// not yet acknowledged (parked, in flight, or restored by a DurableStore).
func (ps *partState) othersHold() bool {
	for _, o := range ps.task.parts {
		if o != ps && (o.offs.Outstanding() > 0 || o.floorCount > 0) {
			return true
		}
	}
	return false
}

func (c *Engine) revoke(tp record.TopicPartition) {
	ps := c.parts[tp]
	if ps == nil {
		return
	}
	// Remember what this instance emitted, as a checkpoint would: if the
	// partition comes back (an eager rebalance revokes everything, then
	// reassigns), the re-read records it already emitted are skipped.
	// A fenced partition's emitted records were not stored: the sink's
	// checkpoint says what to skip.
	if c.fenced[tp] {
		delete(c.restored, tp)
		delete(c.fenced, tp)
	} else {
		pos, wm := ps.emittedClaim()
		c.restored[tp] = record.PartitionCheckpoint{TopicPartition: tp, Low: ps.low(), Position: pos, Watermark: wm}
	}
	delete(c.parts, tp)
	c.pcache = partCache{}
	c.unpause(ps)
	c.catch.Revoke(ps.cid)
	ps.task.strat.Remove(ps.wid)
	ps.task.parts = slices.DeleteFunc(ps.task.parts, func(o *partState) bool { return o == ps })
	if !ps.timeless {
		ps.task.timed--
	}
	if len(ps.task.parts) == 0 {
		c.dropScope(ps.task)
		delete(c.tasks, tp.Partition)
	}
	c.event(Event{Kind: EventRevoked, Partition: tp})
}

func (c *Engine) phase(t catchup.Transition) {
	ps := c.parts[record.TopicPartition{Topic: t.Input, Partition: t.Partition}]
	if ps == nil {
		return
	}
	st, _ := c.catch.Status(t.ID)
	ps.holds = t.To.Holds()
	ps.task.strat.SetPhase(ps.wid, t.To, st.Behind, c.now)
	c.event(Event{Kind: EventPhase, Partition: ps.tp, From: t.From, To: t.To, Watermark: c.wm})
}
