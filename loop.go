package signalbox

// The engine goroutine: the poller that feeds it, its loop, and the
// handling of one Fetch (doc.go maps the stages).

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// polled is one Fetch on its way to the engine. For a Fetch that revokes
// partitions, handled is closed once the engine has committed their safe
// offsets: the poller waits for it before it polls again, because the next
// Poll is what lets a rebalance proceed.
type polled struct {
	f       record.Fetch
	marks   map[*record.Record]error // from prepare
	handled chan struct{}
}

// poll feeds the engine: the source's fetches, prepared (prepare), and the
// records of held partitions once they decode (hold.go).
func (r *run) poll(ctx context.Context, fetches chan<- polled) {
	raw := make(chan polled)
	done := make(chan struct{})
	go func() { defer close(done); r.pollSource(ctx, raw) }()
	defer func() { <-done }()
	h := newHolds(r)
	probes := make(chan probed)
	var probing sync.WaitGroup
	defer probing.Wait()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		var wake <-chan time.Time
		if at, ok := h.due(); ok {
			// Wall time: the holds' backoff paces real retries of a registry (hold.go).
			resetTimer(retry, max(time.Until(at), 0))
			wake = retry.C
		}
		var p *polled
		var err error
		select {
		case q := <-raw:
			q.marks, err = r.p.prepare(ctx, &q.f, h)
			p = &q
		case <-wake:
			h.probe(ctx, time.Now(), probes, &probing)
		case a := <-probes:
			p, err = h.answered(ctx, a, time.Now())
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
		h.snapshot()
		if p == nil {
			continue
		}
		select {
		case fetches <- *p:
		case <-ctx.Done():
			return
		}
	}
}

// pollSource polls the source and hands each Fetch to poll. After a Fetch
// that revokes partitions it waits until the engine has handled it.
func (r *run) pollSource(ctx context.Context, raw chan<- polled) {
	for {
		f, err := r.p.src.Poll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.errs <- fmt.Errorf("signalbox: source: %w", err)
			}
			return
		}
		p := polled{f: f}
		if len(f.Revoked) > 0 {
			p.handled = make(chan struct{})
		}
		select {
		case raw <- p:
		case <-ctx.Done():
			return
		}
		if p.handled != nil {
			select {
			case <-p.handled:
			case <-ctx.Done():
				return
			}
		}
	}
}

// loop is the engine: it returns nil when a bounded run is complete, or the
// reason it stopped.
func (r *run) loop(ctx context.Context, fetches <-chan polled) error {
	cfg := r.cfg
	tick := time.NewTimer(cfg.tick)
	defer tick.Stop()
	lastCP := cfg.clock()
	lastPub := time.Time{}
	for {
		fetched := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-r.errs:
			return err
		case p := <-fetches:
			fetched = true
			err := r.handle(ctx, p)
			r.noteHandled(&p.f)
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
		for _, t := range r.catch.Tick(now) {
			r.phase(t)
		}
		if err := r.release(now); err != nil {
			return err
		}
		if r.untilReached {
			r.cfg.logger.Info("the watermark reached until; stopping", zap.String("until", string(r.cfg.until)))
			return nil // Run takes the last checkpoint and commits
		}
		lowest := r.lowestHolder()
		r.align(lowest)
		r.ackHandled()
		r.demandEvidence(lowest != nil)
		if !r.replayed && r.fetched && !r.revokedAll && r.catch.ReplayDone() {
			r.replayed = true
			r.p.live.Store(now.UnixMilli())
			r.stats.ReplayDone, r.stats.ReplayTime = true, now.Sub(r.started)
			r.notify(Event{Kind: EventReplayDone, Watermark: r.wm})
			if cfg.until == UntilEndOffsets {
				return r.flushAll()
			}
		}
		if now.Sub(lastCP) >= cfg.checkpointEvery {
			lastCP = now
			if err := r.takeCheckpoint(ctx, false, false); err != nil {
				return err
			}
		}
		if err := r.send(ctx, nil); err != nil {
			return err
		}
		if !r.unflushed.IsZero() && now.Sub(r.unflushed) >= cfg.flushLinger {
			r.cur.flush = true
			if err := r.send(ctx, nil); err != nil {
				return err
			}
		}
		if now.Sub(lastPub) >= cfg.tick {
			lastPub = now
			r.publish()
		}
		// Wall time: the spare window bounds memory held idle, whatever the job's clock says.
		if wall := time.Now(); wall.Sub(r.spareWindow) >= cfg.tick {
			r.trimSpares(wall)
		}
		resetTimer(tick, r.nextWake(now))
		if fetched && cfg.stepped != nil {
			cfg.stepped()
		}
	}
}

// nextWake is how long to sleep before re-evaluating the watermark: the
// exact release time of the first parked record when the engine's own clock
// drives the processing-time fallback, else the tick. With a source that
// keeps an evidence clock, only a new Fetch can move the fallback, and a
// Fetch wakes the engine anyway: waking at the due time would only spin.
func (r *run) nextWake(now time.Time) time.Duration {
	d := r.cfg.tick
	if !r.unflushed.IsZero() {
		d = min(d, max(r.unflushed.Add(r.cfg.flushLinger).Sub(now), 0))
	}
	if !r.replayed || r.stamped {
		return d
	}
	if pos, ok := r.store.Min(); ok {
		due := time.UnixMilli(pos.EventTime).Add(r.cfg.delay)
		if w := due.Sub(now); w < d {
			d = max(w, 0)
		}
	}
	return d
}

// demandEvidence tells an EvidenceDemander source when the first parked
// record is due, once only the evidence clock keeps it back: every timed
// partition is caught up, so the watermark follows that clock.
func (r *run) demandEvidence(holding bool) {
	if r.demander == nil || !r.stamped {
		return
	}
	var at time.Time
	if r.replayed && !holding {
		if pos, ok := r.store.Min(); ok {
			at = time.UnixMilli(pos.EventTime).Add(r.cfg.delay)
		}
	}
	if !at.Equal(r.demanded) {
		r.demanded = at
		r.demander.WantEvidence(at)
	}
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

func (r *run) handle(ctx context.Context, p polled) error {
	f := p.f
	now := r.cfg.clock()
	r.fetched = true
	if len(f.Revoked) > 0 || len(f.Assigned) > 0 {
		r.stats.Rebalances++
	}
	if !f.At.IsZero() {
		r.stamped = true
		if f.At.After(r.evidence) {
			r.evidence = f.At
		}
	}
	r.future = watermark.MaxTime
	if r.cfg.maxFuture > 0 {
		clock := now
		if r.stamped {
			clock = r.evidence
		}
		r.future = clock.Add(r.cfg.maxFuture).UnixMilli()
	}
	if len(f.Revoked) > 0 {
		// Commit the safe offsets before letting the partitions go: the
		// source acknowledges the rebalance at the next Poll, and the new
		// owner starts from what is committed.
		if err := r.takeCheckpoint(ctx, false, true); err != nil {
			return err
		}
		// The sink goroutine reported its fences before the barrier's ack:
		// revoke must see them.
		for len(r.acks) > 0 {
			r.notify(<-r.acks)
		}
	}
	for _, tp := range f.Revoked {
		r.revoke(tp)
	}
	if len(f.Assigned) > 0 {
		r.revokedAll = false
	} else if len(f.Revoked) > 0 && r.catch.Len() == 0 {
		r.revokedAll = true
	}
	if err := r.refreshRestored(ctx, f.Assigned, f.Member); err != nil {
		return err
	}
	m := r.newMark(f.Assigned)
	for _, a := range f.Assigned {
		r.assign(a, m, now)
	}
	if len(f.Assigned) > 0 {
		// A DurableStore's restored records count in the first assignment
		// only, as the Seeker's positions apply to it only (design R10).
		r.floors = nil
	}
	for i := range f.Partitions {
		if err := r.take(&f.Partitions[i], p.marks, now); err != nil {
			return err
		}
	}
	return nil
}

// take ingests one partition's part of a Fetch: its records (marks are
// prepare's), then its position and end-offset evidence.
func (r *run) take(pf *record.PartitionFetch, marks map[*record.Record]error, now time.Time) error {
	ps := r.parts[pf.TopicPartition]
	if ps == nil {
		r.cfg.logger.Warn("fetch for an unassigned partition", zap.String("topic", pf.Topic), zap.Int32("partition", pf.Partition))
		return nil
	}
	if pf.Err != nil {
		if t, ok := r.catch.Fail(ps.cid, now); ok {
			r.phase(t)
		}
		r.cfg.logger.Warn("fetch failed: partition holds the watermark", zap.String("topic", pf.Topic), zap.Int32("partition", pf.Partition), zap.Error(pf.Err))
		return nil
	}
	before := ps.maxET
	ps.fetchMax = watermark.MinTime
	parked := r.store.Len() // nothing is released while a fetch is ingested
	for j := range pf.Records {
		rec := &pf.Records[j]
		var mark error
		if marks != nil {
			mark = marks[rec]
		}
		if err := r.ingest(ps, rec, mark, now); err != nil {
			return err
		}
	}
	r.retire(ps, pf.Records, r.store.Len()-parked)
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
	if t, ok := r.catch.Observe(ps.cid, pf.Position, pf.End, now); ok {
		r.phase(t)
	} else if st, _ := r.catch.Status(ps.cid); st.Phase != catchup.CaughtUp {
		ps.task.strat.SetPhase(ps.wid, st.Phase, st.Behind, now)
	}
	return nil
}
