package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/signalbox/signalbox/internal/kbatch"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// partState is one partition as its fetcher sees it. Only the fetcher's
// goroutine touches it.
type partState struct {
	tp       record.TopicPartition
	pos      int64 // next offset to fetch (invariant 2)
	maxBytes int32
	backoff  time.Duration
	retryAt  time.Time
	// What was last reported, so that responses with no news (no records,
	// same position and end) are not reported again.
	lastEnd int64
	failed  bool
	// certAt is when the partition's state was last certified: the time a
	// fetch answer for it was received, or the time a ListOffsets for it
	// was sent while it was paused.
	certAt time.Time
}

// fetcher fetches a fixed set of partitions in a loop, one request per
// current leader, and sends what it got to out.
type fetcher struct {
	// delivered is when the last answer Poll handed over was received; Poll
	// reads and writes it (one goroutine), and it starts at the fetcher's
	// creation, right after the end-offset snapshot.
	delivered time.Time
	s         *Source
	parts     []*partState
	wake      chan struct{} // Resume pokes it
	lastEvi   time.Time     // last ListOffsets evidence for paused partitions
	lastAt    time.Time     // the last certification handed to Poll
	dropMu    sync.Mutex
	drops     []dropReq // partitions to stop fetching (deleted topics)
	// dec decodes the answers' record batches (fetcher goroutine only).
	dec kbatch.Decoder
	// hasPaused: some of the partitions are paused, or held until their
	// records are handled (handledGate), so the fetch being
	// sent waits at most pausedWait (Source.fetchWait).
	hasPaused bool
	// idleSince is when the fetcher last found every partition it could
	// fetch at its end while others were paused or held (zero: not so);
	// noWait makes the fetch being sent answer at once (see idle).
	idleSince time.Time
	noWait    bool
}

// certified is the time up to which this fetcher certifies the state of its
// partitions (record.Fetch.At): the oldest certification of a partition
// that is not failing. A fetch answers as soon as the broker has data
// (MinBytes 1), so an answer received at T certifies its partitions up to
// T; a paused partition is certified by its last ListOffsets (or its last
// answer before the pause). Failing partitions are left out: they are
// Unknown and hold the watermark anyway.
func (f *fetcher) certified() time.Time {
	var at time.Time
	for _, p := range f.parts {
		if !p.failed && (at.IsZero() || p.certAt.Before(at)) {
			at = p.certAt
		}
	}
	return at
}

// dropReq asks a fetcher to stop fetching tps; left receives how many
// partitions it still fetches.
type dropReq struct {
	tps  []record.TopicPartition
	left chan int
}

// drop asks f to stop fetching tps before its next request. The answer is
// the number of partitions f still fetches; at 0 f has stopped.
func (f *fetcher) drop(tps []record.TopicPartition) <-chan int {
	ch := make(chan int, 1)
	f.dropMu.Lock()
	f.drops = append(f.drops, dropReq{tps, ch})
	f.dropMu.Unlock()
	f.poke()
	return ch
}

// applyDrops removes the partitions drop asked for; false when none is left.
func (f *fetcher) applyDrops() bool {
	f.dropMu.Lock()
	defer f.dropMu.Unlock()
	for _, d := range f.drops {
		f.parts = slices.DeleteFunc(f.parts, func(p *partState) bool { return slices.Contains(d.tps, p.tp) })
		d.left <- len(f.parts)
	}
	f.drops = nil
	return len(f.parts) > 0
}

// firstPartitionBytes is the byte limit of a partition's first fetch,
// before the fetcher has seen how many records a byte holds: one batch of
// Kafka's default batch.size (16 KiB) uncompressed, a few compressed.
// Every partition's first answer arrives at start-up, before the watermark
// can release anything, so this sizes the start-up peak of a replay's heap;
// small or well-compressed records (Avro) make a larger first answer hold
// thousands of records more per partition. A batch larger than the limit
// grows it to twice 64 KiB or more at once (parse), as it did from 64 KiB.
const firstPartitionBytes = 16 << 10

// partitionBytes sizes a partition's next fetch so that it carries about
// PartitionMaxRecords records: an answer of n records in b bytes (that
// stopped short of the end) shows b/n bytes per record, as the broker
// counts them (compressed). The result stays within [4 KiB,
// PartitionMaxBytes]. Highly compressible data therefore cannot hand one
// partition hundreds of thousands of records, and hours of event time, in
// one answer; whatever the compression, each partition advances by about
// the same number of records per round.
func (s *Source) partitionBytes(b int32, n int) int32 {
	want := int64(b) * int64(s.cfg.PartitionMaxRecords) / int64(n)
	return int32(min(max(want, 4<<10), int64(s.cfg.PartitionMaxBytes)))
}

func newFetcher(s *Source, infos []record.PartitionInfo) *fetcher {
	now := time.Now()
	f := &fetcher{s: s, wake: make(chan struct{}, 1), delivered: now}
	tps := make([]record.TopicPartition, len(infos))
	for i, in := range infos {
		tps[i] = in.TopicPartition
	}
	s.handled.forget(tps) // assigned afresh: nothing of them is on its way
	for _, in := range infos {
		f.parts = append(f.parts, &partState{
			tp: in.TopicPartition, pos: in.Start, maxBytes: min(firstPartitionBytes, s.cfg.PartitionMaxBytes), lastEnd: in.End, certAt: now,
		})
	}
	return f
}

func (f *fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run fetches until ctx is done.
func (f *fetcher) run(ctx context.Context, out chan<- item) {
	for ctx.Err() == nil && f.applyDrops() {
		now := time.Now()
		var active, paused []*partState
		held := false
		wait := f.s.cfg.FetchMaxWait + time.Second
		for _, p := range f.parts {
			switch until, h := f.s.handled.holds(p.tp, now); {
			case f.s.isPaused(p.tp):
				paused = append(paused, p)
			case now.Before(p.retryAt):
				wait = min(wait, p.retryAt.Sub(now))
			case h:
				held = true
				wait = min(wait, until.Sub(now))
			default:
				active = append(active, p)
			}
		}
		var pfs []record.PartitionFetch
		if evi := f.s.cfg.EvidenceInterval; len(paused) > 0 && evi > 0 {
			if now.Sub(f.lastEvi) >= evi {
				f.lastEvi = now
				pfs = f.evidence(paused)
			}
			wait = min(wait, evi)
		}
		f.hasPaused = len(paused) > 0 || held
		if f.idle(active, now) {
			// Every partition it could fetch is at its end while others are
			// paused or held: a fetch now would sit at the broker for its
			// wait, and a partition resumed or handled meanwhile could not
			// join it. Wait here instead, where Resume and Handled wake the
			// fetcher, and refresh the evidence every pausedWait.
			wait = min(wait, f.idleSince.Add(pausedWait).Sub(now))
			active = nil
		}
		if len(active) > 0 {
			pfs = append(pfs, f.fetch(ctx, active)...)
			f.noWait = false
		}
		at := f.certified()
		if len(pfs) > 0 || at.After(f.lastAt) {
			f.lastAt = at
			select {
			case out <- item{fetch: record.Fetch{Partitions: pfs}, from: f, at: at}:
			case <-ctx.Done():
				return
			}
		}
		if len(active) == 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-f.wake:
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// idle reports whether the fetch of active is to wait in the fetcher rather
// than at the broker: every partition of active is at its end (nothing to
// fetch but evidence) and some others are paused or held (f.hasPaused), so
// one of them may become fetchable at any moment. It waits up to
// pausedWait from f.idleSince; then the fetch goes out and answers at once
// (f.noWait), certifying its partitions, and the next wait starts. So the
// evidence of an idle fetcher's partitions is as fresh as a fetch that
// waited pausedWait at the broker would make it.
func (f *fetcher) idle(active []*partState, now time.Time) bool {
	atEnd := f.hasPaused && len(active) > 0
	for _, p := range active {
		if p.failed || p.pos < p.lastEnd {
			atEnd = false
			break
		}
	}
	switch {
	case !atEnd:
		f.idleSince = time.Time{}
		return false
	case f.idleSince.IsZero():
		f.idleSince = now
		return true
	case now.Sub(f.idleSince) < pausedWait:
		return true
	}
	f.idleSince, f.noWait = now, true
	return false
}

// evidence refreshes the end offsets of paused partitions by ListOffsets.
func (f *fetcher) evidence(paused []*partState) []record.PartitionFetch {
	tps := make([]record.TopicPartition, len(paused))
	for i, p := range paused {
		tps[i] = p.tp
	}
	sent := time.Now()
	ends, err := f.s.listOffsets(tps, listLatest)
	if err != nil {
		f.s.log.Debug("evidence refresh for paused partitions failed", zap.Error(err))
		return nil
	}
	var pfs []record.PartitionFetch
	for _, p := range paused {
		p.certAt = sent
		if end := ends[p.tp]; end != p.lastEnd || p.failed {
			p.lastEnd, p.failed = end, false
			pfs = append(pfs, record.PartitionFetch{TopicPartition: p.tp, Position: p.pos, End: end})
		}
	}
	return pfs
}

// fetch sends one fetch per current leader of active and parses the
// answers (rawfetch.go).
//
// Each request names the partitions in a random order (no partition is
// systematically last, KIP-74); each partition's byte limit is sized to
// about PartitionMaxRecords records (partitionBytes), so one answer cannot
// hand one partition much more than the others.
func (f *fetcher) fetch(ctx context.Context, active []*partState) []record.PartitionFetch {
	var pfs []record.PartitionFetch
	byLeader := make(map[int32][]*partState, 1)
	var order []int32
	for _, p := range active {
		id, err := f.s.leader(p.tp)
		if err != nil {
			pfs = append(pfs, f.failed(p, err))
			continue
		}
		if _, ok := byLeader[id]; !ok {
			order = append(order, id)
		}
		byLeader[id] = append(byLeader[id], p)
	}
	for _, id := range order {
		group := byLeader[id]
		blocks, err := f.fetchFrom(ctx, id, group)
		answered := time.Now()
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return pfs // stopping: the fetch was canceled
		}
		if err != nil {
			f.s.log.Warn("fetch failed", zap.Int32("broker", id), zap.Error(err))
			f.s.refreshMetadata()
			for _, p := range group {
				pfs = append(pfs, f.failed(p, err))
			}
			continue
		}
		for _, p := range group {
			if pf, ok := f.parse(p, blocks[p.tp], answered); ok {
				pfs = append(pfs, pf)
			}
		}
	}
	return pfs
}

// failed backs p off and reports err with no evidence (invariant 3).
func (f *fetcher) failed(p *partState, err error) record.PartitionFetch {
	base := f.s.cfg.RetryBackoff
	p.backoff = min(max(2*p.backoff, base), 20*base)
	p.retryAt = time.Now().Add(p.backoff)
	if !p.failed {
		f.s.log.Warn("fetch of partition failed; it has no fresh evidence until a fetch succeeds",
			zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition), zap.Error(err))
	}
	p.failed = true
	return record.PartitionFetch{TopicPartition: p.tp, Position: p.pos, End: -1, Err: err}
}

// parse turns one response block into a PartitionFetch, advancing p.pos.
// ok is false when there is nothing to report.
func (f *fetcher) parse(p *partState, blk *fetchBlock, answered time.Time) (record.PartitionFetch, bool) {
	if blk == nil || f.s.isPaused(p.tp) {
		// No answer for this partition (no evidence), or paused while the
		// fetch was in flight: drop it, the position does not move.
		return record.PartitionFetch{}, false
	}
	switch {
	case blk.err == nil:
	case errors.Is(blk.err, kerr.OffsetOutOfRange):
		return f.outOfRange(p)
	case errors.Is(blk.err, kerr.NotLeaderForPartition), errors.Is(blk.err, kerr.LeaderNotAvailable),
		errors.Is(blk.err, kerr.UnknownTopicOrPartition), errors.Is(blk.err, kerr.FencedLeaderEpoch),
		errors.Is(blk.err, kerr.UnknownLeaderEpoch):
		f.s.refreshMetadata()
		return f.failed(p, blk.err), true
	default:
		return f.failed(p, blk.err), true
	}
	// Valid until Release, once records has decoded them into the
	// answer's records; the fetcher's long-lived decoder must not keep the
	// response's bytes reachable after that.
	batches, partial, scanErr := f.dec.Scan(blk.raw)
	defer f.dec.Release()
	before := p.pos
	recs, err := f.records(p, blk, batches, scanErr)
	if err != nil {
		return f.failed(p, err), true
	}
	end := blk.hwm
	if f.s.cfg.readCommitted() && blk.lso >= 0 {
		end = blk.lso
	}
	if len(batches) > 0 && !partial && p.pos == before && p.pos < end {
		// Whole batches, all below the position, and nothing cut that a
		// larger limit would bring: the same fetch would answer the same
		// forever. Fail (and back off) rather than spin.
		_, err := f.dropRecords(recs, fmt.Errorf("kafka: the answer's batches end at offset %d, below the position %d: no progress",
			batches[len(batches)-1].LastOffset(), p.pos))
		return f.failed(p, err), true
	}
	p.backoff, p.retryAt, p.certAt = 0, time.Time{}, answered

	batch := min(largestBatch(blk.raw), max(f.s.cfg.FetchMaxBytes, p.maxBytes))
	switch {
	case p.pos == before && p.pos < end:
		// Nothing fitted although the log goes on: the next batch is
		// larger than we asked for (a broker cuts such a batch, or leaves
		// it out when the partition is not the answer's first). Ask for
		// more next time: the batch's length when the cut showed it.
		p.maxBytes = max(min(max(p.maxBytes, 1<<16)*2, max(f.s.cfg.FetchMaxBytes, p.maxBytes)), batch)
	case len(recs) > 0 && p.pos < end:
		// The answer stopped short of the end: size the next one from
		// the bytes per record this one showed, and never below its
		// largest batch, which a broker only ever answers whole. The
		// bytes are those answered, not those asked for: a small batch
		// whose successor did not fit is answered alone, and counted at
		// the limit it would make the next answer several big batches.
		got := int32(min(len(blk.raw), int(p.maxBytes)))
		p.maxBytes = max(f.s.partitionBytes(got, len(recs)), batch)
	}
	if len(recs) == 0 && p.pos == before && end == p.lastEnd && !p.failed {
		return record.PartitionFetch{}, false // no news
	}
	p.lastEnd, p.failed = end, false
	if len(recs) > 2*f.s.cfg.PartitionMaxRecords && p.pos < end {
		f.s.handled.delivering(p.tp, answered) // whole batches made it larger than asked for
	}
	return record.PartitionFetch{TopicPartition: p.tp, Records: recs, Position: p.pos, End: end}, true
}

// outOfRange handles a position outside the log: below the log start
// (retention, DeleteRecords) it continues from the log start; above the end
// it continues from the end. Either way it is logged.
func (f *fetcher) outOfRange(p *partState) (record.PartitionFetch, bool) {
	starts, err := f.s.listOffsets([]record.TopicPartition{p.tp}, listEarliest)
	if err != nil {
		return f.failed(p, err), true
	}
	next := starts[p.tp]
	if p.pos >= next {
		ends, err := f.s.listOffsets([]record.TopicPartition{p.tp}, listLatest)
		if err != nil {
			return f.failed(p, err), true
		}
		next = ends[p.tp]
	}
	f.s.log.Warn("position is outside the partition's log; continuing from the log's edge",
		zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition),
		zap.Int64("position", p.pos), zap.Int64("continue_from", next))
	p.pos = next
	return record.PartitionFetch{TopicPartition: p.tp, Position: p.pos, End: -1}, true
}
