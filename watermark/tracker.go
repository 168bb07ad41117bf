package watermark

import (
	"math"
	"sort"
	"time"
)

// MinTime is −∞: the watermark before any evidence.
const MinTime int64 = math.MinInt64

// MaxTime is +∞: the watermark that releases everything (final flush).
const MaxTime int64 = math.MaxInt64

// ID names a partition of an input.
type ID struct {
	Input     string
	Partition int32
}

// Hold explains one partition's contribution to the watermark.
type Hold struct {
	ID
	State        string // the catch-up phase, e.g. "replaying"
	Behind       int64  // offsets between its position and its end offset
	MaxEventTime int64  // MinTime when nothing was seen
	Contribution int64  // Settled(MaxEventTime, delay): MaxEventTime − delay − 1 ms, or MinTime
}

type part struct {
	id       ID
	timeless bool
	holds    bool
	state    string
	behind   int64
	maxEvent int64
}

// Tracker computes the watermark. It is not safe for concurrent use.
type Tracker struct {
	delay int64
	wm    int64
	parts map[ID]*part
	list  []*part // iteration order for Advance, rebuilt on Add/Remove
}

// New returns a Tracker with the given delay bound, at MinTime.
func New(delay time.Duration) *Tracker {
	return &Tracker{delay: delay.Milliseconds(), wm: MinTime, parts: make(map[ID]*part)}
}

// Delay is the configured delay in milliseconds.
func (t *Tracker) Delay() int64 { return t.delay }

// Add starts tracking a partition. A new timed partition holds the watermark
// (state "assigned") until SetHolding says otherwise.
func (t *Tracker) Add(id ID, timeless bool) {
	if _, ok := t.parts[id]; ok {
		return
	}
	p := &part{id: id, timeless: timeless, holds: !timeless, state: "assigned", maxEvent: MinTime}
	t.parts[id] = p
	t.list = append(t.list, p)
}

// Remove stops tracking a partition (revoked).
func (t *Tracker) Remove(id ID) {
	if _, ok := t.parts[id]; !ok {
		return
	}
	delete(t.parts, id)
	for i, p := range t.list {
		if p.id == id {
			t.list = append(t.list[:i], t.list[i+1:]...)
			break
		}
	}
}

// Observe records that a partition delivered a record at eventTime.
func (t *Tracker) Observe(id ID, eventTime int64) {
	if p := t.parts[id]; p != nil && eventTime > p.maxEvent {
		p.maxEvent = eventTime
	}
}

// SetHolding records whether a partition holds the watermark, and why.
func (t *Tracker) SetHolding(id ID, holds bool, state string, behind int64) {
	if p := t.parts[id]; p != nil {
		p.holds = holds && !p.timeless
		p.state = state
		p.behind = behind
	}
}

// Advance recomputes the watermark at processing time now and returns it.
func (t *Tracker) Advance(now time.Time) int64 {
	cand, timed, held := MaxTime, false, false
	for _, p := range t.list {
		if p.timeless {
			continue
		}
		timed = true
		if !p.holds {
			continue
		}
		held = true
		if c := t.contribution(p); c < cand {
			cand = c
		}
	}
	switch {
	case !timed:
		return t.wm // invariant 3
	case !held:
		cand = Settled(now.UnixMilli(), t.delay) // invariant 2
	}
	if cand > t.wm {
		t.wm = cand
	}
	return t.wm
}

// Current returns the watermark without recomputing it.
func (t *Tracker) Current() int64 { return t.wm }

// Restore sets the watermark after a restart. It never lowers it.
func (t *Tracker) Restore(wm int64) {
	if wm > t.wm {
		t.wm = wm
	}
}

func (t *Tracker) contribution(p *part) int64 { return Settled(p.maxEvent, t.delay) }

// Settled is the watermark that evidence up to t allows under a delay of
// delay ms: t − delay − 1 ms (MinTime for t = MinTime). A record still to
// come that is at most delay behind t carries an event time ≥ t − delay,
// and the watermark must not have passed it; so only what is strictly
// older is settled. For a holding partition, t is its newest event time:
// it may still deliver more records at that very time (many records per
// millisecond). For the processing-time fallback, t is now, the evidence
// clock (record.Fetch invariant 4): a record appended from now on, within
// the delay bound, is at most delay behind now.
func Settled(t, delay int64) int64 {
	if t == MinTime {
		return MinTime
	}
	return sub(sub(t, delay), 1)
}

// SettledAt is the earliest evidence time t, in ms, at which Settled(t,
// delay) reaches eventTime: when the processing-time fallback releases a
// record of that event time.
func SettledAt(eventTime, delay int64) int64 { return eventTime + delay + 1 }

// Holders returns the partitions holding the watermark, lowest contribution
// first (ties by input, partition). It allocates; call it for status views
// and logs, not per record.
func (t *Tracker) Holders() []Hold {
	var out []Hold
	for _, p := range t.list {
		if p.timeless || !p.holds {
			continue
		}
		out = append(out, Hold{ID: p.id, State: p.state, Behind: p.behind, MaxEventTime: p.maxEvent, Contribution: t.contribution(p)})
	}
	SortHolds(out)
	return out
}

// SortHolds orders holds lowest contribution first, ties by input and
// partition: the order Holders returns, also for holds merged from several
// trackers.
func SortHolds(hs []Hold) {
	sort.Slice(hs, func(i, j int) bool {
		a, b := hs[i], hs[j]
		if a.Contribution != b.Contribution {
			return a.Contribution < b.Contribution
		}
		if a.Input != b.Input {
			return a.Input < b.Input
		}
		return a.Partition < b.Partition
	})
}

// sub is a − b, saturating at MinTime.
func sub(a, b int64) int64 {
	if a < MinTime+b {
		return MinTime
	}
	return a - b
}
