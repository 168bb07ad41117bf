package signalbox

// Holding a partition whose records a ValueDecoder cannot decode yet (the
// schema registry is down): on the poller goroutine, the record and every
// later record of its partition wait, in offset order; a probe goroutine
// tries the held record again with backoff, and once it decodes the poller
// retries them all (from the decoder's cache). The engine sees the partition's position stop at the held
// record, so the partition holds the watermark as one that has not
// delivered: nothing is skipped, late or dead-lettered because of it.

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/internal/decode"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// SchemaHold is a partition held because its next record could not be
// decoded yet (Stats.SchemaHolds).
type SchemaHold struct {
	record.TopicPartition
	// Offset is the held record's: the partition's position stops there.
	Offset int64
	// Records is how many records of the partition wait.
	Records int
	// Since is when the hold began; Attempts counts the retries so far.
	Since    time.Time
	Attempts int
	// Err is the decoder's last error.
	Err string
}

// holdLogEvery bounds the "still held" log line to one per partition per
// interval.
const holdLogEvery = 30 * time.Second

// heldUnpausedLimit bounds the records held for a source that cannot
// pause (no Pauser): once the holds reach it the poller stops polling the
// source until they shrink, so a registry outage cannot grow them without
// bound. A source that pauses stops delivering a held partition instead.
const heldUnpausedLimit = 16384

// held is one held partition.
type held struct {
	recs     []record.Record // the held record first, then the later ones, in offset order
	position int64           // the source's position after the last of recs
	end      int64           // the newest end evidence (-1: none)
	since    time.Time
	attempts int
	next     time.Time // the next retry
	logged   time.Time
	err      error
	probing  bool // a probe is out (probe)
}

// holds is the poller's held partitions. Only the poller goroutine uses it;
// publish reads the snapshot the poller leaves in run.heldSnap.
type holds struct {
	r      *run
	parts  map[record.TopicPartition]*held
	policy retry.Policy
	shown  bool // the last snapshot listed a hold
}

func newHolds(r *run) *holds {
	return &holds{r: r, parts: map[record.TopicPartition]*held{}, policy: retry.Policy{Initial: 200 * time.Millisecond, Max: 5 * time.Second, MaxElapsed: -1}.EnsureDefaults()}
}

// forget drops the holds of partitions a Fetch revokes or (re)assigns, and
// lifts their pause: the source starts them again from the committed
// offsets, and a partition assigned again must not stay paused.
func (h *holds) forget(f *record.Fetch) {
	drop := func(tp record.TopicPartition) {
		if h.parts[tp] == nil {
			return
		}
		delete(h.parts, tp)
		if p := h.r.holdPauser; p != nil {
			p.Resume(tp)
		}
	}
	for _, tp := range f.Revoked {
		drop(tp)
	}
	for _, a := range f.Assigned {
		drop(a.TopicPartition)
	}
}

// absorb moves pf's records behind a held partition's, and makes pf report
// the held record's offset as its position. It reports false when pf's
// partition is not held.
func (h *holds) absorb(pf *record.PartitionFetch) bool {
	hp := h.parts[pf.TopicPartition]
	if hp == nil {
		return false
	}
	hp.recs = append(hp.recs, pf.Records...) // copied: the engine may recycle pf's array
	hp.position = max(hp.position, pf.Position)
	if pf.End >= 0 {
		hp.end = pf.End
	}
	pf.Records = pf.Records[:0]
	pf.Position = hp.recs[0].Offset
	return true
}

// start holds pf from its record j on, which could not be decoded: err.
func (h *holds) start(pf *record.PartitionFetch, j int, err error, now time.Time) {
	hp := &held{recs: slices.Clone(pf.Records[j:]), position: pf.Position, end: pf.End, since: now, logged: now, err: err}
	hp.attempts = 1
	hp.next = now.Add(h.policy.Backoff(1, err, rand.Float64()))
	h.parts[pf.TopicPartition] = hp
	pf.Records = pf.Records[:j]
	pf.Position = hp.recs[0].Offset
	if p := h.r.holdPauser; p != nil {
		p.Pause(pf.TopicPartition)
	}
	h.r.cfg.logger.Warn("schema'd record cannot be decoded yet: partition held, retrying",
		zap.String("topic", pf.Topic), zap.Int32("partition", pf.Partition), zap.Int64("offset", hp.recs[0].Offset), zap.Error(err))
}

// records counts the records held, over every partition.
func (h *holds) records() int {
	n := 0
	for _, hp := range h.parts {
		n += len(hp.recs)
	}
	return n
}

// due is when the next probe is due; ok is false when none is (nothing
// held, or every held partition's probe is out).
func (h *holds) due() (at time.Time, ok bool) {
	for _, hp := range h.parts {
		if !hp.probing && (!ok || hp.next.Before(at)) {
			at, ok = hp.next, true
		}
	}
	return at, ok
}

// probed is a probe's answer: whether the held record of tp decodes now.
type probed struct {
	tp   record.TopicPartition
	hp   *held
	hold *decode.HoldError // nil: it decodes (or is bad: either way, retry it)
}

// probe tries, off the poller's goroutine, the held record of every
// partition whose retry is due, so that a registry slow to answer does not
// stop the other partitions' intake; each answer comes on out. wg counts
// the probes out.
func (h *holds) probe(ctx context.Context, now time.Time, out chan<- probed, wg *sync.WaitGroup) {
	for tp, hp := range h.parts {
		if hp.probing || now.Before(hp.next) {
			continue
		}
		hp.probing = true
		rec, dec := hp.recs[0], h.r.p.decoders.For(tp.Topic) // a copy: decode writes to it
		wg.Add(1)
		go func() {
			defer wg.Done()
			var hold *decode.HoldError
			errors.As(dec.Decode(ctx, &rec), &hold)
			select {
			case out <- probed{tp: tp, hp: hp, hold: hold}:
			case <-ctx.Done():
			}
		}()
	}
}

// answered takes a probe's answer: a partition still unavailable waits for
// its next probe; one that decodes is retried at once (retry), from the
// decoder's cache. A hold dropped meanwhile (forget) is left alone.
func (h *holds) answered(ctx context.Context, a probed, now time.Time) (*polled, error) {
	if h.parts[a.tp] != a.hp {
		return nil, nil
	}
	a.hp.probing = false
	if a.hold != nil {
		h.again(a.tp, a.hp, a.hold.Unwrap(), now)
		return nil, nil
	}
	return h.retry(ctx, a.tp, a.hp, now)
}

// retry decodes the held records of tp in order and returns what decoded as
// a Fetch (nil when nothing did), with prepare's marks; the records from the
// first that cannot be decoded yet stay held. Its error ends the poller.
func (h *holds) retry(ctx context.Context, tp record.TopicPartition, hp *held, now time.Time) (*polled, error) {
	marks := map[*record.Record]error{}
	dec := h.r.p.decoders.For(tp.Topic)
	out := make([]record.Record, 0, len(hp.recs))
	var hold *decode.HoldError
	for _, rec := range hp.recs {
		out = append(out, rec)
		err := h.r.p.prepareRecord(ctx, dec, nil, nil, &out[len(out)-1]) // held: schema'd, never processed early
		if errors.As(err, &hold) {
			out = out[:len(out)-1]
			break
		}
		if err != nil && (ctx.Err() != nil || retry.IsFatal(err)) {
			return nil, err // the context's end, or a fatal decoder error
		}
		if err != nil {
			marks[&out[len(out)-1]] = err // errFiltered too, as prepare's
		}
	}
	pf := record.PartitionFetch{TopicPartition: tp, Records: out, Position: hp.position, End: hp.end}
	hp.recs = hp.recs[len(out):]
	if hold != nil {
		h.again(tp, hp, hold.Unwrap(), now)
		pf.Position = hp.recs[0].Offset
	} else {
		h.resume(tp, hp, now)
	}
	if len(out) == 0 && hold != nil {
		return nil, nil
	}
	return &polled{f: record.Fetch{Partitions: []record.PartitionFetch{pf}}, marks: marks}, nil
}

// again schedules the next retry of a partition still held.
func (h *holds) again(tp record.TopicPartition, hp *held, err error, now time.Time) {
	hp.attempts++
	hp.err = err
	hp.next = now.Add(h.policy.Backoff(hp.attempts, err, rand.Float64()))
	if now.Sub(hp.logged) >= holdLogEvery {
		hp.logged = now
		h.r.cfg.logger.Warn("schema'd record still cannot be decoded: partition held",
			zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Int64("offset", hp.recs[0].Offset),
			zap.Int("attempts", hp.attempts), zap.Duration("for", now.Sub(hp.since)), zap.Error(err))
	}
}

// resume ends the hold of a partition whose held records all decoded.
func (h *holds) resume(tp record.TopicPartition, hp *held, now time.Time) {
	delete(h.parts, tp)
	if p := h.r.holdPauser; p != nil {
		p.Resume(tp)
	}
	h.r.cfg.logger.Info("schema'd records decode again: partition resumed",
		zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Duration("held", now.Sub(hp.since)), zap.Int("attempts", hp.attempts))
}

// snapshot publishes the holds for Stats.SchemaHolds.
func (h *holds) snapshot() {
	if len(h.parts) == 0 && !h.shown {
		return
	}
	h.shown = len(h.parts) > 0
	var s []SchemaHold
	for tp, hp := range h.parts {
		s = append(s, SchemaHold{TopicPartition: tp, Offset: hp.recs[0].Offset, Records: len(hp.recs), Since: hp.since, Attempts: hp.attempts, Err: hp.err.Error()})
	}
	slices.SortFunc(s, func(a, b SchemaHold) int { return a.TopicPartition.Compare(b.TopicPartition) })
	h.r.heldMu.Lock()
	h.r.heldSnap = s
	h.r.heldMu.Unlock()
}
