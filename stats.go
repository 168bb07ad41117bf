package signalbox

// What a run reports: Stats and Event, and publishing the snapshot
// (engine counters, sinks' meters, delivery).

import (
	"slices"
	"sort"
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// EventKind names what an Event reports.
type EventKind uint8

// The event kinds.
const (
	EventAssigned     EventKind = iota + 1 // a partition was assigned
	EventRevoked                           // a partition was revoked
	EventPhase                             // a partition changed catch-up phase
	EventLate                              // a late record arrived
	EventDead                              // a record went to the dead-letter sink
	EventCheckpoint                        // a checkpoint was flushed and committed
	EventReplayDone                        // every partition reached its start-up end offset
	EventOffsetsReset                      // a restart found a checkpoint and skips emitted records
	EventFenced                            // the checkpoint sink refused a partition's checkpoint: another member owns it
)

// Event is something the engine reports to an observer.
type Event struct {
	Kind      EventKind
	Partition record.TopicPartition
	From, To  catchup.Phase
	Watermark int64
	Offset    int64
	LateBy    int64  // ms, for EventLate
	Reason    string // for EventDead
}

// LateBuckets are the upper bounds, in ms, of the lateness histogram; the
// last bucket counts everything above the last bound.
var LateBuckets = []int64{1, 10, 100, 1_000, 10_000, 60_000, 600_000, 3_600_000}

// LateCounter counts the late records of one partition.
type LateCounter struct {
	Count        int64
	Emitted      int64
	DeadLettered int64
	Dropped      int64
	MaxLateBy    int64   // ms
	Histogram    []int64 // len(LateBuckets)+1 counts
	SumLateBy    int64   // ms, the sum of every late record's lateness
}

// Stats is a snapshot of a pipeline's counters.
type Stats struct {
	In        int64 // records received from the source
	Filtered  int64 // skipped by a filter
	Parked    int   // records parked now
	ParkedB   int64 // accounted bytes parked now
	Out       int64 // records released to the sinks
	Timeless  int64 // records of time:none inputs passed straight through
	Dead      int64 // records sent to the dead-letter sink
	Skipped   int64 // records skipped on restart because they were already emitted
	Late      map[record.TopicPartition]LateCounter
	Watermark int64
	// Holders lists the partitions holding the watermark, lowest first.
	Holders []watermark.Hold
	// Progress is the replay progress per input.
	Progress []catchup.Progress
	// Partitions is the catch-up state of every partition.
	Partitions []catchup.Status
	// ReplayDone is true once every partition reached its start-up end offset.
	ReplayDone bool
	// ReplayTime is how long the replay took (zero until ReplayDone).
	ReplayTime time.Duration
	// Checkpoints counts flushed checkpoints.
	Checkpoints int64
	// Paused lists the partitions paused by alignment or the memory bound.
	Paused []record.TopicPartition
	// Future counts records whose event time was too far ahead of the
	// evidence clock (WithMaxFuture): dead-lettered, never parked.
	Future int64
	// SchemaHolds lists the partitions held because their next record's
	// ValueDecoder could not answer (a schema registry down), by topic and
	// partition; each holds the watermark until it decodes.
	SchemaHolds []SchemaHold

	// What an operator graphs and alerts on (package metrics).

	// Published is when this snapshot was taken, on the pipeline's clock;
	// zero before Run starts its loop. It advances about every tick while
	// the engine loop turns, also while the sinks apply backpressure.
	Published time.Time
	// SinksOpen is true from the moment every sink is open until Run
	// starts closing them.
	SinksOpen bool
	// Tasks is the watermark of every co-partitioned task, by partition
	// number; Watermark is the lowest of them.
	Tasks []TaskWatermark
	// Rebalances counts the fetches that assigned or revoked partitions
	// (the first assignment and discovered partitions included).
	Rebalances int64
	// Group is the consumer group the source reads as a member of
	// (GroupReader), "" when it reads without one: then nothing is
	// committed (Delivery stays empty). Member is this member's current
	// session in the group: nil before it first joined and between two
	// sessions; a member that joined may own no partition (more members
	// than tasks).
	Group  string
	Member *record.GroupMember
	// Spilled is the number of parked records held only on disk, and
	// StoreBytes the disk space of the durable store; both 0 without one.
	Spilled    int
	StoreBytes int64
	// Delivery is what the checkpoints achieved.
	Delivery Delivery
	// Sinks is each sink's activity, in the order of the job's sinks, the
	// dead-letter sink last. A sink added with WithRoutedSink counts in
	// Records the records routed to it.
	Sinks []SinkStats
	// ExpressionFailed counts the records dead-lettered because a Process
	// or Where failed, by the name of the failing expression
	// (ExpressionError); nil when none failed.
	ExpressionFailed map[string]int64
	// Windows is each window's activity (WithWindow), in the order added.
	Windows []WindowStats
	// Tables (WithTables).
	TableVersions      int64            // tables' records applied to their table (WithTables): never output
	TableLookupsBeyond map[string]int64 // by table: lookups older than its history (TableStore.Beyond)
}

// TaskWatermark is the watermark of one co-partitioned task.
type TaskWatermark struct {
	Task      int32 // the partition number shared by the task's partitions
	Watermark int64 // ms; watermark.MinTime before any evidence
}

// Delivery counts checkpoints and offset commits.
type Delivery struct {
	// CheckpointSeconds is the duration of each checkpoint, from the
	// moment it is taken until its offsets are committed.
	CheckpointSeconds Histogram
	// Commits counts successful offset commits (by the source, or in the
	// checkpoint sink's transaction); CommitFailures the failed ones.
	Commits        int64
	CommitFailures int64
	// CommitsSkipped counts commits skipped, in whole or in part, because
	// this member did not own the partitions any more (a rebalance moved
	// them, or the checkpoint sink fenced their checkpoint): a commit that
	// went through for the other partitions counts in Commits too.
	CommitsSkipped int64
	// Committed is the last committed offset of every partition, sorted by
	// topic and partition.
	Committed []CommittedOffset
}

// CommittedOffset is the last offset committed for one partition: the next
// offset a restarted consumer reads.
type CommittedOffset struct {
	record.TopicPartition
	Offset int64
}

// SinkStats is what one sink did, measured around its calls by the engine.
type SinkStats struct {
	// Name is the sink's name (SinkInfo.Name: "jsonl", "postgres", …, else "sink"),
	// with "#2", "#3" … for repeats, or "dead_letter".
	Name    string
	Records int64 // records written
	// Errors counts failed calls; Retries the failed calls whose error was
	// retryable (each is retried with backoff, consumption paused) plus the
	// retries a sink makes inside a call and reports (RetryReporter).
	Errors, Retries int64
	// Rejected counts the records the sink refused as bad data
	// (retry.RejectedError): they go to the dead-letter sink.
	Rejected int64
	// WriteSeconds and FlushSeconds are the latency of Write and of Flush
	// (FlushCheckpoint for the checkpoint sink); BatchRecords the records
	// per Write.
	WriteSeconds, FlushSeconds, BatchRecords Histogram
	// The ordering audit, at the sink boundary. OutOfOrder counts records
	// written with an event time below an earlier record of the same task;
	// it stays 0 unless late records are emitted (late: emit).
	// ReleaseSeconds is the release latency beyond the delay bound (the
	// clock, WithClock, after Write − event time − delay) of every record
	// released in order whose event time is after the end of the replay:
	// history is not live latency. Neither applies to the dead-letter sink
	// or to timeless records.
	OutOfOrder     int64
	ReleaseSeconds Histogram
}

// Histogram counts observations into buckets with fixed upper bounds.
type Histogram struct {
	Bounds []float64 // upper bounds, ascending; shared, never modified
	Counts []uint64  // per bucket, len(Bounds)+1: the last is above every bound
	Count  uint64
	Sum    float64
}

func newHistogram(bounds []float64) Histogram {
	return Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
}

// Observe adds one observation.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.Bounds, v) // the first bound ≥ v
	h.Counts[i]++
	h.Count++
	h.Sum += v
}

// clone returns a copy that shares nothing mutable with h.
func (h Histogram) clone() Histogram {
	h.Counts = slices.Clone(h.Counts)
	return h
}

// LateTotal sums the late counters.
func (s Stats) LateTotal() LateCounter {
	var t LateCounter
	for _, l := range s.Late {
		t.Count += l.Count
		t.Emitted += l.Emitted
		t.DeadLettered += l.DeadLettered
		t.Dropped += l.Dropped
		t.MaxLateBy = max(t.MaxLateBy, l.MaxLateBy)
	}
	return t
}

// event is the engine's event e as an Event (the kinds share their values:
// TestEventKindsMatchEngine).
func event(e engine.Event) Event {
	return Event{Kind: EventKind(e.Kind), Partition: e.Partition, From: e.From, To: e.To,
		Watermark: e.Watermark, Offset: e.Offset, LateBy: e.LateBy, Reason: e.Reason}
}

// notify reports e to the observer (WithObserver), from the engine
// goroutine: the engine's events (apply) and the sink goroutine's
// acknowledgements, of which EventFenced is the engine's input too.
func (r *run) notify(e Event) {
	if e.Kind == EventFenced {
		r.eng.Fenced(e.Partition) // what this instance emitted of it was not stored
	}
	if r.cfg.observer != nil {
		r.cfg.observer(e)
	}
}

// publish makes the Stats snapshot that Pipeline.Stats returns.
func (r *run) publish() {
	es := r.eng.Snapshot()
	c := es.Counters
	s := Stats{
		In: c.In, Filtered: c.Filtered, Out: c.Out, Timeless: c.Timeless, Dead: c.Dead + r.sinkDead.Load(),
		Skipped: c.Skipped, Future: c.Future, Rebalances: c.Rebalances, TableVersions: c.TableVersions,
		ExpressionFailed: c.ExpressionFailed, ReplayDone: c.ReplayDone, ReplayTime: c.ReplayTime,
		Watermark: es.Watermark, Parked: es.Parked, ParkedB: es.ParkedB, Holders: es.Holders, Paused: es.Paused,
		Progress: es.Progress, Partitions: es.Partitions,
	}
	r.heldMu.Lock()
	s.SchemaHolds = r.heldSnap
	r.heldMu.Unlock()
	s.Late = make(map[record.TopicPartition]LateCounter, len(es.Late))
	for tp, l := range es.Late {
		s.Late[tp] = LateCounter(l)
	}
	s.Tasks = make([]TaskWatermark, len(es.Tasks))
	for i, t := range es.Tasks {
		s.Tasks[i] = TaskWatermark(t)
	}
	for _, w := range es.Windows {
		s.Windows = append(s.Windows, WindowStats(w))
	}
	r.publishOps(&s)
	r.p.mu.Lock()
	checkpoints, delivery := r.p.stats.Checkpoints, r.p.stats.Delivery
	r.p.stats = s
	r.p.stats.Checkpoints, r.p.stats.Delivery = checkpoints, delivery
	r.p.mu.Unlock()
}

// storeSizeEvery is how often publish asks a durable store for its disk
// usage, which costs more than a counter.
const storeSizeEvery = time.Second

// publishOps fills the operational fields of a snapshot the engine
// publishes. It runs on the engine goroutine, once per publish.
func (r *run) publishOps(s *Stats) {
	s.Published = r.cfg.clock()
	if r.grouper != nil {
		s.Group, s.Member = r.grouper.Group()
	}
	if sp, ok := r.cfg.store.(interface{ SpilledLen() int }); ok {
		s.Spilled = sp.SpilledLen()
	}
	// Wall time: a rate limit on a costly call, not a processing-time decision.
	if ds, ok := r.cfg.store.(interface{ DiskBytes() int64 }); ok && time.Since(r.storeSizeAt) >= storeSizeEvery {
		r.storeSizeAt = time.Now() // wall time, as above
		r.storeBytes = ds.DiskBytes()
	}
	s.StoreBytes = r.storeBytes
	s.Sinks = make([]SinkStats, len(r.p.meters))
	for i, m := range r.p.meters {
		s.Sinks[i] = m.snapshot()
	}
}

// countCheckpoint counts a committed checkpoint taken at start.
func (r *run) countCheckpoint(start time.Time) {
	d := r.cfg.clock().Sub(start).Seconds()
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.stats.Checkpoints++
	h := &r.p.stats.Delivery.CheckpointSeconds
	if h.Counts == nil {
		*h = newHistogram(LatencyBuckets)
	} else {
		*h = h.clone() // snapshots handed out share the old counts
	}
	h.Observe(d)
}

// countCommitSkipped counts an offset commit skipped, in whole or in part,
// because this member does not own the partitions now.
func (r *run) countCommitSkipped() {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.stats.Delivery.CommitsSkipped++
}

// countCommit counts an offset commit of offs and its outcome.
func (r *run) countCommit(offs map[record.TopicPartition]int64, err error) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	dl := &r.p.stats.Delivery
	if err != nil {
		dl.CommitFailures++
		return
	}
	dl.Commits++
	// A new slice each time: snapshots handed out keep the old one.
	next := make([]CommittedOffset, 0, max(len(dl.Committed), len(offs)))
	for _, c := range dl.Committed {
		if _, ok := offs[c.TopicPartition]; !ok {
			next = append(next, c)
		}
	}
	for tp, o := range offs {
		next = append(next, CommittedOffset{TopicPartition: tp, Offset: o})
	}
	slices.SortFunc(next, func(a, b CommittedOffset) int { return a.TopicPartition.Compare(b.TopicPartition) })
	dl.Committed = next
}
