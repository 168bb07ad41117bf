package signalbox_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signalbox/signalbox/record"
)

// scriptClock is a transcript's clock: it moves only by tick.
type scriptClock struct{ ms atomic.Int64 }

func (c *scriptClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// step is one step of a transcript's script: a Fetch (f), a clock tick
// (tick ms), or a later assignment (discover: info, its start taken at
// delivery unless startSet).
type step struct {
	line     string // where the transcript declares it
	f        record.Fetch
	tick     int64
	info     record.PartitionInfo
	startSet bool
}

func (s *step) discover() bool { return s.info.Topic != "" }

// of is the partition a fetch step reads, if it is one.
func (s *step) of() (record.TopicPartition, bool) {
	if len(s.f.Partitions) == 1 {
		return s.f.Partitions[0].TopicPartition, true
	}
	return record.TopicPartition{}, false
}

// transcriptSource delivers a transcript's steps one at a time, each
// polled once the engine's core has handled the one before (stepThrough).
// It holds back the fetches of paused partitions, records commits (commitLog), and
// logs what the engine asked of it.
type transcriptSource struct {
	clock *scriptClock
	live  bool
	stop  context.CancelFunc // ends a live run once the script is done

	commitLog // its mu guards all of the source's state
	steps     []step
	last      string // the step delivered last, for the log
	revoked   bool   // the last step delivered revoked: log the commits at the next Poll
	paused    map[record.TopicPartition]bool
	starts    map[record.TopicPartition]int64 // discovered or seeked partitions: nothing below is delivered
	startAt   map[record.TopicPartition]int64 // Seeker: the first assignment's starts
	events    []string
}

// groupSource is a transcriptSource that reads in a consumer group
// (GroupReader), as the Kafka source with a group does.
type groupSource struct{ *transcriptSource }

func (groupSource) Group() (string, *record.GroupMember) { return "transcript", nil }

// seekingSource is a transcriptSource that is a Seeker, as the Kafka
// source is: a job with a DurableStore needs one.
type seekingSource struct{ *transcriptSource }

// StartAt starts the partitions of the first assignment at offsets, with
// no checkpoint (the Kafka source's StartAt).
func (s *seekingSource) StartAt(offsets map[record.TopicPartition]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startAt = maps.Clone(offsets)
}

func (s *transcriptSource) Open(context.Context) error { return nil }
func (s *transcriptSource) Close() error               { return nil }

func (s *transcriptSource) Poll(ctx context.Context) (record.Fetch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revoked {
		s.revoked = false
		s.log("committed " + strings.Join(committedLines(s.committed, s.cps), " "))
	}
	if len(s.steps) == 0 {
		if s.live {
			s.stop()
		}
		s.mu.Unlock()
		<-ctx.Done()
		s.mu.Lock()
		return record.Fetch{}, ctx.Err()
	}
	i := slices.IndexFunc(s.steps, func(st step) bool {
		tp, ok := st.of()
		return !ok || !s.paused[tp]
	})
	if i < 0 {
		return record.Fetch{}, fmt.Errorf("every remaining fetch is of a paused partition (next: %s)", s.steps[0].line)
	}
	st := s.steps[i]
	s.steps = slices.Delete(s.steps, i, i+1)
	s.last = st.line
	switch {
	case st.tick > 0:
		s.clock.ms.Add(st.tick)
		return record.Fetch{}, nil
	case st.discover():
		return record.Fetch{Assigned: s.seek([]record.PartitionInfo{s.assignment(st)})}, nil
	case len(st.f.Revoked) > 0:
		s.revoked = true
		return st.f, nil
	case len(st.f.Assigned) > 0:
		f := st.f
		f.Assigned = s.seek(f.Assigned)
		return f, nil
	}
	f := st.f
	if tp, ok := st.of(); ok {
		if start, ok := s.starts[tp]; ok {
			pf := f.Partitions[0]
			pf.Records = slices.DeleteFunc(slices.Clone(pf.Records), func(r record.Record) bool { return r.Offset < start })
			f.Partitions = []record.PartitionFetch{pf}
		}
	}
	return f, nil
}

// assignment is a discovered partition's PartitionInfo: it starts at the
// committed offset, with the checkpoint committed with it, as a consumer
// group assigns it.
func (s *transcriptSource) assignment(st step) record.PartitionInfo {
	info := st.info
	if !st.startSet {
		info.Start = s.committed[info.TopicPartition]
	}
	if pc, ok := s.cps[info.TopicPartition]; ok && pc.Low == info.Start {
		info.Checkpoint = &pc
	}
	if s.starts == nil {
		s.starts = map[record.TopicPartition]int64{}
	}
	s.starts[info.TopicPartition] = info.Start
	s.log(fmt.Sprintf("start=%d", info.Start))
	return info
}

// seek starts the partitions of the first assignment where StartAt said,
// then forgets StartAt; s.mu is held.
func (s *transcriptSource) seek(assigned []record.PartitionInfo) []record.PartitionInfo {
	if s.startAt == nil {
		return assigned
	}
	assigned = slices.Clone(assigned)
	for i, a := range assigned {
		if o, ok := s.startAt[a.TopicPartition]; ok {
			assigned[i].Start, assigned[i].Checkpoint = o, nil
			if s.starts == nil {
				s.starts = map[record.TopicPartition]int64{}
			}
			s.starts[a.TopicPartition] = o
			s.log(fmt.Sprintf("%s/%d start=%d", a.Topic, a.Partition, o))
		}
	}
	s.startAt = nil
	return assigned
}

// log notes an event with the step it followed; s.mu is held.
func (s *transcriptSource) log(e string) {
	s.events = append(s.events, s.last+": "+e)
}

func (s *transcriptSource) Pause(tps ...record.TopicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused == nil {
		s.paused = map[record.TopicPartition]bool{}
	}
	for _, tp := range tps {
		s.paused[tp] = true
	}
	s.log(fmt.Sprintf("pause %v", tpNames(tps)))
}

func (s *transcriptSource) Resume(tps ...record.TopicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		delete(s.paused, tp)
	}
	s.log(fmt.Sprintf("resume %v", tpNames(tps)))
}

// commitLog records commits and the checkpoints committed with them
// (CheckpointCommitter), as a consumer group keeps them.
type commitLog struct {
	mu        sync.Mutex
	committed map[record.TopicPartition]int64
	cps       map[record.TopicPartition]record.PartitionCheckpoint
}

func newCommitLog() commitLog {
	return commitLog{committed: map[record.TopicPartition]int64{}, cps: map[record.TopicPartition]record.PartitionCheckpoint{}}
}

func (s *commitLog) Commit(_ context.Context, offsets map[record.TopicPartition]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, off := range offsets {
		s.committed[tp] = off
		delete(s.cps, tp) // a plain commit carries no checkpoint
	}
	return nil
}

func (s *commitLog) CommitCheckpoint(_ context.Context, cp record.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pc := range cp.Partitions {
		s.committed[pc.TopicPartition] = pc.Low
		s.cps[pc.TopicPartition] = pc
	}
	return nil
}

// committingTimeline is a timeline that records commits (commitLog).
type committingTimeline struct {
	timeline
	commitLog
}

func (s *committingTimeline) Commit(ctx context.Context, offsets map[record.TopicPartition]int64) error {
	return s.commitLog.Commit(ctx, offsets)
}

// tpNames prints partitions as topic/partition, sorted.
func tpNames(tps []record.TopicPartition) string {
	tps = slices.Clone(tps)
	slices.SortFunc(tps, record.TopicPartition.Compare)
	names := make([]string, len(tps))
	for i, tp := range tps {
		names[i] = fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)
	}
	return strings.Join(names, ",")
}
