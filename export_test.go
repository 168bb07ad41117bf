package signalbox

import (
	"context"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
)

// MemStore is the default in-memory ParkedStore, for the external tests to
// wrap (align_test.go's peakStore).
type MemStore = engine.MemStore

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return engine.NewMemStore() }

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
}

// NewStepper opens p as Run does (sinks, checkpoints, source).
func NewStepper(ctx context.Context, p *Pipeline) (*Stepper, error) {
	r := newRun(ctx, p)
	r.stepped = newWriter(r, r.notify)
	closeAll, err := r.open(ctx)
	if err != nil {
		return nil, closeAll(err)
	}
	return &Stepper{r: r, ctx: ctx, h: newHolds(r), closeAll: closeAll}, nil
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
