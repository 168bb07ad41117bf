package catchup

import (
	"math"
	"sort"
	"time"
)

// Phase is where a partition stands relative to the evidence.
type Phase uint8

const (
	// Replaying: the position has not yet reached the start-up end offset.
	Replaying Phase = iota
	// CaughtUp: the position has reached the latest known end offset.
	CaughtUp
	// Behind: caught up once, but fresh evidence shows data past the position.
	Behind
	// Unknown: the last fetch failed or the evidence is stale.
	Unknown
)

var phaseNames = [...]string{"replaying", "caught-up", "behind", "unknown"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase(?)"
}

// Holds reports whether a partition in this phase holds the watermark.
func (p Phase) Holds() bool { return p != CaughtUp }

// ID names a partition of an input.
type ID struct {
	Input     string
	Partition int32
}

// Options configure a Tracker. The zero value is valid.
type Options struct {
	// StaleAfter turns a partition Unknown when its last evidence is older.
	// Zero (the default) disables staleness; failures still turn it Unknown.
	StaleAfter time.Duration
	// RateHalfLife smooths the offsets/s rate used for ETAs. Default 5s.
	RateHalfLife time.Duration
}

// Status is the state of one partition.
type Status struct {
	ID
	Phase       Phase
	Position    int64 // next offset to fetch
	SnapshotEnd int64 // end offset snapshotted at assignment
	LatestEnd   int64 // latest fresh end offset
	Behind      int64 // offsets between the position and the target end
	LastSeen    time.Time
}

type part struct {
	Status
	first      int64 // position at assignment
	replayDone bool
	failed     bool
	rate       float64 // offsets/s, exponentially smoothed
	rateAt     time.Time
}

// Tracker tracks the phase of every assigned partition. It is not safe for
// concurrent use.
type Tracker struct {
	opts  Options
	parts map[ID]*part
}

// New returns an empty Tracker.
func New(opts Options) *Tracker {
	if opts.RateHalfLife <= 0 {
		opts.RateHalfLife = 5 * time.Second
	}
	return &Tracker{opts: opts, parts: make(map[ID]*part)}
}

// Transition records a phase change.
type Transition struct {
	ID
	From, To Phase
}

// Assign starts tracking a partition whose first fetch will be at start and
// whose end offset, snapshotted before any record was read, is end. It
// returns the initial phase (CaughtUp for an empty partition).
func (t *Tracker) Assign(id ID, start, end int64, now time.Time) Phase {
	p := &part{Status: Status{ID: id, Position: start, SnapshotEnd: end, LatestEnd: end, LastSeen: now}, first: start, rateAt: now}
	t.parts[id] = p
	t.settle(p)
	return p.Phase
}

// Revoke stops tracking a partition.
func (t *Tracker) Revoke(id ID) { delete(t.parts, id) }

// Observe records fresh evidence: the position after a fetch and, when
// end ≥ 0, the end offset the broker reported with it.
func (t *Tracker) Observe(id ID, position, end int64, now time.Time) (Transition, bool) {
	p := t.parts[id]
	if p == nil {
		return Transition{}, false
	}
	from := p.Phase
	if dt := now.Sub(p.rateAt).Seconds(); dt > 0 && position > p.Position {
		inst := float64(position-p.Position) / dt
		if p.rate == 0 {
			p.rate = inst // the first measurement: smoothing from 0 would bias it low
		} else {
			w := 1 - math.Exp2(-dt/t.opts.RateHalfLife.Seconds())
			p.rate += w * (inst - p.rate)
		}
		p.rateAt = now
	} else if position > p.Position || p.rate == 0 {
		p.rateAt = now
	}
	if position > p.Position {
		p.Position = position
	}
	if end >= 0 {
		p.LatestEnd = end
	}
	p.failed = false
	p.LastSeen = now
	t.settle(p)
	return Transition{ID: id, From: from, To: p.Phase}, from != p.Phase
}

// Fail records that fetching the partition failed: no fresh evidence.
func (t *Tracker) Fail(id ID, now time.Time) (Transition, bool) {
	p := t.parts[id]
	if p == nil {
		return Transition{}, false
	}
	from := p.Phase
	p.failed = true
	t.settle(p)
	return Transition{ID: id, From: from, To: p.Phase}, from != p.Phase
}

// Tick applies staleness at time now and returns the partitions that changed.
func (t *Tracker) Tick(now time.Time) []Transition {
	if t.opts.StaleAfter <= 0 {
		return nil
	}
	var out []Transition
	for _, p := range t.parts {
		if p.Phase == Unknown || now.Sub(p.LastSeen) <= t.opts.StaleAfter {
			continue
		}
		from := p.Phase
		p.Phase = Unknown
		out = append(out, Transition{ID: p.ID, From: from, To: Unknown})
	}
	sortTransitions(out)
	return out
}

// settle recomputes p.Phase from its fields (invariants 1–4).
func (t *Tracker) settle(p *part) {
	target := p.SnapshotEnd
	if !p.replayDone && p.LatestEnd < target {
		target = p.LatestEnd // the log was truncated below the snapshot
	}
	if p.replayDone {
		target = p.LatestEnd
	}
	if !p.replayDone && p.Position >= target {
		p.replayDone = true
		target = max(p.LatestEnd, target)
	}
	p.Behind = max(0, target-p.Position)
	switch {
	case p.failed:
		p.Phase = Unknown
	case !p.replayDone:
		p.Phase = Replaying
	case p.Position >= p.LatestEnd:
		p.Phase = CaughtUp
	default:
		p.Phase = Behind
	}
}

// Phase returns the phase of a partition, and false if it is not assigned.
func (t *Tracker) Phase(id ID) (Phase, bool) {
	p := t.parts[id]
	if p == nil {
		return Unknown, false
	}
	return p.Phase, true
}

// Status returns the state of a partition.
func (t *Tracker) Status(id ID) (Status, bool) {
	p := t.parts[id]
	if p == nil {
		return Status{}, false
	}
	return p.Status, true
}

// Len is the number of assigned partitions.
func (t *Tracker) Len() int { return len(t.parts) }

// ReplayDone reports whether every assigned partition has reached its
// start-up end offset. This is the end condition of a bounded run.
func (t *Tracker) ReplayDone() bool {
	for _, p := range t.parts {
		if !p.replayDone {
			return false
		}
	}
	return true
}

// Statuses returns every partition's status, sorted by input and partition.
func (t *Tracker) Statuses() []Status {
	out := make([]Status, 0, len(t.parts))
	for _, p := range t.parts {
		out = append(out, p.Status)
	}
	sort.Slice(out, func(i, j int) bool { return lessID(out[i].ID, out[j].ID) })
	return out
}

func lessID(a, b ID) bool {
	if a.Input != b.Input {
		return a.Input < b.Input
	}
	return a.Partition < b.Partition
}

func sortTransitions(ts []Transition) {
	sort.Slice(ts, func(i, j int) bool { return lessID(ts[i].ID, ts[j].ID) })
}
