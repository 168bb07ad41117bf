package signalbox

// The poller: it feeds the engine the source's fetches, decoded off the
// engine's goroutine (prepare, internal/decode), and the pause gate that
// the engine's flow control and the holds share.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/signalbox/signalbox/internal/decode"
	"github.com/signalbox/signalbox/internal/early"
	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// polled is one Fetch on its way to the engine. For a Fetch that revokes
// partitions, handled is closed once the engine has committed their safe
// offsets: the poller waits for it before it polls again, because the next
// Poll is what lets a rebalance proceed.
type polled struct {
	f       record.Fetch
	marks   map[*record.Record]error // from prepare
	handled chan struct{}
}

// poll feeds the engine: the source's fetches, prepared (prepare), and the
// records of held partitions once they decode (hold.go).
func (r *run) poll(ctx context.Context, fetches chan<- polled) {
	raw := make(chan polled)
	done := make(chan struct{})
	go func() { defer close(done); r.pollSource(ctx, raw) }()
	defer func() { <-done }()
	h := newHolds(r)
	probes := make(chan probed)
	var probing sync.WaitGroup
	defer probing.Wait()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		var wake <-chan time.Time
		if at, ok := h.due(); ok {
			// Wall time: the holds' backoff paces real retries of a registry (hold.go).
			resetTimer(retry, max(time.Until(at), 0))
			wake = retry.C
		}
		in := raw
		if r.holdPauser == nil && h.records() >= heldUnpausedLimit {
			in = nil // a source that cannot pause: stop polling it until the holds shrink
		}
		var p *polled
		var err error
		select {
		case q := <-in:
			q.marks, err = r.p.prepare(ctx, &q.f, h)
			p = &q
		case <-wake:
			h.probe(ctx, time.Now(), probes, &probing) // wall time, as the backoff
		case a := <-probes:
			p, err = h.answered(ctx, a, time.Now()) // wall time, as the backoff
		case <-ctx.Done():
			return
		}
		if err != nil {
			if ctx.Err() == nil { // a fatal decoder error (prepare): Run stops with it
				select {
				case r.errs <- fmt.Errorf("signalbox: decoding a record: %w", err):
				case <-ctx.Done():
				}
			}
			return
		}
		h.snapshot()
		if p == nil {
			continue
		}
		select {
		case fetches <- *p:
		case <-ctx.Done():
			return
		}
	}
}

// pollSource polls the source and hands each Fetch to poll. After a Fetch
// that revokes partitions it waits until the engine has handled it.
func (r *run) pollSource(ctx context.Context, raw chan<- polled) {
	for {
		f, err := r.p.src.Poll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.errs <- fmt.Errorf("signalbox: source: %w", err)
			}
			return
		}
		p := polled{f: f}
		if len(f.Revoked) > 0 {
			p.handled = make(chan struct{})
		}
		select {
		case raw <- p:
		case <-ctx.Done():
			return
		}
		if p.handled != nil {
			select {
			case <-p.handled:
			case <-ctx.Done():
				return
			}
		}
	}
}

// prepare runs on the poller goroutine, off the engine's: the meta filter
// and the decoding of every record of f (event time, ordering key), so that
// the engine goroutine only parks and releases. It returns the records that
// were filtered (engine.ErrFiltered) or did not decode (the dead-letter reason);
// nil when there are none, which is the common case. A record a
// ValueDecoder cannot decode yet starts a hold of its partition, and the
// records of a held partition join the hold (hold.go); the error is the
// context's, when it ends, or a fatal decoder error (retry.IsFatal). The
// records of the topics with early processing are prepared in two halves
// at once (prepareSplit).
func (p *Pipeline) prepare(ctx context.Context, f *record.Fetch, h *holds) (map[*record.Record]error, error) {
	var marks map[*record.Record]error
	var split []*record.PartitionFetch
	h.forget(f)
	for i := range f.Partitions {
		pf := &f.Partitions[i]
		if h.absorb(pf) || len(pf.Records) == 0 {
			continue
		}
		dec, ef := p.decoders.For(pf.Topic), p.earlyFor(pf.Topic)
		if ef != nil && p.splits {
			split = append(split, pf)
			continue
		}
		for j := range pf.Records {
			rec := &pf.Records[j]
			err := p.prepareRecord(ctx, dec, ef, &p.members, rec)
			if err == nil {
				continue
			}
			var hold *decode.HoldError
			if errors.As(err, &hold) {
				h.start(pf, j, hold.Unwrap(), time.Now()) // wall time: the hold's retry backoff (poll.go)
				break
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if retry.IsFatal(err) {
				return nil, err
			}
			marks = mark(marks, rec, err)
		}
	}
	return p.prepareSplit(ctx, split, marks), nil
}

// splitAt is the fewest records prepareSplit hands half of to a helper.
const splitAt = 256

// prepareSplit prepares the records of split, partitions of JSON inputs
// with early processing and no meta filter, whose decoding neither holds
// nor fails the run: every error is a record's dead-letter reason, added
// to marks. The second half of the records goes to a goroutine of its
// own, beside the poller's first half: decoding them and their processing
// is the poller's work that takes the longest.
func (p *Pipeline) prepareSplit(ctx context.Context, split []*record.PartitionFetch, marks map[*record.Record]error) map[*record.Record]error {
	if len(split) == 0 {
		return marks
	}
	n := 0
	for _, pf := range split {
		n += len(pf.Records)
	}
	half := func(m *decode.Members, from, to int) map[*record.Record]error {
		var marks map[*record.Record]error
		at := 0
		for _, pf := range split {
			lo, hi := max(from-at, 0), min(to-at, len(pf.Records))
			at += len(pf.Records)
			if lo >= hi {
				continue
			}
			dec, ef := p.decoders.For(pf.Topic), p.earlyOf[pf.Topic] // earlyFor's, already asked
			for j := lo; j < hi; j++ {
				if err := p.prepareRecord(ctx, dec, ef, m, &pf.Records[j]); err != nil {
					marks = mark(marks, &pf.Records[j], err)
				}
			}
		}
		return marks
	}
	mid := n
	if n >= splitAt {
		mid = n / 2
	}
	var second map[*record.Record]error
	done := make(chan struct{})
	if mid < n {
		go func() {
			defer close(done)
			second = half(&p.helperMembers, mid, n)
		}()
	} else {
		close(done)
	}
	first := half(&p.members, 0, mid)
	<-done
	for _, m := range []map[*record.Record]error{first, second} {
		for r, err := range m {
			marks = mark(marks, r, err)
		}
	}
	return marks
}

// mark adds r's dead-letter reason to marks, made when nil (the common
// case: no record fails).
func mark(marks map[*record.Record]error, r *record.Record, err error) map[*record.Record]error {
	if marks == nil {
		marks = make(map[*record.Record]error)
	}
	marks[r] = err
	return marks
}

// prepareRecord is prepare for one record: engine.ErrFiltered, or decode's error.
// A decoded record's value is marked record.Record.ValueJSON here when a
// sink trusts the mark and decoding did not validate the value already.
// ef, when not nil, is the record's topic's early processing
// (internal/early): it runs on the decoded record, with the members of its
// value that the decoding's scan found.
func (p *Pipeline) prepareRecord(ctx context.Context, dec *decode.Decoder, ef early.Func, m *decode.Members, rec *record.Record) error {
	if mf := p.cfg.metaFilter; mf != nil && !mf(rec) {
		return engine.ErrFiltered
	}
	if ef != nil {
		return prepareEarly(ctx, dec, ef, m, rec)
	}
	if err := dec.Decode(ctx, rec); err != nil {
		return err
	}
	if p.markJSON && !dec.NeedsJSON() && !dec.Schemad() && rec.Value != nil {
		d := jsonfield.Scan(rec.Value, nil)
		rec.ValueJSON = d.Valid && !d.Multiline
	}
	return nil
}

// prepareEarly is prepareRecord with early processing: the value is
// scanned once, for its event time or key if the input reads one from it,
// else for its members alone (into m), and validated on the way.
func prepareEarly(ctx context.Context, dec *decode.Decoder, ef early.Func, m *decode.Members, rec *record.Record) error {
	if err := dec.DecodeMembers(ctx, rec, m); err != nil {
		return err
	}
	if !dec.NeedsJSON() && rec.Value != nil {
		var d jsonfield.Doc
		d, m.Spans, m.OK = jsonfield.ScanMembers(rec.Value, nil, m.Spans[:0])
		rec.ValueJSON = d.Valid && !d.Multiline
	}
	ef(rec, m)
	return nil
}

// The option that sets config.early: package config's processing as
// records are decoded (internal/early: not part of the API).
func init() {
	early.With = func(forTopic func(string) early.Func) any {
		return Option(func(c *config) { c.early = forTopic })
	}
}

// earlyFor is topic's early processing, nil when none: never a table's
// (its records are versions, not processed), nor a schema'd input's (its
// value is rendered at release).
func (p *Pipeline) earlyFor(topic string) early.Func {
	if p.cfg.early == nil {
		return nil
	}
	if ef, ok := p.earlyOf[topic]; ok {
		return ef
	}
	var ef early.Func
	if !slices.ContainsFunc(p.cfg.tables, func(t Table) bool { return t.Topic == topic }) && !p.decoders.For(topic).Schemad() {
		ef = p.cfg.early(topic)
	}
	if p.earlyOf == nil {
		p.earlyOf = map[string]early.Func{}
	}
	p.earlyOf[topic] = ef
	return ef
}

// The three pieces of sending a record to the dead-letter sink, shared by
// the engine (bad input, late, poison) and the sink goroutine (records a
// sink rejects).

// Who pauses a partition: the engine's flow control (internal/engine align.go) on the
// engine goroutine, a schema hold (hold.go) on the poller's.
const (
	pausedByEngine uint8 = 1 << iota
	pausedByHold
)

// pauseGate shares the source's Pauser between the engine and the schema
// holds: a partition stays paused while either wants it paused, so that
// one resuming it never lifts the other's pause (the source's own pause is
// not counted).
type pauseGate struct {
	mu  sync.Mutex
	src Pauser
	by  map[record.TopicPartition]uint8
}

// pauserFor returns the Pauser through which who pauses the partitions of
// src (nil when src cannot pause).
func (g *pauseGate) pauserFor(who uint8) Pauser {
	if g == nil {
		return nil
	}
	return gatedPauser{g, who}
}

// newPauseGate returns the gate of src, nil when src is not a Pauser.
func newPauseGate(src Source) *pauseGate {
	p, ok := src.(Pauser)
	if !ok {
		return nil
	}
	return &pauseGate{src: p, by: map[record.TopicPartition]uint8{}}
}

type gatedPauser struct {
	g   *pauseGate
	who uint8
}

// Pause pauses in the source the partitions of tps that nobody paused yet.
func (p gatedPauser) Pause(tps ...record.TopicPartition) {
	g := p.g
	g.mu.Lock()
	defer g.mu.Unlock() // held across the source's call: a concurrent Resume must not overtake it
	var fresh []record.TopicPartition
	for _, tp := range tps {
		if g.by[tp] == 0 {
			fresh = append(fresh, tp)
		}
		g.by[tp] |= p.who
	}
	if len(fresh) > 0 {
		g.src.Pause(fresh...)
	}
}

// Resume lifts p's pause of tps, and resumes in the source those that
// nobody else keeps paused.
func (p gatedPauser) Resume(tps ...record.TopicPartition) {
	g := p.g
	g.mu.Lock()
	defer g.mu.Unlock()
	var free []record.TopicPartition
	for _, tp := range tps {
		by, ok := g.by[tp]
		if !ok || by&p.who == 0 {
			continue
		}
		if by &^= p.who; by != 0 {
			g.by[tp] = by
			continue
		}
		delete(g.by, tp)
		free = append(free, tp)
	}
	if len(free) > 0 {
		g.src.Resume(free...)
	}
}
