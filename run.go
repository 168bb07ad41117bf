package signalbox

// The driver's state of one Run, which only the engine goroutine touches,
// and the engine it drives (internal/engine), built from the options.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
)

// out is one out batch on its way to the sink goroutine: the engine's,
// with what the sink goroutine reports of it.
type out struct {
	*engine.Out
	// ack, for a barrier's batch, is closed once the sinks acknowledged
	// it; fenced is set before (the partitions the checkpoint sink
	// refused).
	ack    chan struct{}
	fenced []record.TopicPartition
}

// run is one Run: the driver around its engine, touched by the engine
// goroutine only (the sink goroutine uses outs, spare, errs, acks and
// sinkDead; the poller errs and the holds' fields).
type run struct {
	p   *Pipeline
	cfg *config
	eng *engine.Engine
	// ecfg is the engine's configuration (engineConfig).
	ecfg engine.Config
	outs chan *out
	// spare returns record batches of more than engine.SmallBatch records'
	// capacity from the sink goroutine once every sink has written them,
	// cleared; the driver gives them to the engine (engine.Engine.Spare).
	spare    chan []record.Record
	errs     chan error
	acks     chan Event // checkpoint acknowledgements from the sink goroutine
	sinkDone chan struct{}
	// stepped writes the out batches on the engine's goroutine when a
	// driver steps the engine without a sink goroutine (send).
	stepped *writer
	// storeSizeAt is when publish last asked the store for its disk usage;
	// storeBytes is its answer.
	storeSizeAt time.Time
	storeBytes  int64
	// spareWindow is the wall time the engine's spare window began
	// (engine.Engine.TrimSpares).
	spareWindow time.Time
	sinkDead    atomic.Int64 // records the sinks rejected, dead-lettered by the sink goroutine (writer.go)
	durable     DurableStore
	// The source's Pauser, if it has one; holdPauser is the schema holds'
	// (hold.go): both go through one pauseGate.
	pauser     Pauser
	holdPauser Pauser
	handledTo  HandledNotifier
	// grouper is the source's GroupReader, nil when it is none; noGroup is
	// true when it reads without a group: its commits store nothing, and
	// none is made or counted.
	grouper  GroupReader
	noGroup  bool
	demander EvidenceDemander
	// recycler takes back the source's record arrays; nil when the source
	// is no Recycler or the store is one whose use of a parked record is
	// not known.
	recycler Recycler
	// heldMu guards heldSnap, the partitions the poller holds for their
	// ValueDecoder (hold.go), for publish.
	heldMu   sync.Mutex
	heldSnap []SchemaHold
	// barrierOut is the out batch of the barrier last asked for, once it
	// is handed over, until apply waits for it.
	barrierOut *out
	// trace, when set (a test's Stepper), sees each engine.Effects before
	// apply does them.
	trace func(*engine.Effects)
}

// newRun returns the state of one Run of p, with its sinks instrumented.
func newRun(ctx context.Context, p *Pipeline) *run {
	cfg := &p.cfg
	r := &run{
		p: p, cfg: cfg,
		outs:        make(chan *out, cfg.maxInflight),
		spare:       make(chan []record.Record, cfg.maxInflight+1),
		spareWindow: time.Now(), // wall time, as TrimSpares
		errs:        make(chan error, 2),
		acks:        make(chan Event, cfg.maxInflight+2),
	}
	r.durable, _ = cfg.store.(DurableStore)
	cfg.sinks, cfg.deadLetter, p.meters = instrument(cfg, &p.live)
	gate := newPauseGate(p.src)
	r.pauser, r.holdPauser = gate.pauserFor(pausedByEngine), gate.pauserFor(pausedByHold)
	r.demander, _ = p.src.(EvidenceDemander)
	if r.grouper, _ = p.src.(GroupReader); r.grouper != nil {
		name, _ := r.grouper.Group()
		r.noGroup = name == ""
	}
	if r.handledTo, _ = p.src.(HandledNotifier); r.handledTo != nil {
		r.handledTo.Handled() // before the first Poll: the source holds partitions back from here on
	}
	parkRefs := false
	switch s := cfg.store.(type) {
	case *engine.MemStore:
		r.recycler, _ = p.src.(Recycler)
		parkRefs = true
	case ParkCopier:
		if s.ParkCopies() {
			r.recycler, _ = p.src.(Recycler)
		}
	}
	r.ecfg = r.engineConfig(ctx, parkRefs)
	r.eng = engine.New(&r.ecfg)
	return r
}

// engineConfig is the engine's configuration for this run.
func (r *run) engineConfig(ctx context.Context, parkRefs bool) engine.Config {
	cfg, p := r.cfg, r.p
	ec := engine.Config{
		Delay: cfg.delay, Late: latePolicies[cfg.late], MaxFuture: cfg.maxFuture,
		BatchSize: cfg.batchSize, BatchBytes: cfg.batchBytes, InflightBytes: cfg.inflightBytes, MaxSpares: cfg.maxInflight + 1,
		Align: cfg.align, ParkedLimit: cfg.parkedLimit,
		Tick: cfg.tick, FlushLinger: cfg.flushLinger, CheckpointEvery: cfg.checkpointEvery, StaleAfter: cfg.staleAfter,
		UntilEnd: cfg.until == UntilEndOffsets, StopSet: cfg.stopSet, StopAt: cfg.stopAt,
		Strategy: cfg.strategy,
		Store:    cfg.store, Durable: r.durable != nil, ParkRefs: parkRefs, Recycles: r.recycler != nil,
		DeadLetter: cfg.deadLetter != nil, CheckpointSink: cfg.checkpointSink() != nil, Observe: cfg.observer != nil,
		CanPause: r.pauser != nil, TellsHandled: r.handledTo != nil, Demands: r.demander != nil,
		InGroup: r.grouper != nil && !r.noGroup,
		Filter:  cfg.filter, Transform: cfg.transform, Process: cfg.process, RawRoute: cfg.rawRoute,
		Timeless: func(topic string) bool { return p.decoders.For(topic).Timeless() },
		Start:    cfg.clock(),
	}
	for _, w := range cfg.wheres {
		ec.Wheres = append(ec.Wheres, w)
	}
	for i := range cfg.windows {
		ec.Windows = append(ec.Windows, cfg.windows[i].engine())
	}
	if fork := cfg.processFork; fork != nil {
		ec.ProcessFork = func() func(*record.Record) (bool, error) { return fork() }
		ec.ProcessHint = cfg.processHint
	}
	switch {
	case cfg.spawn != nil:
		ec.Spawn = cfg.spawn
	case runtime.GOMAXPROCS(0) > 1:
		ec.Spawn = func(f func()) { go f() }
	}
	for _, t := range cfg.tables {
		ec.Tables = append(ec.Tables, engine.Table{Topic: t.Topic, Into: t.Into})
	}
	if p.schemad {
		ec.Render = func(topic string) func(*record.Record) (string, error) {
			dec := p.decoders.For(topic) // once per assigned partition, not per record
			if !dec.Schemad() {
				return nil
			}
			return func(rec *record.Record) (string, error) { return p.renderOut(ctx, dec, rec) }
		}
	}
	if cfg.logger != nil {
		ec.Log = cfg.logger.Sugar()
	}
	return ec
}

// latePolicies maps the late policies to the engine's.
var latePolicies = map[LatePolicy]engine.LatePolicy{LateEmit: engine.LateEmit, LateDeadLetter: engine.LateDeadLetter, LateDrop: engine.LateDrop}

// stopped reports whether err is ctx's end, its cancellation or its
// deadline: a stop, not a failure.
func stopped(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// stopResult is what Run returns after a clean stop by ctx: nil for a
// cancellation, ErrDeadline (with context.DeadlineExceeded) for its
// deadline.
func stopResult(ctx context.Context) error {
	if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	return nil
}

// engine is the window as the engine takes it.
func (d *windowDef) engine() engine.Window {
	w := engineWindow(d.Window)
	w.Bits, w.Store, w.TaskStore = d.bits(), d.Store, d.TaskStore
	if fork := d.Fork; fork != nil {
		w.Fork = func() engine.Window { return engineWindow(fork()) }
	}
	return w
}

// engineWindow is w's spec, inputs and functions as the engine takes them.
func engineWindow(w Window) engine.Window {
	args := make([]func(*record.Record) ([]byte, error), len(w.Args))
	copy(args, w.Args)
	return engine.Window{Spec: w.Spec, Inputs: w.Inputs, Where: w.Where, Key: w.Key, Args: args}
}
