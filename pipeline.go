package signalbox

// Pipeline: New, Stats and Run, the lifecycle (opening the sinks and the
// source, the goroutines, the clean stop).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/signalbox/signalbox/internal/decode"
	"github.com/signalbox/signalbox/internal/early"
	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/internal/topicpattern"
)

// ErrDeadline surfaces from Run when its context's deadline stopped it
// before its end: the stop was as clean as a cancellation's (released
// records flushed, a last checkpoint taken and committed), but the run did
// not finish. The error wraps context.DeadlineExceeded too.
var ErrDeadline = errors.New("signalbox: stopped cleanly at the context's deadline, after a final checkpoint")

// ErrNoDeadLetter surfaces from Run when a record must go to the dead-letter
// sink but none is configured: signalbox stops rather than lose it.
var ErrNoDeadLetter = engine.ErrNoDeadLetter

// Pipeline reads from one Source and releases records in event-time order to
// its sinks. Build it with New, run it once with Run.
type Pipeline struct {
	src      Source
	cfg      config
	decoders *decode.Set // the inputs, compiled
	schemad  bool        // some input has a ValueDecoder and a sink wants JSON: output renders (renderOut)
	markJSON bool        // a sink trusts record.Record.ValueJSON and no transform clears it: prepare marks values
	// The poller's (prepare): each topic's early processing (nil: none),
	// and the members of the value it decoded last, and its helper's
	// (prepareSplit).
	earlyOf       map[string]early.Func
	members       decode.Members
	helperMembers decode.Members
	splits        bool // a helper may share early processing: no meta filter, more than one core

	mu    sync.Mutex
	stats Stats

	// meters wrap the sinks (set by Run); live is the time (Unix ms, WithClock)
	// the replay was done, 0 before; sinksOpen is true while every sink is
	// open.
	meters    []*meteredSink
	live      atomic.Int64
	sinksOpen atomic.Bool
}

// New builds a pipeline that reads src and runs once (Run). Options set
// the inputs (WithInputs: event time and key per topic), the sinks
// (WithSink, WithRoutedSink, WithDeadLetter), processing (WithProcess,
// WithWindow, WithTables), time (WithDelay, WithLatePolicy, WithUntil,
// WithClock) and bounds (WithParkedLimit, WithParkedStore, WithAlignment,
// WithBatchSize, WithCheckpointInterval, …); each With function states its
// default and range, and an option left out takes its default.
//
// New validates every option and reports every problem in one error, each
// naming the option as a job file names it; with a source that lists its
// topics (TopicLister), an Input naming a topic the source never delivers
// is one. It decides here how each sink is treated, from what each states
// (SinkInfo): the one exactly-once sink is the checkpoint sink; a second
// is refused. New opens nothing: Run opens the sinks and the source.
func New(src Source, opts ...Option) (*Pipeline, error) {
	p := &Pipeline{src: src, decoders: decode.NewSet(), cfg: configOf(opts)}
	if src == nil {
		return nil, errors.New("signalbox: source: must not be nil")
	}
	if err := errors.Join(p.cfg.validate(), checkRead(src, p.cfg.inputs)); err != nil {
		return nil, fmt.Errorf("signalbox: invalid pipeline: %w", err)
	}
	for _, in := range p.cfg.inputs {
		d, err := compileInput(in)
		if err != nil {
			return nil, err
		}
		p.schemad = p.schemad || d.Schemad()
		if in.TopicPattern != "" {
			re, _ := topicpattern.Compile(in.TopicPattern) // checked by compileInput
			p.decoders.AddPattern(re, d)
			continue
		}
		p.decoders.Add(in.Topic, d)
	}
	p.schemad = p.schemad && (!bytesOnly(p.cfg.sinkInfo) || p.cfg.process != nil || p.cfg.routed()) // a Process and a Where read the JSON
	p.markJSON = p.cfg.transform == nil && embedsValueJSON(p.cfg.sinkInfo)
	if p.cfg.process == nil || p.cfg.filter != nil || p.cfg.transform != nil {
		p.cfg.early = nil // a Filter or Transform runs after prepare: the Process reads what they leave
	}
	p.splits = p.cfg.metaFilter == nil && runtime.GOMAXPROCS(0) > 1 // a meta filter never runs beside itself
	p.setRenderIngest()
	if p.cfg.strategy == nil {
		delay := p.cfg.delay
		p.cfg.strategy = func() strategy.Strategy { return strategy.OffsetGate(delay) }
	}
	if p.cfg.store == nil {
		p.cfg.store = engine.NewMemStore()
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
	s.ExpressionFailed = maps.Clone(p.stats.ExpressionFailed)
	s.SinksOpen = p.sinksOpen.Load()
	s.TableLookupsBeyond = p.cfg.tableBeyond()
	return s
}

// Run runs the pipeline until ctx is done (live mode), until every
// partition reaches its start-up end offset (UntilEndOffsets), or until the
// watermark reaches an event time (UntilTime).
//
// Lifecycle: Run opens the sinks, restores a checkpoint from the first
// CheckpointSink, opens the source, and then parks and releases. When ctx
// is done, cancelled or past its deadline alike, it stops polling, flushes
// what was released, takes a last checkpoint, commits, and closes source
// and sinks: parked records stay uncommitted and are re-read on restart,
// and a restart re-emits nothing that was flushed. After that clean stop
// Run returns nil for a cancellation, the caller's own request, and an
// error wrapping ErrDeadline and context.DeadlineExceeded for a deadline,
// which cut the run short of its end. Any other error is fatal and
// returned after the same clean-up (without the last checkpoint). Run may
// be called once.
func (p *Pipeline) Run(ctx context.Context) (err error) {
	r := newRun(ctx, p)
	closeAll, err := r.open(ctx)
	defer func() { err = closeAll(err) }()
	if err != nil {
		if stopped(ctx, err) {
			return stopResult(ctx)
		}
		return err
	}
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
	stop := stopped(ctx, err)
	if err = r.shutdown(sinkDone, r.finish(ctx, err)); err == nil && stop {
		err = stopResult(ctx)
	}
	return err
}

// shutdown ends the sink goroutine once it has written every out batch,
// reporting its acknowledgements meanwhile, and returns err, or the sink
// goroutine's error if err is nil.
func (r *run) shutdown(sinkDone <-chan struct{}, err error) error {
	for _, e := range r.eng.Ready().Events { // a failed step's, not applied
		r.notify(event(e))
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

// open opens the sinks, restores the checkpoints and opens the source, as
// Run documents. closeAll closes what open opened (the source, then the
// sinks) and returns err, or the first error closing them; it is to be
// called whatever open returned. A stop during start-up is a clean stop:
// nothing was read, nothing is to commit (stopped).
func (r *run) open(ctx context.Context) (closeAll func(err error) error, err error) {
	p, cfg := r.p, r.cfg
	sinks := cfg.sinks
	if cfg.deadLetter != nil {
		sinks = append(sinks[:len(sinks):len(sinks)], cfg.deadLetter)
	}
	opened, srcOpen := 0, false
	closeAll = func(err error) error {
		if srcOpen {
			if cerr := p.src.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("signalbox: closing source: %w", cerr)
			}
		}
		p.sinksOpen.Store(false)
		for _, s := range sinks[:opened] {
			if cerr := s.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("signalbox: closing sink: %w", cerr)
			}
		}
		return err
	}
	for _, s := range sinks {
		if err := s.Open(ctx); err != nil {
			return closeAll, fmt.Errorf("signalbox: opening sink: %w", err)
		}
		opened++
	}
	p.sinksOpen.Store(true)
	if err := r.restore(ctx); err != nil {
		return closeAll, err
	}
	if err := p.src.Open(ctx); err != nil {
		return closeAll, fmt.Errorf("signalbox: opening source: %w", err)
	}
	srcOpen = true
	return closeAll, nil
}
