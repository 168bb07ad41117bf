package signalbox

import (
	"slices"
	"time"

	"github.com/signalbox/signalbox/record"
)

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
