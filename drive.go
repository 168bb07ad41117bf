package signalbox

// The driver's lifecycle around the core, shared by Run and by a driver
// that steps the core on one goroutine (tests): opening and closing the
// sinks and the source, one Fetch's steps, and the graceful end.

import (
	"context"
	"fmt"
)

// open opens the sinks, restores the checkpoints and opens the source, as
// Run documents. closeAll closes what open opened (the source, then the
// sinks) and returns err, or the first error closing them; it is to be
// called whatever open returned. A stop during start-up is a clean stop:
// nothing was read, nothing is to commit (stopped).
func (r *run) open(ctx context.Context) (closeAll func(err error) error, err error) {
	p, cfg := r.p, r.cfg
	sinks := cfg.sinks
	if cfg.deadLetter != nil {
		sinks = append(sinks[:len(sinks):len(sinks)], cfg.deadLetter)
	}
	opened, srcOpen := 0, false
	closeAll = func(err error) error {
		if srcOpen {
			if cerr := p.src.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("signalbox: closing source: %w", cerr)
			}
		}
		p.sinksOpen.Store(false)
		for _, s := range sinks[:opened] {
			if cerr := s.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("signalbox: closing sink: %w", cerr)
			}
		}
		return err
	}
	for _, s := range sinks {
		if err := s.Open(ctx); err != nil {
			return closeAll, fmt.Errorf("signalbox: opening sink: %w", err)
		}
		opened++
	}
	p.sinksOpen.Store(true)
	if err := r.restore(ctx); err != nil {
		return closeAll, err
	}
	if err := p.src.Open(ctx); err != nil {
		return closeAll, fmt.Errorf("signalbox: opening source: %w", err)
	}
	srcOpen = true
	return closeAll, nil
}
