package signalbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/internal/topicpattern"
	"github.com/signalbox/signalbox/record"
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
	schemad  bool // some input has a ValueDecoder and a sink wants JSON: output renders (schemad.go)
	markJSON bool // a sink trusts record.Record.ValueJSON and no transform clears it: prepare marks values

	mu    sync.Mutex
	stats Stats

	// meters wrap the sinks (set by Run); live is the time (Unix ms, WithClock)
	// the replay was done, 0 before; sinksOpen is true while every sink is
	// open.
	meters    []*meteredSink
	live      atomic.Int64
	sinksOpen atomic.Bool
}

// New builds a pipeline. It validates the options and reports every problem.
func New(src Source, opts ...Option) (*Pipeline, error) {
	p := &Pipeline{src: src, decoders: map[string]*decoder{}, cfg: configOf(opts)}
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
		p.schemad = p.schemad || d.schemad()
		if in.TopicPattern != "" {
			re, _ := topicpattern.Compile(in.TopicPattern) // checked by compileInput
			p.patterns = append(p.patterns, topicPattern{re, d})
			continue
		}
		p.decoders[in.Topic] = d
	}
	p.fallback, _ = compileInput(Input{Topic: "*"})
	p.schemad = p.schemad && !bytesOnly(p.cfg.sinks)
	p.markJSON = p.cfg.transform == nil && embedsValueJSON(p.cfg.sinks)
	p.setRenderIngest()
	if p.cfg.strategy == nil {
		delay := p.cfg.delay
		p.cfg.strategy = func() strategy.Strategy { return strategy.OffsetGate(delay) }
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
	bytes   int // records' Size, counted only under WithMaxInflightBytes
	dead    []record.Record
	cp      *record.Checkpoint // flush, then checkpoint and commit
	cpAt    time.Time          // when cp was taken (WithClock)
	flush   bool               // flush the at-least-once sinks (WithFlushLinger)
	final   bool
	// With a DurableStore the engine commits after storing the checkpoint:
	// the sink goroutine only flushes, then closes ack.
	noCommit bool
	ack      chan struct{}
	fenced   []record.TopicPartition // set by the sink goroutine before it closes ack
}

// run holds the state of one Run: it is touched by the engine goroutine only.
type run struct {
	p        *Pipeline
	cfg      *config
	parts    map[record.TopicPartition]*partState
	pcache   partCache // released records' partitions, without hashing
	catch    *catchup.Tracker
	tasks    map[int32]*task
	store    ParkedStore
	restored map[record.TopicPartition]record.PartitionCheckpoint
	// fenced are the partitions whose checkpoint the checkpoint sink
	// refused (EventFenced): their revoke must not remember what was emitted.
	fenced map[record.TopicPartition]bool
	cpWM   int64 // the restored checkpoint's watermark, when hasCP
	hasCP  bool
	wm     int64
	cur    *out
	outs   chan *out
	// spare returns record batches of more than smallBatch records'
	// capacity from the sink goroutine once every sink has written them,
	// cleared, for the engine to fill again; each tick the engine drops
	// those that waited unused (trimSpares).
	spare    chan []record.Record
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
	// revokedAll: a Fetch revoked every partition this instance held; until
	// the next assignment the replay is not done (a rebalance is under way).
	revokedAll bool
	durable    DurableStore
	sinkDone   chan struct{}
	// restored from a DurableStore: parked records per partition, until
	// the first assignment (design R10); late counters.
	floors map[record.TopicPartition]record.Parked
	// late holds every partition's late counters, restored ones included;
	// they outlive a revoke, so a partition that comes back keeps counting.
	lateCounts map[record.TopicPartition]*LateCounter
	// storeSizeAt is when publish last asked the store for its disk usage.
	storeSizeAt time.Time
	sinkDead    atomic.Int64 // records the sinks rejected, dead-lettered by the sink goroutine (writer.go)
	// flow control (align.go): the source's Pauser, if it has one, and
	// whether the parked limit is exceeded. holdPauser is the schema holds'
	// (hold.go): both go through one pauseGate.
	pauser     Pauser
	holdPauser Pauser
	// handledTo is the source's HandledNotifier, if it has one, and
	// handledTPs the partitions handled since it was last told.
	handledTo  HandledNotifier
	handledTPs []record.TopicPartition
	overLimit  bool
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
	// spareLow is the fewest spare batches that waited whenever the engine
	// took one since spareWindow, the wall time the window began
	// (trimSpares).
	spareLow    int
	spareWindow time.Time
	// recycler takes back the source's record arrays (recycle.go); nil
	// when the source is no Recycler or the store is one whose use of a
	// parked record is not known. parkRefs: the store refers to parked
	// records (the in-memory queue) rather than copying them (ParkCopier).
	recycler Recycler
	parkRefs bool
	// restoringN is at least the number of partitions still re-reading
	// below their restored checkpoint's position (restoreHold recounts).
	restoringN int
	// ctx is Run's: the ValueDecoders' when records go to the sinks
	// (renderOut).
	ctx context.Context
	// heldMu guards heldSnap, the partitions the poller holds for their
	// ValueDecoder (hold.go), for publish.
	heldMu   sync.Mutex
	heldSnap []SchemaHold
	// untilReached: the watermark reached UntilTime's event time.
	untilReached bool
}

// Run runs the pipeline until ctx is cancelled (live mode), until every
// partition reaches its start-up end offset (UntilEndOffsets), or until the
// watermark reaches an event time (UntilTime).
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
	r := newRun(ctx, p)
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
	// A stop during start-up is a clean stop: nothing was read, nothing is
	// to commit.
	for _, s := range sinks {
		if err := s.Open(ctx); err != nil {
			if cancelled(ctx, err) {
				return nil
			}
			return fmt.Errorf("signalbox: opening sink: %w", err)
		}
		opened++
	}
	p.sinksOpen.Store(true)
	if err := r.restore(ctx); err != nil {
		if cancelled(ctx, err) {
			return nil
		}
		return err
	}
	if err := p.src.Open(ctx); err != nil {
		if cancelled(ctx, err) {
			return nil
		}
		return fmt.Errorf("signalbox: opening source: %w", err)
	}
	defer func() {
		if cerr := p.src.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("signalbox: closing source: %w", cerr)
		}
	}()

	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	fetches := make(chan polled, 1) // with the one poll and pollSource each hold: three ahead of the engine
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.poll(pollCtx, fetches) }()
	sinkDone := make(chan struct{})
	r.sinkDone = sinkDone
	go func() { defer wg.Done(); defer close(sinkDone); r.write(context.WithoutCancel(ctx)) }()
	defer wg.Wait()

	err = r.loop(ctx, fetches)
	stopPoll()
	if err == nil || cancelled(ctx, err) {
		// Graceful: flush what was released, checkpoint, commit.
		err = r.takeCheckpoint(context.Background(), true, false)
	}
	close(r.outs)
	for done := false; !done; {
		select {
		case e := <-r.acks:
			r.notify(e)
		case <-sinkDone:
			done = true
		}
	}
	for len(r.acks) > 0 {
		r.notify(<-r.acks)
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

// newRun returns the state of one Run of p, with its sinks instrumented.
func newRun(ctx context.Context, p *Pipeline) *run {
	cfg := &p.cfg
	r := &run{
		p: p, cfg: cfg, ctx: ctx,
		parts:       map[record.TopicPartition]*partState{},
		catch:       catchup.New(catchup.Options{StaleAfter: cfg.staleAfter}),
		tasks:       map[int32]*task{},
		store:       cfg.store,
		wm:          watermark.MinTime,
		cpWM:        watermark.MinTime,
		outs:        make(chan *out, cfg.maxInflight),
		spare:       make(chan []record.Record, cfg.maxInflight+1),
		spareLow:    math.MaxInt,
		spareWindow: time.Now(), // wall time, as trimSpares
		errs:        make(chan error, 2),
		acks:        make(chan Event, cfg.maxInflight+2),
		started:     cfg.clock(),
		restored:    map[record.TopicPartition]record.PartitionCheckpoint{},
		fenced:      map[record.TopicPartition]bool{},
		lateCounts:  map[record.TopicPartition]*LateCounter{},
	}
	r.cur = &out{}
	r.durable, _ = cfg.store.(DurableStore)
	cfg.sinks, cfg.deadLetter, p.meters = instrument(cfg.sinks, cfg.deadLetter, cfg.delay, &p.live, cfg.clock)
	gate := newPauseGate(p.src)
	r.pauser, r.holdPauser = gate.pauserFor(pausedByEngine), gate.pauserFor(pausedByHold)
	r.demander, _ = p.src.(EvidenceDemander)
	if r.handledTo, _ = p.src.(HandledNotifier); r.handledTo != nil {
		r.handledTo.Handled() // before the first Poll: the source holds partitions back from here on
	}
	switch s := cfg.store.(type) {
	case *memStore:
		r.recycler, _ = p.src.(Recycler)
		r.parkRefs = true
	case ParkCopier:
		if s.ParkCopies() {
			r.recycler, _ = p.src.(Recycler)
		}
	}
	return r
}

// cancelled reports whether err is ctx's cancellation: a stop, not a
// failure.
func cancelled(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) && ctx.Err() != nil
}
