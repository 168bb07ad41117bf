// Package script is a deterministic in-memory source for tests and examples.
// It delivers fixed partitions of records in fetches whose sizes and
// interleaving are drawn from a seed, so that a property test can replay the
// same records under many arrival orders.
//
// Invariants:
//
//  1. Each partition's records are delivered once, in offset order; the
//     positions reported are the next offset to fetch (after a record, or
//     after a gap the script declares, such as a transaction marker).
//  2. The first Fetch assigns every partition with End = the partition's
//     end offset, before any record is delivered.
//  3. Once everything is delivered, Poll reports fresh evidence (End =
//     position) for each partition every Idle, until ctx is done.
//  4. A paused partition (Pause, the root package's Pauser) delivers no
//     record until Resume; while nothing else can be delivered, Poll reports
//     fresh evidence (its position and End) for it every Idle, as a Kafka
//     source's ListOffsets would.
package script

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources"
)

// Partition is one scripted partition.
type Partition struct {
	record.TopicPartition
	// Records in offset order. Offsets may have gaps.
	Records []record.Record
	// End is the end offset; if 0 it is the last record's offset + 1. Set it
	// higher to model a trailing transaction marker.
	End int64
	// Start is the first position (default: the first record's offset, or End).
	Start int64
	// FailFirst makes the first n fetches of this partition fail.
	FailFirst int
	// Silent holds the partition's first delivery back for n polls.
	Silent int
}

// Source is a scripted source. Create it with New.
type Source struct {
	parts    []*state
	rng      *rand.Rand
	maxBatch int
	idle     time.Duration
	assigned bool

	mu     sync.Mutex // guards paused: Pause and Resume come from the engine goroutine
	paused map[record.TopicPartition]bool

	sources.Commits // Commit and Committed
}

// Pause stops delivering records of tps until Resume (invariant 4).
func (s *Source) Pause(tps ...record.TopicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused == nil {
		s.paused = make(map[record.TopicPartition]bool)
	}
	for _, tp := range tps {
		s.paused[tp] = true
	}
}

// Resume restarts delivering records of tps.
func (s *Source) Resume(tps ...record.TopicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		delete(s.paused, tp)
	}
}

func (s *Source) isPaused(tp record.TopicPartition) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused[tp]
}

type state struct {
	Partition
	next int // index of the next record
	pos  int64
	fail int
	wait int
}

// New returns a source over parts, interleaved by seed, with fetches of 1 to
// maxBatch records.
func New(seed uint64, maxBatch int, parts ...Partition) *Source {
	s := &Source{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), maxBatch: max(1, maxBatch), idle: time.Millisecond}
	for _, p := range parts {
		st := &state{Partition: p, fail: p.FailFirst, wait: p.Silent}
		if st.End == 0 && len(p.Records) > 0 {
			st.End = p.Records[len(p.Records)-1].Offset + 1
		}
		if st.Start == 0 {
			st.Start = st.End
			if len(p.Records) > 0 {
				st.Start = p.Records[0].Offset
			}
		}
		st.pos = st.Start
		s.parts = append(s.parts, st)
	}
	return s
}

// StartAt makes partitions start at the given offsets (the root package's
// Seeker). Call it before the first Poll.
func (s *Source) StartAt(offsets map[record.TopicPartition]int64) {
	for _, p := range s.parts {
		o, ok := offsets[p.TopicPartition]
		if !ok {
			continue
		}
		p.pos, p.Start, p.next = o, o, 0
		for p.next < len(p.Records) && p.Records[p.next].Offset < o {
			p.next++
		}
	}
}

// Open implements the Source contract.
func (s *Source) Open(context.Context) error { return nil }

// Poll implements the Source contract.
func (s *Source) Poll(ctx context.Context) (record.Fetch, error) {
	if err := ctx.Err(); err != nil {
		return record.Fetch{}, err
	}
	var f record.Fetch
	if !s.assigned {
		s.assigned = true
		for _, p := range s.parts {
			f.Assigned = append(f.Assigned, record.PartitionInfo{TopicPartition: p.TopicPartition, Start: p.Start, End: p.End})
		}
		return f, nil
	}
	var live []*state
	for _, p := range s.parts {
		if p.wait > 0 {
			p.wait--
			continue
		}
		if p.pos < p.End && !s.isPaused(p.TopicPartition) {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(s.idle):
		}
		for _, p := range s.parts {
			if p.wait == 0 {
				f.Partitions = append(f.Partitions, record.PartitionFetch{TopicPartition: p.TopicPartition, Position: p.pos, End: p.End})
			}
		}
		return f, nil
	}
	p := live[s.rng.IntN(len(live))]
	if p.fail > 0 {
		p.fail--
		f.Partitions = append(f.Partitions, record.PartitionFetch{TopicPartition: p.TopicPartition, End: -1, Err: errFetch})
		return f, nil
	}
	n := 1 + s.rng.IntN(s.maxBatch)
	hi := min(p.next+n, len(p.Records))
	recs := append([]record.Record(nil), p.Records[p.next:hi]...)
	p.next = hi
	if hi < len(p.Records) {
		p.pos = p.Records[hi].Offset
	} else {
		p.pos = p.End
	}
	f.Partitions = append(f.Partitions, record.PartitionFetch{TopicPartition: p.TopicPartition, Records: recs, Position: p.pos, End: p.End})
	return f, nil
}

type fetchError struct{}

func (fetchError) Error() string { return "scripted fetch failure" }

var errFetch error = fetchError{}

// Close implements the Source contract.
func (s *Source) Close() error { return nil }
