package engine

import (
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// Handling one Fetch: rebalances, then each partition's records and evidence.

// BeginFetch is the engine's first step for a Fetch f at now: the evidence
// clock, the poison guard's bound, and, when f revokes partitions, a
// checkpoint barrier (Effects): the safe offsets are committed before the
// partitions go, as the source acknowledges the rebalance at the next Poll
// and the new owner starts from what is committed.
func (c *Engine) BeginFetch(f *record.Fetch, now time.Time) {
	c.now = now
	c.fetched = true
	if len(f.Revoked) > 0 || len(f.Assigned) > 0 {
		c.stats.Rebalances++
	}
	if !f.At.IsZero() {
		c.stamped = true
		if f.At.After(c.evidence) {
			c.evidence = f.At
		}
	}
	clock := now
	if c.stamped {
		clock = c.evidence
	}
	c.future = c.futureBound(clock)
	if len(f.Revoked) > 0 {
		c.checkpoint(now, false, true)
	}
}

// TakeFetch is the engine's second step for a Fetch, once BeginFetch's
// barrier is done: it lets go of the revoked partitions, assigns the new
// ones (restored is the checkpoint sink's checkpoint read for them,
// readRestored), and ingests each partition's records and evidence.
func (c *Engine) TakeFetch(f *record.Fetch, marks map[*record.Record]error, restored *record.Checkpoint, now time.Time) error {
	c.aheadJoin() // revokes, versions put, records parked: no helper beside them (ahead.go)
	for _, tp := range f.Revoked {
		c.revoke(tp)
	}
	if len(f.Assigned) > 0 {
		c.revokedAll = false
	} else if len(f.Revoked) > 0 && c.catch.Len() == 0 {
		c.revokedAll = true
	}
	c.refreshRestored(f.Assigned, restored)
	m := c.newMark(f.Assigned)
	if err := c.windowsResume(f.Assigned); err != nil {
		return err
	}
	if len(f.Assigned) > 0 && c.cfg.InGroup && len(c.cfg.Windows) > 0 {
		c.taskCount = c.tasksAfter(f.Assigned)
	}
	for _, a := range f.Assigned {
		c.assign(a, m, now)
	}
	if c.winErr != nil {
		return c.winErr // a task's window store did not open
	}
	if len(f.Assigned) > 0 {
		// A DurableStore's restored records count in the first assignment
		// only, as the Seeker's positions apply to it only (design R10).
		c.floors = nil
	}
	for i := range f.Partitions {
		if err := c.take(&f.Partitions[i], marks, now); err != nil {
			return err
		}
	}
	return nil
}

// take ingests one partition's part of a Fetch: its records (marks are
// prepare's), then its position and end-offset evidence.
func (c *Engine) take(pf *record.PartitionFetch, marks map[*record.Record]error, now time.Time) error {
	ps := c.parts[pf.TopicPartition]
	if ps == nil {
		c.warn("fetch for an unassigned partition", "topic", pf.Topic, "partition", pf.Partition)
		return nil
	}
	if pf.Err != nil {
		if t, ok := c.catch.Fail(ps.cid, now); ok {
			c.phase(t)
		}
		c.warn("fetch failed: partition holds the watermark", "topic", pf.Topic, "partition", pf.Partition, "error", pf.Err)
		return nil
	}
	before := ps.maxET
	ps.fetchMax = watermark.MinTime
	parked := c.store.Len() // nothing is released while a fetch is ingested
	for j := range pf.Records {
		rec := &pf.Records[j]
		var mark error
		if marks != nil {
			mark = marks[rec]
		}
		if err := c.ingest(ps, rec, mark, now); err != nil {
			return err
		}
	}
	c.retire(ps, pf.Records, c.store.Len()-parked)
	if ps.fetchMax != watermark.MinTime {
		// The strategy keeps a partition's newest event time: one
		// Observe per answer, with its newest, is the same as one per
		// record (nothing advances the watermark within a Fetch).
		ps.task.strat.Observe(ps.wid, ps.fetchMax, now)
	}
	if ps.maxET > before {
		ps.span, ps.spanRecs = ps.maxET-max(before, ps.firstET), len(pf.Records)
	}
	ps.offs.Advance(pf.Position)
	if ps.restoring && pf.Position >= ps.restorePos {
		ps.restoring = false
	}
	if t, ok := c.catch.Observe(ps.cid, pf.Position, pf.End, now); ok {
		c.phase(t)
	} else if st, _ := c.catch.Status(ps.cid); st.Phase != catchup.CaughtUp {
		ps.task.strat.SetPhase(ps.wid, st.Phase, st.Behind, now)
	}
	return nil
}

// tasksAfter is how many tasks the engine holds once assigned are
// assigned too: what a task's window store is sized by (Window.TaskStore).
func (c *Engine) tasksAfter(assigned []record.PartitionInfo) int {
	n := len(c.tasks)
	seen := map[int32]bool{}
	for _, a := range assigned {
		if c.tasks[a.Partition] == nil && !seen[a.Partition] {
			seen[a.Partition] = true
			n++
		}
	}
	return n
}
