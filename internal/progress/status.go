package progress

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/watermark"
)

// Status is the /status document.
type Status struct {
	Watermark   string      `json:"watermark"`    // RFC 3339, or "-inf" before any evidence
	WatermarkMs *int64      `json:"watermark_ms"` // null at −∞
	ReplayDone  bool        `json:"replay_done"`
	Counters    Counters    `json:"counters"`
	Holders     []Holder    `json:"holders"`
	Partitions  []Partition `json:"partitions"`
	Progress    []Input     `json:"progress"`
	Late        []Late      `json:"late"`
}

// Counters are the pipeline's record counters.
type Counters struct {
	In          int64 `json:"in"`
	Out         int64 `json:"out"`
	Filtered    int64 `json:"filtered"`
	Timeless    int64 `json:"timeless"`
	Dead        int64 `json:"dead_lettered"`
	Skipped     int64 `json:"skipped"`
	Parked      int64 `json:"parked"`
	ParkedBytes int64 `json:"parked_bytes"`
	Checkpoints int64 `json:"checkpoints"`
}

// Holder is a partition holding the watermark, and why.
type Holder struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	State        string `json:"state"`  // its catch-up phase: why it holds
	Behind       int64  `json:"behind"` // offsets still to read
	MaxEventTime string `json:"max_event_time"`
	Contribution string `json:"contribution"` // its bound on the watermark
}

// Partition is the catch-up state of one partition.
type Partition struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Phase       string `json:"phase"`
	Position    int64  `json:"position"`
	SnapshotEnd int64  `json:"snapshot_end"`
	LatestEnd   int64  `json:"latest_end"`
	Behind      int64  `json:"behind"`
}

// Input is the replay progress of one input.
type Input struct {
	Input      string  `json:"input"`
	Partitions int     `json:"partitions"`
	CaughtUp   int     `json:"caught_up"`
	Total      int64   `json:"total"`
	Remaining  int64   `json:"remaining"`
	Percent    float64 `json:"percent"`
	Rate       float64 `json:"rate"`        // offsets per second
	ETASeconds float64 `json:"eta_seconds"` // −1 when unknown
}

// Late counts the late records of one partition.
type Late struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Count        int64  `json:"count"`
	Emitted      int64  `json:"emitted"`
	DeadLettered int64  `json:"dead_lettered"`
	Dropped      int64  `json:"dropped"`
	MaxLateByMs  int64  `json:"max_late_by_ms"`
}

// FormatTime spells an event time in ms: RFC 3339, or ±inf.
func FormatTime(ms int64) string {
	switch ms {
	case watermark.MinTime:
		return "-inf"
	case watermark.MaxTime:
		return "+inf"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// FromStats builds the status document from a stats snapshot.
func FromStats(s signalbox.Stats) Status {
	st := Status{
		Watermark:  FormatTime(s.Watermark),
		ReplayDone: s.ReplayDone,
		Counters: Counters{In: s.In, Out: s.Out, Filtered: s.Filtered, Timeless: s.Timeless, Dead: s.Dead,
			Skipped: s.Skipped, Parked: int64(s.Parked), ParkedBytes: s.ParkedB, Checkpoints: s.Checkpoints},
		Holders:    []Holder{},
		Partitions: []Partition{},
		Progress:   []Input{},
		Late:       []Late{},
	}
	if s.Watermark != watermark.MinTime {
		wm := s.Watermark
		st.WatermarkMs = &wm
	}
	for _, h := range s.Holders {
		st.Holders = append(st.Holders, Holder{Topic: h.Input, Partition: h.Partition, State: h.State, Behind: h.Behind,
			MaxEventTime: FormatTime(h.MaxEventTime), Contribution: FormatTime(h.Contribution)})
	}
	for _, p := range s.Partitions {
		st.Partitions = append(st.Partitions, Partition{Topic: p.Input, Partition: p.Partition, Phase: p.Phase.String(),
			Position: p.Position, SnapshotEnd: p.SnapshotEnd, LatestEnd: p.LatestEnd, Behind: p.Behind})
	}
	for _, p := range s.Progress {
		st.Progress = append(st.Progress, Input{Input: p.Input, Partitions: p.Partitions, CaughtUp: p.CaughtUp,
			Total: p.Total, Remaining: p.Remaining, Percent: 100 * p.Fraction, Rate: p.Rate, ETASeconds: etaSeconds(p.ETA)})
	}
	for tp, l := range s.Late {
		st.Late = append(st.Late, Late{Topic: tp.Topic, Partition: tp.Partition, Count: l.Count, Emitted: l.Emitted,
			DeadLettered: l.DeadLettered, Dropped: l.Dropped, MaxLateByMs: l.MaxLateBy})
	}
	slices.SortFunc(st.Partitions, func(a, b Partition) int { return cmpTP(a.Topic, a.Partition, b.Topic, b.Partition) })
	slices.SortFunc(st.Late, func(a, b Late) int { return cmpTP(a.Topic, a.Partition, b.Topic, b.Partition) })
	return st
}

func cmpTP(t1 string, p1 int32, t2 string, p2 int32) int {
	if c := strings.Compare(t1, t2); c != 0 {
		return c
	}
	return int(p1) - int(p2)
}

func etaSeconds(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return d.Seconds()
}

// WriteText writes s for people: the watermark and who holds it, then each
// partition's phase, then late counts.
func (s Status) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "watermark\t%s\n", s.Watermark)
	replay := "in progress"
	if s.ReplayDone {
		replay = "done"
	}
	c := s.Counters
	fmt.Fprintf(tw, "replay\t%s\n", replay)
	fmt.Fprintf(tw, "records\tin %d, out %d, parked %d, dead-lettered %d, timeless %d\n", c.In, c.Out, c.Parked, c.Dead, c.Timeless)
	if len(s.Holders) == 0 {
		fmt.Fprintf(tw, "held by\tnobody: the processing-time clock drives the watermark\n")
	}
	for i, h := range s.Holders {
		label := ""
		if i == 0 {
			label = "held by"
		}
		fmt.Fprintf(tw, "%s\t%s/%d\t%s, %d behind, max event time %s, bound %s\n", label, h.Topic, h.Partition, h.State, h.Behind, h.MaxEventTime, h.Contribution)
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "PARTITION\tPHASE\tPOSITION\tSNAPSHOT END\tLATEST END\tBEHIND\n")
	for _, p := range s.Partitions {
		fmt.Fprintf(tw, "%s/%d\t%s\t%d\t%d\t%d\t%d\n", p.Topic, p.Partition, p.Phase, p.Position, p.SnapshotEnd, p.LatestEnd, p.Behind)
	}
	if len(s.Late) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "LATE\tCOUNT\tEMITTED\tDEAD-LETTERED\tDROPPED\tMAX LATE BY\n")
		for _, l := range s.Late {
			fmt.Fprintf(tw, "%s/%d\t%d\t%d\t%d\t%d\t%v\n", l.Topic, l.Partition, l.Count, l.Emitted, l.DeadLettered, l.Dropped, time.Duration(l.MaxLateByMs)*time.Millisecond)
		}
	}
	return tw.Flush()
}
