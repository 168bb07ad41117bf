package baseline

import (
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/watermark"
)

// part is one partition as the timeout strategies see it.
type part struct {
	id       watermark.ID
	timeless bool
	maxEvent int64
	lastSeen time.Time // last record (or assignment)
}

// parts tracks partitions, their newest event time and when they last
// delivered. It is the shared state of the timeout strategies.
type parts struct {
	delay   int64
	timeout time.Duration
	wm      int64
	byID    map[watermark.ID]*part
	list    []*part
}

func newParts(delay, timeout time.Duration) parts {
	return parts{delay: delay.Milliseconds(), timeout: timeout, wm: watermark.MinTime, byID: map[watermark.ID]*part{}}
}

func (s *parts) Add(id watermark.ID, timeless bool, now time.Time) {
	if _, ok := s.byID[id]; ok {
		return
	}
	p := &part{id: id, timeless: timeless, maxEvent: watermark.MinTime, lastSeen: now}
	s.byID[id] = p
	s.list = append(s.list, p)
}

func (s *parts) Remove(id watermark.ID) {
	delete(s.byID, id)
	for i, p := range s.list {
		if p.id == id {
			s.list = append(s.list[:i], s.list[i+1:]...)
			return
		}
	}
}

func (s *parts) Observe(id watermark.ID, et int64, now time.Time) {
	if p := s.byID[id]; p != nil {
		p.maxEvent = max(p.maxEvent, et)
		p.lastSeen = now
	}
}

// SetPhase is ignored: timeout strategies do not use offsets evidence.
func (s *parts) SetPhase(watermark.ID, catchup.Phase, int64, time.Time) {}

func (s *parts) Restore(wm int64) { s.wm = max(s.wm, wm) }

func (s *parts) Holders() []watermark.Hold { return nil }

// active reports whether p holds the watermark at now.
func (s *parts) active(p *part, now time.Time) bool {
	return !p.timeless && now.Sub(p.lastSeen) < s.timeout
}

func (s *parts) contribution(p *part) int64 {
	if p.maxEvent == watermark.MinTime {
		return watermark.MinTime
	}
	return p.maxEvent - s.delay
}

// raise makes the watermark monotonic (invariant 2).
func (s *parts) raise(cand int64, ok bool) int64 {
	if ok && cand > s.wm {
		s.wm = cand
	}
	return s.wm
}

// OneLayer is timeout idleness per partition.
type OneLayer struct{ parts }

// NewOneLayer returns one-layer timeout idleness: a partition with no record
// for timeout is idle. delay is the same bound the offset gate uses.
func NewOneLayer(delay, timeout time.Duration) *OneLayer {
	return &OneLayer{newParts(delay, timeout)}
}

// Advance returns the minimum, over the active partitions, of their newest
// event time − delay; with none active it holds.
func (s *OneLayer) Advance(now time.Time) int64 {
	cand, ok := watermark.MaxTime, false
	for _, p := range s.list {
		if s.active(p, now) {
			cand, ok = min(cand, s.contribution(p)), true
		}
	}
	return s.raise(cand, ok)
}

// input is one topic as the two-layer strategy sees it.
type input struct {
	wm      int64     // the input's own watermark, last computed
	movedAt time.Time // when it last advanced (or the input was added)
}

// TwoLayers is timeout idleness per partition and per input.
type TwoLayers struct {
	parts
	inputTimeout time.Duration
	inputs       map[string]*input
	cands        map[string]int64 // scratch for Advance
}

// NewTwoLayers returns two-layer timeout idleness: partitions idle after
// timeout without records, inputs idle after inputTimeout without watermark
// progress.
func NewTwoLayers(delay, timeout, inputTimeout time.Duration) *TwoLayers {
	return &TwoLayers{parts: newParts(delay, timeout), inputTimeout: inputTimeout,
		inputs: map[string]*input{}, cands: map[string]int64{}}
}

// Add tracks the partition and its input.
func (s *TwoLayers) Add(id watermark.ID, timeless bool, now time.Time) {
	s.parts.Add(id, timeless, now)
	if _, ok := s.inputs[id.Input]; !ok && !timeless {
		s.inputs[id.Input] = &input{wm: watermark.MinTime, movedAt: now}
	}
}

// Advance computes each input's watermark over its active partitions, drops
// inputs idle by either layer, and returns the minimum over the rest.
func (s *TwoLayers) Advance(now time.Time) int64 {
	clear(s.cands)
	for _, p := range s.list {
		if !s.active(p, now) {
			continue
		}
		c, seen := s.cands[p.id.Input]
		if !seen || s.contribution(p) < c {
			s.cands[p.id.Input] = s.contribution(p)
		}
	}
	cand, ok := watermark.MaxTime, false
	for name, c := range s.cands {
		in := s.inputs[name]
		if c > in.wm {
			in.wm, in.movedAt = c, now
		}
		if now.Sub(in.movedAt) >= s.inputTimeout {
			continue // input layer: no progress for inputTimeout
		}
		cand, ok = min(cand, c), true
	}
	return s.raise(cand, ok)
}

// sample is the newest event time observed as of a wall time.
type sample struct {
	at       time.Time
	maxEvent int64
}

// FixedWindow holds every record for a fixed wall-time window.
type FixedWindow struct {
	window   time.Duration
	maxEvent int64
	samples  []sample // increasing at and maxEvent
	wm       int64
}

// NewFixedWindow returns the fixed-window sorter.
func NewFixedWindow(window time.Duration) *FixedWindow {
	return &FixedWindow{window: window, maxEvent: watermark.MinTime, wm: watermark.MinTime}
}

// Add does nothing: the window does not care about partitions.
func (s *FixedWindow) Add(watermark.ID, bool, time.Time) {}

// Remove does nothing.
func (s *FixedWindow) Remove(watermark.ID) {}

// SetPhase is ignored.
func (s *FixedWindow) SetPhase(watermark.ID, catchup.Phase, int64, time.Time) {}

// Observe notes the newest event time as of now.
func (s *FixedWindow) Observe(_ watermark.ID, et int64, now time.Time) {
	if et <= s.maxEvent {
		return
	}
	s.maxEvent = et
	if n := len(s.samples); n > 0 && !now.After(s.samples[n-1].at) {
		s.samples[n-1].maxEvent = et
		return
	}
	s.samples = append(s.samples, sample{at: now, maxEvent: et})
}

// Advance returns the newest event time observed as of now − window.
func (s *FixedWindow) Advance(now time.Time) int64 {
	cut := now.Add(-s.window)
	i := 0
	for i < len(s.samples) && !s.samples[i].at.After(cut) {
		s.wm = max(s.wm, s.samples[i].maxEvent)
		i++
	}
	if i > 0 {
		s.samples = append(s.samples[:0], s.samples[i:]...)
	}
	return s.wm
}

// Restore raises the watermark.
func (s *FixedWindow) Restore(wm int64) { s.wm = max(s.wm, wm) }

// Holders is nil: nothing but the clock holds a fixed window.
func (s *FixedWindow) Holders() []watermark.Hold { return nil }

var (
	_ strategy.Strategy = (*OneLayer)(nil)
	_ strategy.Strategy = (*TwoLayers)(nil)
	_ strategy.Strategy = (*FixedWindow)(nil)
)
