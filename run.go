package signalbox

// The state of one Run, which only the engine goroutine touches, and the
// out batches it hands to the sink goroutine.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

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
	// routes has a bit per routed sink for each of records, under
	// WithRoutedSink (process.go).
	routes []uint64
}

// run is one Run: the driver around its core, touched by the engine
// goroutine only (the sink goroutine uses outs, spare, errs, acks and
// sinkDead; the poller errs and the holds' fields).
type run struct {
	core
	outs chan *out
	// spare returns record batches of more than smallBatch records'
	// capacity from the sink goroutine once every sink has written them,
	// cleared, for the engine to fill again; each tick the engine drops
	// those that waited unused (trimSpares).
	spare    chan []record.Record
	errs     chan error
	acks     chan Event // checkpoint acknowledgements from the sink goroutine
	sinkDone chan struct{}
	// stepped writes the out batches on the engine's goroutine when a
	// driver steps the core without a sink goroutine (send).
	stepped *writer
	// storeSizeAt is when publish last asked the store for its disk usage.
	storeSizeAt time.Time
	sinkDead    atomic.Int64 // records the sinks rejected, dead-lettered by the sink goroutine (writer.go)
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
	// recycler takes back the source's record arrays (recycle.go); nil
	// when the source is no Recycler or the store is one whose use of a
	// parked record is not known.
	recycler Recycler
	// spareLow is the fewest spare batches that waited whenever the engine
	// took one since spareWindow, the wall time the window began
	// (trimSpares).
	spareLow    int
	spareWindow time.Time
	// heldMu guards heldSnap, the partitions the poller holds for their
	// ValueDecoder (hold.go), for publish.
	heldMu   sync.Mutex
	heldSnap []SchemaHold
}

// newRun returns the state of one Run of p, with its sinks instrumented.
func newRun(ctx context.Context, p *Pipeline) *run {
	cfg := &p.cfg
	r := &run{
		core: core{
			p: p, cfg: cfg, ctx: ctx,
			parts:      map[record.TopicPartition]*partState{},
			catch:      catchup.New(catchup.Options{StaleAfter: cfg.staleAfter}),
			tasks:      map[int32]*task{},
			store:      cfg.store,
			wm:         watermark.MinTime,
			cpWM:       watermark.MinTime,
			started:    cfg.clock(),
			restored:   map[record.TopicPartition]record.PartitionCheckpoint{},
			fenced:     map[record.TopicPartition]bool{},
			lateCounts: map[record.TopicPartition]*LateCounter{},
			cur:        &out{},
		},
		outs:        make(chan *out, cfg.maxInflight),
		spare:       make(chan []record.Record, cfg.maxInflight+1),
		spareLow:    math.MaxInt,
		spareWindow: time.Now(), // wall time, as trimSpares
		errs:        make(chan error, 2),
		acks:        make(chan Event, cfg.maxInflight+2),
	}
	r.batch = r.batchFor
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
	switch s := cfg.store.(type) {
	case *memStore:
		r.recycler, _ = p.src.(Recycler)
		r.parkRefs = true
	case ParkCopier:
		if s.ParkCopies() {
			r.recycler, _ = p.src.(Recycler)
		}
	}
	r.canPause, r.tellsHandled = r.pauser != nil, r.handledTo != nil
	r.demands, r.recycles = r.demander != nil, r.recycler != nil
	return r
}

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
