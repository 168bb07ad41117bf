package signalbox

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
)

// MemStore is the default in-memory ParkedStore, for the external tests to
// wrap (align_test.go's peakStore).
type MemStore = engine.MemStore

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return engine.NewMemStore() }

// WithSpawn sets how the helper that evaluates ahead is started (design
// K10): window_ahead_test.go runs it at once, before the engine goes on,
// or never.
func WithSpawn(spawn func(f func())) Option { return func(c *config) { c.spawn = spawn } }

// StolenBlocks is how many blocks engines evaluated while waiting for a
// helper, in this process (engine.Ahead).
func StolenBlocks() int64 { return engine.Ahead().Stolen }

// Stepper drives a Pipeline's engine core on the caller's goroutine, one
// Fetch at a time, as Run's loop does but with no poller, no sink
// goroutine and no timer: each Step handles a Fetch, runs the pass after
// it, and applies every effect (the sinks are written, and a barrier
// acknowledged, before Step returns), so a test decides what the engine
// sees and when (engine_transcript_test.go).
type Stepper struct {
	r        *run
	ctx      context.Context
	h        *holds
	closeAll func(error) error
	effects  []string // what the engine asked for since Effects was last called
}

// NewStepper opens p as Run does (sinks, checkpoints, source).
func NewStepper(ctx context.Context, p *Pipeline) (*Stepper, error) {
	r := newRun(ctx, p)
	r.stepped = newWriter(r, r.notify)
	closeAll, err := r.open(ctx)
	if err != nil {
		return nil, closeAll(err)
	}
	s := &Stepper{r: r, ctx: ctx, h: newHolds(r), closeAll: closeAll}
	r.trace = func(fx *engine.Effects) { s.effects = append(s.effects, describeEffects(fx)...) }
	return s, nil
}

// Step takes f, decoded as the poller does, then runs the pass after it at
// the clock's time; done reports that the run is over.
func (s *Stepper) Step(f record.Fetch) (done bool, err error) {
	marks, err := s.r.p.prepare(s.ctx, &f, s.h)
	if err != nil {
		return true, err
	}
	if err := s.r.fetchStep(s.ctx, polled{f: f, marks: marks}); err != nil {
		return true, err
	}
	return s.r.pass(s.ctx, s.r.cfg.clock())
}

// Stop ends the run as Run does once its loop returned err (nil: a
// bounded run is complete; the context's error: a stop), and closes the
// source and the sinks.
func (s *Stepper) Stop(err error) error {
	err = s.r.finish(s.ctx, err)
	for _, e := range s.r.eng.Ready().Events { // a failed step's, not applied
		s.r.notify(event(e))
	}
	s.r.publish()
	return s.closeAll(err)
}

// HeldUnpausedLimit is heldUnpausedLimit (hold.go).
const HeldUnpausedLimit = heldUnpausedLimit

// Effects returns what the engine asked the driver to do since the last
// call, one effect a line, in the order asked: flow control, evidence
// demands, each out batch (its released records, dead letters, flush and
// checkpoint), and a barrier (the commit waits for the sinks' acknowledgement).
func (s *Stepper) Effects() []string {
	e := s.effects
	s.effects = nil
	return e
}

func describeEffects(fx *engine.Effects) []string {
	var out []string
	tps := func(tps []record.TopicPartition) string {
		var b []string
		for _, tp := range tps {
			b = append(b, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
		}
		return strings.Join(b, " ")
	}
	recs := func(rs []record.Record) string {
		var b []string
		for _, r := range rs {
			b = append(b, fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset))
		}
		return strings.Join(b, " ")
	}
	if len(fx.Resume) > 0 {
		out = append(out, "resume "+tps(fx.Resume))
	}
	if len(fx.Pause) > 0 {
		out = append(out, "pause "+tps(fx.Pause))
	}
	if fx.WantEvidence {
		if fx.Evidence.IsZero() {
			out = append(out, "want evidence: none due")
		} else {
			out = append(out, fmt.Sprintf("want evidence at %d", fx.Evidence.UnixMilli()))
		}
	}
	if fx.Live != 0 {
		out = append(out, fmt.Sprintf("live at %d", fx.Live))
	}
	for _, o := range fx.Outs {
		if len(o.Records) > 0 {
			out = append(out, "release "+recs(o.Records))
		}
		if len(o.Dead) > 0 {
			out = append(out, "dead-letter "+recs(o.Dead))
		}
		if o.Flush {
			out = append(out, "flush")
		}
		if o.CP != nil {
			l := "checkpoint watermark=" + MarkString(o.CP.Watermark)
			for _, pc := range o.CP.Partitions {
				l += fmt.Sprintf(" %s/%d low=%d position=%d", pc.Topic, pc.Partition, pc.Low, pc.Position)
			}
			if o.Final {
				l += " final"
			}
			out = append(out, l)
		}
	}
	if b := fx.Barrier; b != nil {
		l := "barrier: the commit waits for the sinks"
		if b.Revoke {
			l += ", then the revoke"
		}
		out = append(out, l)
	}
	return out
}

// MarkString prints a watermark in ms, −∞ as such.
func MarkString(m int64) string {
	if m == math.MinInt64 {
		return "-inf"
	}
	return strconv.FormatInt(m, 10)
}
