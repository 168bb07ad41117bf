package signalbox

// The state of one Run, which only the engine goroutine touches, and the
// out batches it hands to the sink goroutine.

import (
	"context"
	"errors"
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
	fx     effects   // what the core asked for since the driver last applied it
	now    time.Time // the time of the core's current step
	rel    releasing // the release under way
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
	// stepped writes the out batches on the engine's goroutine when a
	// driver steps the core without a sink goroutine (send).
	stepped *writer
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
