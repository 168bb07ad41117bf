package signalbox

import (
	"sync"

	"github.com/signalbox/signalbox/record"
)

// Who pauses a partition: the engine's flow control (align.go) on the
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
