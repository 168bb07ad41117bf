package signalbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers/durable"
	"github.com/signalbox/signalbox/watermark"
)

// ErrNoDeadLetter surfaces from Run when a record must go to the dead-letter
// sink but none is configured: signalbox stops rather than lose it.
var ErrNoDeadLetter = errors.New("signalbox: record rejected and no dead-letter sink configured")

// Pipeline reads from one Source and releases records in event-time order to
// its sinks. Build it with New, run it once with Run.
type Pipeline struct {
	src      Source
	cfg      config
	decoders map[string]*decoder
	patterns []topicPattern // TopicPattern inputs, in order
	fallback *decoder

	mu    sync.Mutex
	stats Stats

	// meters wrap the sinks (set by Run); live is the wall time (Unix ms)
	// the replay was done, 0 before; sinksOpen is true while every sink is
	// open.
	meters    []*meteredSink
	live      atomic.Int64
	sinksOpen atomic.Bool
}

// New builds a pipeline. It validates the options and reports every problem.
func New(src Source, opts ...Option) (*Pipeline, error) {
	p := &Pipeline{src: src, decoders: map[string]*decoder{}}
	for _, o := range opts {
		o(&p.cfg)
	}
	p.cfg.ensureDefaults()
	if src == nil {
		return nil, errors.New("signalbox: source: must not be nil")
	}
	if err := p.cfg.validate(); err != nil {
		return nil, fmt.Errorf("signalbox: invalid pipeline: %w", err)
	}
	for _, in := range p.cfg.inputs {
		d, err := compileInput(in)
		if err != nil {
			return nil, err
		}
		if in.TopicPattern != "" {
			re, _ := compileTopicPattern(in.TopicPattern) // checked by compileInput
			p.patterns = append(p.patterns, topicPattern{re, d})
			continue
		}
		p.decoders[in.Topic] = d
	}
	p.fallback, _ = compileInput(Input{Topic: "*"})
	if p.cfg.strategy == nil {
		delay := p.cfg.delay
		p.cfg.strategy = func() Strategy { return NewOffsetGate(delay) }
	}
	if p.cfg.store == nil {
		p.cfg.store = newMemStore()
	}
	return p, nil
}

// Stats returns a snapshot of the counters. It is safe to call from any
// goroutine while Run is running; the snapshot is refreshed about every tick.
func (p *Pipeline) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Late = maps.Clone(p.stats.Late)
	s.SinksOpen = p.sinksOpen.Load()
	return s
}

// out is one unit of work for the sink goroutine.
type out struct {
	records []record.Record
	dead    []record.Record
	cp      *record.Checkpoint // flush, then checkpoint and commit
	cpAt    time.Time          // when cp was taken (wall clock)
	flush   bool               // flush the at-least-once sinks (WithFlushLinger)
	final   bool
	// With a DurableStore the engine commits after storing the checkpoint:
	// the sink goroutine only flushes, then closes ack.
	noCommit bool
	ack      chan struct{}
}

// run holds the state of one Run: it is touched by the engine goroutine only.
type run struct {
	p        *Pipeline
	cfg      *config
	parts    map[record.TopicPartition]*partState
	catch    *catchup.Tracker
	tasks    map[int32]*task
	store    ParkedStore
	restored map[record.TopicPartition]record.PartitionCheckpoint
	cpWM     int64
	wm       int64
	cur      *out
	outs     chan *out
	errs     chan error
	stats    Stats
	started  time.Time
	replayed bool
	acks     chan Event // checkpoint acknowledgements from the sink goroutine
	// evidence is the source's evidence clock (record.Fetch.At); stamped
	// is false for sources that keep none.
	evidence time.Time
	stamped  bool
	fetched  bool // at least one Fetch was handled
	durable  DurableStore
	sinkDone chan struct{}
	// restored from a DurableStore: parked records per partition, late
	// counters.
	floors map[record.TopicPartition]durable.Parked
	// late holds every partition's late counters, restored ones included;
	// they outlive a revoke, so a partition that comes back keeps counting.
	lateCounts map[record.TopicPartition]*LateCounter
	// storeSizeAt is when publish last asked the store for its disk usage.
	storeSizeAt time.Time
	sinkDead    atomic.Int64 // records the sinks rejected, dead-lettered by the sink goroutine (writer.go)
	// flow control (align.go): the source's Pauser, if it has one, and
	// whether the parked limit is exceeded.
	pauser    Pauser
	overLimit bool
	// future is the poison guard's bound for the Fetch being handled: event
	// times above it do not move time (WithMaxFuture).
	future int64
	// demander hurries evidence when a parked record is due (source.go);
	// demanded is the due time last asked for.
	demander EvidenceDemander
	demanded time.Time
	// unflushed is when records were first handed to the sinks since their
	// last flush (zero: none); they are flushed WithFlushLinger after it.
	unflushed time.Time
}

// Run runs the pipeline until ctx is cancelled (live mode) or until every
// partition reaches its start-up end offset (UntilEndOffsets).
//
// Lifecycle: Run opens the sinks, restores a checkpoint from the first
// CheckpointSink, opens the source, and then parks and releases. On
// cancellation it stops polling, flushes what was released, takes a last
// checkpoint, commits, closes source and sinks, and returns nil: parked
// records stay uncommitted and are re-read on restart. Any other error is
// fatal and returned after the same clean-up (without the last checkpoint).
// Run may be called once.
func (p *Pipeline) Run(ctx context.Context) (err error) {
	cfg := &p.cfg
	r := &run{
		p: p, cfg: cfg,
		parts:      map[record.TopicPartition]*partState{},
		catch:      catchup.New(catchup.Options{StaleAfter: cfg.staleAfter}),
		tasks:      map[int32]*task{},
		store:      cfg.store,
		wm:         watermark.MinTime,
		outs:       make(chan *out, cfg.maxInflight),
		errs:       make(chan error, 2),
		acks:       make(chan Event, cfg.maxInflight+2),
		started:    cfg.clock(),
		restored:   map[record.TopicPartition]record.PartitionCheckpoint{},
		lateCounts: map[record.TopicPartition]*LateCounter{},
	}
	r.cur = &out{}
	r.durable, _ = cfg.store.(DurableStore)
	cfg.sinks, cfg.deadLetter, p.meters = instrument(cfg.sinks, cfg.deadLetter, cfg.delay, &p.live)
	r.pauser, _ = p.src.(Pauser)
	r.demander, _ = p.src.(EvidenceDemander)
	sinks := cfg.sinks
	if cfg.deadLetter != nil {
		sinks = append(sinks[:len(sinks):len(sinks)], cfg.deadLetter)
	}
	opened := 0
	defer func() {
		p.sinksOpen.Store(false)
		for _, s := range sinks[:opened] {
			if cerr := s.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("signalbox: closing sink: %w", cerr)
			}
		}
	}()
	for _, s := range sinks {
		if err := s.Open(ctx); err != nil {
			return fmt.Errorf("signalbox: opening sink: %w", err)
		}
		opened++
	}
	p.sinksOpen.Store(true)
	if err := r.restore(ctx); err != nil {
		return err
	}
	if err := p.src.Open(ctx); err != nil {
		return fmt.Errorf("signalbox: opening source: %w", err)
	}
	defer func() {
		if cerr := p.src.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("signalbox: closing source: %w", cerr)
		}
	}()

	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	fetches := make(chan polled, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.poll(pollCtx, fetches) }()
	sinkDone := make(chan struct{})
	r.sinkDone = sinkDone
	go func() { defer wg.Done(); defer close(sinkDone); r.write(context.WithoutCancel(ctx)) }()
	defer wg.Wait()

	err = r.loop(ctx, fetches)
	stopPoll()
	if err == nil || errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// Graceful: flush what was released, checkpoint, commit.
		err = r.takeCheckpoint(context.Background(), true, false)
	}
	close(r.outs)
	for done := false; !done; {
		select {
		case e := <-r.acks:
			r.emit(e)
		case <-sinkDone:
			done = true
		}
	}
	for len(r.acks) > 0 {
		r.emit(<-r.acks)
	}
	select {
	case werr := <-r.errs:
		if err == nil {
			err = werr
		}
	default:
	}
	r.publish()
	return err
}

// polled is one Fetch on its way to the engine. For a Fetch that revokes
// partitions, handled is closed once the engine has committed their safe
// offsets: the poller waits for it before it polls again, because the next
// Poll is what lets a rebalance proceed.
type polled struct {
	f       record.Fetch
	marks   map[*record.Record]error // from prepare
	handled chan struct{}
}

func (r *run) poll(ctx context.Context, fetches chan<- polled) {
	for {
		f, err := r.p.src.Poll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.errs <- fmt.Errorf("signalbox: source: %w", err)
			}
			return
		}
		p := polled{f: f, marks: r.p.prepare(&f)}
		if len(f.Revoked) > 0 {
			p.handled = make(chan struct{})
		}
		select {
		case fetches <- p:
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
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-r.errs:
			return err
		case p := <-fetches:
			err := r.handle(ctx, p)
			if p.handled != nil {
				close(p.handled)
			}
			if err != nil {
				return err
			}
		case e := <-r.acks:
			r.emit(e)
		case <-tick.C:
		}
		now := cfg.clock()
		for _, t := range r.catch.Tick(now) {
			r.phase(t)
		}
		if err := r.release(now); err != nil {
			return err
		}
		r.align()
		r.demandEvidence()
		if !r.replayed && r.fetched && r.catch.ReplayDone() {
			r.replayed = true
			r.p.live.Store(time.Now().UnixMilli())
			r.stats.ReplayDone, r.stats.ReplayTime = true, now.Sub(r.started)
			r.emit(Event{Kind: EventReplayDone, Watermark: r.wm})
			if cfg.until == UntilEndOffsets {
				return r.flushAll()
			}
		}
		if now.Sub(lastCP) >= cfg.checkpoint {
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
		resetTimer(tick, r.nextWake(now))
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
	if pos, ok := r.store.Min(); ok && r.replayed && !r.stamped {
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
func (r *run) demandEvidence() {
	if r.demander == nil || !r.stamped {
		return
	}
	var at time.Time
	if pos, ok := r.store.Min(); ok && r.replayed && !r.holding() {
		at = time.UnixMilli(pos.EventTime).Add(r.cfg.delay)
	}
	if !at.Equal(r.demanded) {
		r.demanded = at
		r.demander.WantEvidence(at)
	}
}

// holding reports whether a timed partition holds the watermark.
func (r *run) holding() bool {
	for _, ps := range r.parts {
		if ps.holds && !ps.dec.timeless {
			return true
		}
	}
	return false
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
	}
	for _, tp := range f.Revoked {
		r.revoke(tp)
	}
	if err := r.refreshRestored(ctx, f.Assigned); err != nil {
		return err
	}
	for _, a := range f.Assigned {
		r.assign(a, now)
	}
	for i := range f.Partitions {
		pf := &f.Partitions[i]
		ps := r.parts[pf.TopicPartition]
		if ps == nil {
			r.cfg.logger.Warn("fetch for an unassigned partition", zap.String("topic", pf.Topic), zap.Int32("partition", pf.Partition))
			continue
		}
		if pf.Err != nil {
			if t, ok := r.catch.Fail(ps.cid, now); ok {
				r.phase(t)
			}
			r.cfg.logger.Warn("fetch failed: partition holds the watermark", zap.String("topic", pf.Topic), zap.Int32("partition", pf.Partition), zap.Error(pf.Err))
			continue
		}
		before := ps.maxET
		ps.fetchMax = watermark.MinTime
		for j := range pf.Records {
			rec := &pf.Records[j]
			var mark error
			if p.marks != nil {
				mark = p.marks[rec]
			}
			if err := r.ingest(ps, rec, mark, now); err != nil {
				return err
			}
		}
		if ps.fetchMax != watermark.MinTime {
			// The strategy keeps a partition's newest event time: one
			// Observe per answer, with its newest, is the same as one per
			// record (nothing advances the watermark within a Fetch).
			ps.task.strat.Observe(ps.wid, ps.fetchMax, now)
		}
		if ps.maxET > before {
			ps.span = ps.maxET - max(before, ps.firstET)
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
	}
	return nil
}

// release advances the watermark and moves every parked record at or below it
// into the current out batch, in timer order. The strategy sees the source's
// evidence clock when it keeps one: the processing-time fallback must not run
// ahead of what the broker has been asked (record invariant 4).
func (r *run) release(now time.Time) error {
	if r.stamped && r.evidence.Before(now) {
		now = r.evidence
	}
	g, any := watermark.MaxTime, false
	for _, t := range r.tasks {
		w := t.strat.Advance(now)
		t.wm = w
		if t.timed > 0 {
			g, any = min(g, w), true
		}
	}
	if !any {
		return nil // no timed partition: no evidence, nothing moves
	}
	r.wm = g
	for _, t := range r.tasks {
		t.rel = max(t.rel, g)
	}
	return r.store.Release(g, 0, r.released)
}

// released takes one record the store released: it leaves the partition's
// outstanding offsets and goes into the current out batch, unless it belongs
// to a revoked partition (the new owner re-reads it) or a restart found it
// already emitted.
func (r *run) released(rec *record.Record) error {
	ps := r.parts[record.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}]
	if ps == nil {
		return nil
	}
	switch {
	case rec.Offset >= ps.start:
		ps.offs.Done(rec.Offset)
	case ps.floorCount > 0:
		ps.floorCount-- // restored from a DurableStore
	default:
		// Parked before the partition was revoked; another instance has
		// since committed past it, so it was that instance's to emit.
		r.stats.Skipped++
		return nil
	}
	if rec.Offset < ps.restorePos && rec.EventTime <= ps.restoreWM {
		r.stats.Skipped++ // emitted before the restart, per the sink's checkpoint
		return nil
	}
	r.emitNow(rec)
	if len(r.cur.records) >= r.cfg.batchSize {
		return r.send(context.Background(), r.sinkDone)
	}
	return nil
}

// flushAll releases everything parked (end of a bounded run) and raises the
// watermark to the last released event time, so that a later restart treats
// all of it as emitted.
func (r *run) flushAll() error {
	last := r.wm
	if err := r.store.Release(watermark.MaxTime, 0, func(rec *record.Record) error {
		last = max(last, rec.EventTime)
		return r.released(rec)
	}); err != nil {
		return err
	}
	for _, t := range r.tasks {
		t.strat.Restore(last)
		t.rel = max(t.rel, last)
	}
	r.wm = max(r.wm, last)
	return nil
}

// checkpoint builds the checkpoint as of everything released so far.
func (r *run) checkpoint() record.Checkpoint {
	cp := record.Checkpoint{Watermark: r.wm, Partitions: make([]record.PartitionCheckpoint, 0, len(r.parts))}
	for _, st := range r.catch.Statuses() {
		tp := record.TopicPartition{Topic: st.Input, Partition: st.Partition}
		ps := r.parts[tp]
		cp.Partitions = append(cp.Partitions, record.PartitionCheckpoint{
			TopicPartition: tp,
			Low:            ps.low(),
			Position:       ps.offs.Position(),
			End:            st.SnapshotEnd,
			Replaying:      st.Phase == catchup.Replaying || (st.Phase == catchup.Unknown && st.Position < st.SnapshotEnd),
			Watermark:      ps.task.rel,
		})
	}
	return cp
}

// send hands the current out batch to the sink goroutine if it has anything.
// It blocks while the sinks lag (backpressure).
func (r *run) send(ctx context.Context, sinkDone <-chan struct{}) error {
	o := r.cur
	if len(o.records) == 0 && len(o.dead) == 0 && o.cp == nil && !o.flush {
		return nil
	}
	// r.cur is replaced only once the batch is handed over: if the wait is
	// cancelled, its records (already counted as released) stay in r.cur and
	// leave with the final checkpoint, so no commit can pass them.
	sent := func() error {
		switch {
		case o.cp != nil || o.flush:
			r.unflushed = time.Time{}
		case r.unflushed.IsZero() && (len(o.records) > 0 || len(o.dead) > 0):
			r.unflushed = r.cfg.clock()
		}
		r.cur = &out{records: make([]record.Record, 0, min(max(len(o.records), 256), r.cfg.batchSize))}
		return nil
	}
	select {
	case r.outs <- o:
		return sent()
	default:
	}
	// The sinks lag: wait, keeping the stats fresh for status views.
	pub := time.NewTicker(r.cfg.tick)
	defer pub.Stop()
	for {
		select {
		case <-pub.C:
			r.publish()
		case r.outs <- o:
			return sent()
		case e := <-r.acks:
			r.emit(e)
		case err := <-r.errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-sinkDone:
			return errors.New("signalbox: sink goroutine stopped")
		}
	}
}

func (r *run) emit(e Event) {
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
	r.p.mu.Lock()
	checkpoints, delivery := r.p.stats.Checkpoints, r.p.stats.Delivery
	r.p.stats = s
	r.p.stats.Checkpoints, r.p.stats.Delivery = checkpoints, delivery
	r.p.mu.Unlock()
}
