package signalbox

import (
	"sort"
	"time"

	"github.com/signalbox/signalbox/catchup"
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
}

func (l *LateCounter) add(lateBy int64, p LatePolicy) {
	if l.Histogram == nil {
		l.Histogram = make([]int64, len(LateBuckets)+1)
	}
	l.Count++
	switch p {
	case LateEmit:
		l.Emitted++
	case LateDeadLetter:
		l.DeadLettered++
	case LateDrop:
		l.Dropped++
	}
	l.MaxLateBy = max(l.MaxLateBy, lateBy)
	i := sort.Search(len(LateBuckets), func(i int) bool { return lateBy <= LateBuckets[i] })
	l.Histogram[i]++
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
