package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zapcore"

	"github.com/signalbox/signalbox/internal/startup"
)

// ErrStartupTimeout is wrapped by the error that ends a start-up a broker
// did not answer within Config.StartupTimeout: returned by Open in static
// mode, by the first Poll in group mode.
var ErrStartupTimeout = startup.ErrTimeout

// Start-up states.
const (
	starting int32 = iota
	started
	startFailed
)

// startupState is the one deadline of a source's start-up, from Open to the
// first snapshot (static mode) or the first assignment (group mode).
type startupState struct {
	deadline time.Time
	left     time.Duration // from Open to deadline
	carried  bool          // the deadline is the one Open's context carries
	state    atomic.Int32
	done     chan struct{} // closed when state leaves starting
	joined   chan struct{} // group mode: closed when the first session is joined
	joinOnce sync.Once
	waiting  atomic.Pointer[string] // what start-up waits for now
}

// waitFor records what the start-up waits for next, for the timeout error;
// after start-up it does nothing.
func (s *Source) waitFor(format string, args ...any) {
	if s.boot.state.Load() == starting {
		what := fmt.Sprintf(format, args...)
		s.boot.waiting.Store(&what)
	}
}

// finishStartup moves the start-up from starting to to; it reports whether
// it did (false: it had already ended).
func (s *Source) finishStartup(to int32) bool {
	if !s.boot.state.CompareAndSwap(starting, to) {
		return false
	}
	if to == startFailed {
		s.gate.close()
	}
	close(s.boot.done)
	return true
}

// logGate silences a source whose start-up failed: its abandoned steps
// still run and must not write to a log its caller has moved on from.
type logGate struct {
	mu     sync.Mutex
	closed bool
}

// close waits for a write in progress; no write follows.
func (g *logGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

// gatedCore writes through to Core until its gate closes.
type gatedCore struct {
	zapcore.Core
	g *logGate
}

func (c gatedCore) With(fields []zapcore.Field) zapcore.Core {
	return gatedCore{c.Core.With(fields), c.g}
}

func (c gatedCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c gatedCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if c.g.closed {
		return nil
	}
	return c.Core.Write(e, fields)
}

// startupErr is the error of a start-up that ran out of time.
func (s *Source) startupErr() error {
	what := "an answer"
	if p := s.boot.waiting.Load(); p != nil {
		what = *p
	}
	bound := fmt.Sprintf("startup_timeout (%v)", s.cfg.StartupTimeout)
	if s.boot.carried {
		bound = fmt.Sprintf("the job's start-up deadline (%v left at Open; startup_timeout %v)", s.boot.left.Round(time.Millisecond), s.cfg.StartupTimeout)
	}
	return fmt.Errorf("kafka: %w: no answer within %s to %s", ErrStartupTimeout, bound, what)
}

// bounded runs a blocking start-up step within the start-up deadline. When
// the deadline passes or ctx ends first, the start-up has failed and the
// step is left to end when the source closes the client.
func (s *Source) bounded(ctx context.Context, step func() error) error {
	err := startup.Run(ctx, s.boot.deadline, step)
	switch {
	case errors.Is(err, startup.ErrTimeout):
		s.finishStartup(startFailed)
		return s.startupErr()
	case ctx.Err() != nil && errors.Is(err, ctx.Err()): // abandoned too
		s.finishStartup(startFailed)
	}
	return err
}

// watchStartup fails the source, through Poll, when group mode's start-up
// has not reached its first assignment by the deadline. The coordinator
// answered before the join (openGroupTopics), so a JoinGroup it holds is
// the rebalance waiting for the group's other members, which Kafka bounds
// by the rebalance timeout: that wait, up to rebalance, is not counted.
func (s *Source) watchStartup(rebalance time.Duration) {
	joinStart := time.Now()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		timer := time.NewTimer(time.Until(s.boot.deadline.Add(rebalance)))
		defer timer.Stop()
		joined := s.boot.joined
		for {
			select {
			case <-s.boot.done:
				return
			case <-s.ctx.Done():
				return
			case <-joined:
				joined = nil
				timer.Reset(time.Until(s.boot.deadline.Add(min(time.Since(joinStart), rebalance))))
			case <-timer.C:
				if s.finishStartup(startFailed) {
					select {
					case s.fatal <- s.startupErr():
					default: // a failure is already pending
					}
				}
				return
			}
		}
	}()
}

// joinedAtStartup records that group mode's first session has been joined.
func (s *Source) joinedAtStartup() { s.boot.joinOnce.Do(func() { close(s.boot.joined) }) }

// brokerList names the bootstrap brokers.
func (s *Source) brokerList() string { return strings.Join(s.cfg.Brokers, ", ") }

// assignedAtStartup ends group mode's start-up at the first assignment; it
// reports false when the start-up has already failed, and the assignment
// must then not be delivered.
func (s *Source) assignedAtStartup() bool {
	s.finishStartup(started)
	return s.boot.state.Load() == started
}

// openGroupTopics is group mode's part of Open: the topics, and the group's
// coordinator, which the join then waits on.
func (s *Source) openGroupTopics(ctx context.Context) (map[string]int, error) {
	var counts map[string]int
	err := s.bounded(ctx, func() (err error) {
		if counts, err = s.openTopics(); err != nil {
			return err
		}
		coord, err := s.coordinator()
		if err != nil {
			return err
		}
		// The coordinator itself must answer before the join, whose
		// JoinGroup it may hold for a whole rebalance.
		addr := coordAddr(coord)
		s.waitFor("DescribeGroups for group %s from its coordinator, broker %d at %s", s.cfg.Group, coord.NodeID, addr)
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{s.cfg.Group}
		kresp, err := s.cl.Broker(int(coord.NodeID)).Request(s.ctx, req)
		if err == nil {
			for _, gr := range kresp.(*kmsg.DescribeGroupsResponse).Groups {
				// A group that does not exist yet is an answer too.
				if gerr := kerr.ErrorForCode(gr.ErrorCode); err == nil && !errors.Is(gerr, kerr.GroupIDNotFound) {
					err = gerr
				}
			}
		}
		if err != nil {
			return fmt.Errorf("kafka: coordinator of group %s, broker %d at %s: %w", s.cfg.Group, coord.NodeID, addr, err)
		}
		s.waitFor("the join of group %s (JoinGroup, SyncGroup) from its coordinator, broker %d at %s", s.cfg.Group, coord.NodeID, addr)
		return nil
	})
	if err != nil {
		return nil, err // an abandoned step may still be writing counts
	}
	return counts, nil
}
