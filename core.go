package signalbox

// The engine's step core: the state its steps change (doc.go: the step
// core). Its methods are the steps and what they call; they do no I/O, and
// what the outside world must do they write into fx (effects.go).

import (
	"context"
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
)

// core is the state of one run that the core's steps change. The driver
// (run) embeds it: it reads the state, feeds the steps their inputs and
// applies fx; the core cannot reach the driver's channels, the source or
// the sinks, which is what keeps its steps pure.
type core struct {
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
	// rereading is set while a re-read record goes to the windows only
	// (windowsReread): nothing it does is counted again.
	rereading bool
	cpWM      int64 // the restored checkpoint's watermark, when hasCP
	hasCP     bool
	wm        int64
	cur       *out
	route     uint64 // the routes of the record output is handling (process.go)
	// wins are the run's windows (window.go), made at the first record.
	wins     []*windowRun
	winItems []winItem
	winHold  windowHold // windowhold.go
	fx       effects    // what the core asked for since the driver last applied it
	now      time.Time  // the time of the current step
	rel      releasing  // the release under way
	// onRelease is releasedOne, as the store's callback.
	onRelease func(*record.Record) error
	// batch returns an empty record batch for the next out after one of n
	// records (the driver's batchFor, which reuses the sinks' spares).
	batch    func(n int) []record.Record
	stats    Stats
	started  time.Time
	replayed bool
	// evidence is the source's evidence clock (record.Fetch.At); stamped
	// is false for sources that keep none.
	evidence time.Time
	stamped  bool
	fetched  bool // at least one Fetch was handled
	// revokedAll: a Fetch revoked every partition this instance held; until
	// the next assignment the replay is not done (a rebalance is under way).
	revokedAll bool
	durable    DurableStore // the driver stores and restores it; the core only asks whether there is one
	// restored from a DurableStore: parked records per partition, until
	// the first assignment (design R10); late counters.
	floors map[record.TopicPartition]record.Parked
	// trimmedAt is the watermark each table was last trimmed at (table.go).
	trimmedAt []int64
	// late holds every partition's late counters, restored ones included;
	// they outlive a revoke, so a partition that comes back keeps counting.
	lateCounts map[record.TopicPartition]*LateCounter
	// What the source can be asked (effects): to pause (Pauser), to hear
	// which partitions were handled (HandledNotifier), to hurry evidence
	// (EvidenceDemander), to take record arrays back (Recycler).
	canPause, tellsHandled, demands, recycles bool
	// handledTPs are the partitions handled since the source was last told;
	// overLimit: the parked limit is exceeded (align.go).
	handledTPs []record.TopicPartition
	overLimit  bool
	// future is the poison guard's bound for the Fetch being handled: event
	// times above it do not move time (WithMaxFuture).
	future int64
	// demanded is the due time last asked for (demandEvidence).
	demanded time.Time
	// unflushed is when records were first handed to the sinks since their
	// last flush (zero: none); they are flushed WithFlushLinger after it.
	unflushed time.Time
	// parkRefs: the store refers to parked records (the in-memory queue)
	// rather than copying them (ParkCopier).
	parkRefs bool
	// restoringN is at least the number of partitions still re-reading
	// below their restored checkpoint's position (restoreHold recounts).
	restoringN int
	// ctx is Run's: the ValueDecoders' when records go to the sinks
	// (renderOut).
	ctx context.Context
	// untilReached: the watermark reached UntilTime's event time.
	untilReached bool
}
