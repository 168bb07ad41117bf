package keyed

// MemTimers: the in-memory TimerQueue.

import (
	"container/heap"
	"slices"
)

// MemTimers is the in-memory TimerQueue: a heap in (At, Key) order, deleted
// entries dropped when they reach its top, or all at once when they
// outnumber the live ones (a session that a record extends moves its timer
// each time).
type MemTimers struct {
	h    timerHeap
	live map[Timer]bool
}

// NewMemTimers returns an empty MemTimers.
func NewMemTimers() *MemTimers { return &MemTimers{live: map[Timer]bool{}} }

// Has reports whether t is set.
func (s *MemTimers) Has(t Timer) bool { return s.live[t] }

// Len is the number of timers set.
func (s *MemTimers) Len() int { return len(s.live) }

// Set adds t.
func (s *MemTimers) Set(t Timer) {
	if s.live[t] {
		return
	}
	s.live[t] = true
	heap.Push(&s.h, t)
}

// Delete removes t.
func (s *MemTimers) Delete(t Timer) {
	if !s.live[t] {
		return
	}
	delete(s.live, t)
	if len(s.h) > 64 && len(s.h) > 2*len(s.live) {
		s.compact()
	}
}

// compact drops the deleted entries of the heap.
func (s *MemTimers) compact() {
	h := s.h[:0]
	for _, t := range s.h {
		if s.live[t] {
			h = append(h, t)
		}
	}
	clear(s.h[len(h):])
	s.h = h
	heap.Init(&s.h)
}

// Peek is the first timer set, without removing it.
func (s *MemTimers) Peek() (Timer, bool) {
	for len(s.h) > 0 {
		if t := s.h[0]; s.live[t] {
			return t, true
		}
		heap.Pop(&s.h)
	}
	return Timer{}, false
}

// Due removes and returns the first timer at or below now. It reads the
// heap's top before the live set: a call with nothing due (once per
// record) is a comparison.
func (s *MemTimers) Due(now int64) (Timer, bool) {
	for len(s.h) > 0 && s.h[0].At <= now {
		t := heap.Pop(&s.h).(Timer)
		if s.live[t] {
			delete(s.live, t)
			return t, true
		}
	}
	return Timer{}, false
}

// TakeLast removes the n last timers (in (At, Key) order) and returns them
// in that order: a durable TimerQueue spills them.
func (s *MemTimers) TakeLast(n int) []Timer {
	all := make([]Timer, 0, len(s.live))
	for t := range s.live {
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b Timer) int {
		switch {
		case a.Less(b):
			return -1
		case b.Less(a):
			return 1
		}
		return 0
	})
	n = min(n, len(all))
	out := all[len(all)-n:]
	for _, t := range out {
		delete(s.live, t)
	}
	s.compact()
	return out
}

type timerHeap []Timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].Less(h[j]) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(Timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
