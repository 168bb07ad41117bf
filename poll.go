package signalbox

// The poller: it feeds the engine the source's fetches, decoded off the
// engine's goroutine (doc.go maps the stages).

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/signalbox/signalbox/record"
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
