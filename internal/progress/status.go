package progress

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/version"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/tables"
	"github.com/signalbox/signalbox/watermark"
)

// Status is the /status document.
type Status struct {
	Watermark   string       `json:"watermark"`    // RFC 3339, or "-inf" before any evidence
	WatermarkMs *int64       `json:"watermark_ms"` // null at −∞
	ReplayDone  bool         `json:"replay_done"`
	Counters    Counters     `json:"counters"`
	Holders     []Holder     `json:"holders"`
	Partitions  []Partition  `json:"partitions"`
	Progress    []Input      `json:"progress"`
	Late        []Late       `json:"late"`
	Sinks       []Sink       `json:"sinks"`
	Build       version.Info `json:"build"` // the serving binary's version, commit and Go version
	// SchemaHolds are the partitions held because a record's schema cannot
	// be fetched yet (signalbox.Stats.SchemaHolds).
	SchemaHolds []SchemaHold `json:"schema_holds"`
	// Group is the consumer group the job reads as a member of, "" without
	// one: nothing is committed then (but by a checkpoint sink that commits
	// the offsets to a group of its own), and WriteText shows no commits,
	// rebalances or COMMITTED column.
	Group string `json:"group"`
	// Windows is each window's activity (signalbox.Stats.Windows), in the
	// job file's order; omitted without windows.
	Windows []Window `json:"windows,omitempty"`
	// Tables is each table's size (tables.Table.Size), by name: the
	// admin server sets it (TablesOf) for a job with tables; omitted
	// without.
	Tables []Table `json:"tables,omitempty"`
}

// Table is one table's size now.
type Table struct {
	Name     string `json:"name"`
	Keys     int64  `json:"keys"`
	Versions int64  `json:"versions"` // versions kept
	Bytes    int64  `json:"bytes"`    // their values'
	// DiskBytes and MemoryBytes are a table's in pebble (state.dir),
	// null for a table in memory.
	DiskBytes   *int64 `json:"disk_bytes"`
	MemoryBytes *int64 `json:"memory_bytes"`
	// Beyond counts the lookups older than its history.
	Beyond int64 `json:"lookups_beyond_history"`
}

// TablesOf is the status of tables of sizes ss.
func TablesOf(ss []tables.Size) []Table {
	var out []Table
	for _, s := range ss {
		t := Table{Name: s.Name, Keys: s.Keys, Versions: s.Versions, Bytes: s.Bytes, Beyond: s.Beyond}
		if s.Pebble {
			t.DiskBytes, t.MemoryBytes = &s.DiskBytes, &s.MemoryBytes
		}
		out = append(out, t)
	}
	return out
}

// Window is one window's activity.
type Window struct {
	Name    string `json:"name"`
	Open    int64  `json:"open"`    // windows open now
	Keys    int    `json:"keys"`    // keys with an open window
	Results int64  `json:"results"` // results emitted
	Late    int64  `json:"late"`    // records late for one of their windows
	// StateBytes is the size of the window's state, about
	// (keyed.Windows.StateBytes), wherever it lives.
	StateBytes int64 `json:"state_bytes"`
}

// SchemaHold is one partition held for its schema registry.
type SchemaHold struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`  // the held record's
	Records   int    `json:"records"` // records waiting
	Since     string `json:"since"`   // RFC 3339
	Attempts  int    `json:"attempts"`
	Error     string `json:"error"` // the last, credentials removed
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
	Spilled     int64 `json:"spilled"`     // parked records held only on disk
	StoreBytes  int64 `json:"store_bytes"` // disk space of the durable store
	Commits     int64 `json:"commits"`
	// ExpressionFailed counts the records dead-lettered by a failing
	// processing expression, by its path in the job file.
	ExpressionFailed map[string]int64 `json:"expression_failed,omitempty"`
	CommitFails      int64            `json:"commit_failures"`
	Rebalances       int64            `json:"rebalances"`
	Future           int64            `json:"future"` // too far ahead of the evidence clock (max_future)
}

// Sink is what one sink did.
type Sink struct {
	Name       string `json:"name"`
	Records    int64  `json:"records"`
	Errors     int64  `json:"errors"`
	Retries    int64  `json:"retries"`
	Rejected   int64  `json:"rejected"` // refused as bad data, dead-lettered
	OutOfOrder int64  `json:"out_of_order"`
}

// Holder is a partition holding the watermark, and why.
type Holder struct {
	Topic        string  `json:"topic"`
	Partition    int32   `json:"partition"`
	State        string  `json:"state"`  // its catch-up phase: why it holds
	Behind       int64   `json:"behind"` // offsets still to read
	MaxEventTime string  `json:"max_event_time"`
	Contribution string  `json:"contribution"` // its bound on the watermark
	Paused       bool    `json:"paused"`       // by alignment or the memory bound
	ETASeconds   float64 `json:"eta_seconds"`  // its input's replay ETA; −1 when unknown or not replaying
	LastSeen     string  `json:"last_seen"`    // its last fresh evidence (RFC 3339), "" when never
	Why          string  `json:"why"`          // the reason, for people
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
	Paused      bool   `json:"paused"`
	Committed   *int64 `json:"committed"` // the last committed offset; null before any commit
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
		Group:      s.Group,
		Counters: Counters{In: s.In, Out: s.Out, Filtered: s.Filtered, Timeless: s.Timeless, Dead: s.Dead,
			Skipped: s.Skipped, Parked: int64(s.Parked), ParkedBytes: s.ParkedB, Checkpoints: s.Checkpoints,
			Spilled: int64(s.Spilled), StoreBytes: s.StoreBytes, Commits: s.Delivery.Commits,
			CommitFails: s.Delivery.CommitFailures, Rebalances: s.Rebalances, Future: s.Future, ExpressionFailed: s.ExpressionFailed},
		Holders:    []Holder{},
		Partitions: []Partition{},
		Progress:   []Input{},
		Late:       []Late{},
		Sinks:      []Sink{},
		Windows:    windowsOf(s.Windows),
		Build:      version.Get(),
	}
	st.SchemaHolds = make([]SchemaHold, 0, len(s.SchemaHolds))
	for _, h := range s.SchemaHolds {
		st.SchemaHolds = append(st.SchemaHolds, SchemaHold{Topic: h.Topic, Partition: h.Partition, Offset: h.Offset, Records: h.Records,
			Since: h.Since.UTC().Format(time.RFC3339Nano), Attempts: h.Attempts, Error: h.Err})
	}
	if s.Watermark != watermark.MinTime {
		wm := s.Watermark
		st.WatermarkMs = &wm
	}
	paused := map[record.TopicPartition]bool{}
	for _, tp := range s.Paused {
		paused[tp] = true
	}
	seen := map[record.TopicPartition]time.Time{}
	for _, p := range s.Partitions {
		tp := record.TopicPartition{Topic: p.Input, Partition: p.Partition}
		seen[tp] = p.LastSeen
		part := Partition{Topic: p.Input, Partition: p.Partition, Phase: p.Phase.String(), Position: p.Position,
			SnapshotEnd: p.SnapshotEnd, LatestEnd: p.LatestEnd, Behind: p.Behind, Paused: paused[tp]}
		st.Partitions = append(st.Partitions, part)
	}
	committed := map[record.TopicPartition]int64{}
	for _, c := range s.Delivery.Committed {
		committed[c.TopicPartition] = c.Offset
	}
	for i := range st.Partitions {
		p := &st.Partitions[i]
		if o, ok := committed[record.TopicPartition{Topic: p.Topic, Partition: p.Partition}]; ok {
			p.Committed = &o
		}
	}
	eta := map[string]float64{}
	for _, p := range s.Progress {
		eta[p.Input] = etaSeconds(p.ETA)
	}
	for _, h := range s.Holders {
		tp := record.TopicPartition{Topic: h.Input, Partition: h.Partition}
		hd := Holder{Topic: h.Input, Partition: h.Partition, State: h.State, Behind: h.Behind,
			MaxEventTime: FormatTime(h.MaxEventTime), Contribution: FormatTime(h.Contribution), Paused: paused[tp], ETASeconds: -1}
		if h.State == catchup.Replaying.String() {
			if e, ok := eta[h.Input]; ok {
				hd.ETASeconds = e
			}
		}
		if t := seen[tp]; !t.IsZero() {
			hd.LastSeen = t.UTC().Format(time.RFC3339)
		}
		hd.Why = why(hd, h.MaxEventTime == watermark.MinTime)
		st.Holders = append(st.Holders, hd)
	}
	for _, k := range s.Sinks {
		st.Sinks = append(st.Sinks, Sink{Name: k.Name, Records: k.Records, Errors: k.Errors, Retries: k.Retries, Rejected: k.Rejected, OutOfOrder: k.OutOfOrder})
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

// why explains, for people, why a partition holds the watermark.
func why(h Holder, nothing bool) string {
	var b strings.Builder
	switch h.State {
	case catchup.Replaying.String():
		fmt.Fprintf(&b, "replaying history: %d offsets to its start-up end offset", h.Behind)
		if h.ETASeconds >= 0 {
			fmt.Fprintf(&b, ", input done in about %s", eta(time.Duration(h.ETASeconds*float64(time.Second))))
		}
	case catchup.Behind.String():
		fmt.Fprintf(&b, "live but behind: %d offsets to the latest end offset", h.Behind)
	case catchup.Unknown.String():
		b.WriteString("no fresh evidence: its fetches fail or its evidence is stale")
		if h.LastSeen != "" {
			b.WriteString(" (last seen " + h.LastSeen + ")")
		}
	default:
		b.WriteString(h.State)
	}
	if nothing {
		b.WriteString("; nothing delivered yet, so it holds the watermark at -inf")
	}
	if h.Paused {
		b.WriteString("; paused (alignment or the parked limit): it resumes when the watermark catches up")
	}
	return b.String()
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

// WriteText writes s for people: the watermark and who holds it and why,
// the parked set, then each partition, the sinks and late counts.
func (s Status) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "watermark\t%s\n", s.Watermark)
	replay := "in progress"
	if s.ReplayDone {
		replay = "done"
	}
	if !s.ReplayDone {
		replay += replaySummary(s.Progress)
	}
	c := s.Counters
	fmt.Fprintf(tw, "replay\t%s\n", replay)
	fmt.Fprintf(tw, "records\tin %d, out %d, parked %d, dead-lettered %d (%d too far in the future), filtered %d, timeless %d\n", c.In, c.Out, c.Parked, c.Dead, c.Future, c.Filtered, c.Timeless)
	for _, expr := range slices.Sorted(maps.Keys(c.ExpressionFailed)) {
		fmt.Fprintf(tw, "expression failed\t%s: %d records dead-lettered\n", expr, c.ExpressionFailed[expr])
	}
	for _, w := range s.Windows {
		fmt.Fprintf(tw, "window\t%s: %d open, %d keys, %s of state, %d results, %d late records\n", w.Name, w.Open, w.Keys, bytesText(w.StateBytes), w.Results, w.Late)
	}
	for _, t := range s.Tables {
		where := "in memory"
		if t.DiskBytes != nil && t.MemoryBytes != nil {
			where = fmt.Sprintf("in pebble: %s on disk, %s in memory", bytesText(*t.DiskBytes), bytesText(*t.MemoryBytes))
		}
		fmt.Fprintf(tw, "table\t%s: %d keys, %d versions, %s of values, %s; %d lookups beyond its history\n", t.Name, t.Keys, t.Versions, bytesText(t.Bytes), where, t.Beyond)
	}
	fmt.Fprintf(tw, "parked\t%d records, %s in memory, %d spilled to disk, store %s\n", c.Parked, bytesText(c.ParkedBytes), c.Spilled, bytesText(c.StoreBytes))
	late := Late{}
	for _, l := range s.Late {
		late.Count, late.Emitted, late.DeadLettered, late.Dropped = late.Count+l.Count, late.Emitted+l.Emitted, late.DeadLettered+l.DeadLettered, late.Dropped+l.Dropped
		late.MaxLateByMs = max(late.MaxLateByMs, l.MaxLateByMs)
	}
	fmt.Fprintf(tw, "late\t%d (emitted %d, dead-lettered %d, dropped %d), most late by %v\n", late.Count, late.Emitted, late.DeadLettered, late.Dropped, time.Duration(late.MaxLateByMs)*time.Millisecond)
	switch {
	case s.Group != "":
		fmt.Fprintf(tw, "delivery\t%d checkpoints, %d commits (%d failed), %d rebalances of group %s\n", c.Checkpoints, c.Commits, c.CommitFails, c.Rebalances, s.Group)
	case s.committing(): // by the checkpoint sink, in its transactions
		fmt.Fprintf(tw, "delivery\t%d checkpoints, %d commits (%d failed)\n", c.Checkpoints, c.Commits, c.CommitFails)
	default:
		fmt.Fprintf(tw, "delivery\t%d checkpoints; no consumer group, so no offsets are committed\n", c.Checkpoints)
	}
	for _, h := range s.SchemaHolds {
		fmt.Fprintf(tw, "schema hold\t%s/%d at offset %d: %d records wait for the schema registry since %s (%d attempts): %s\n",
			h.Topic, h.Partition, h.Offset, h.Records, h.Since, h.Attempts, h.Error)
	}
	if b := s.Build; b.Version != "" {
		fmt.Fprintf(tw, "build\tsignalbox %s, commit %s, %s\n", b.Version, b.Commit, b.GoVersion)
	}
	if len(s.Holders) == 0 {
		fmt.Fprintf(tw, "held by\tnobody: every partition is caught up, the processing-time clock drives the watermark\n")
	}
	if len(s.Holders) > 0 {
		h := s.Holders[0]
		fmt.Fprintf(tw, "held by\t%s/%d  %s, %d behind, bound %s", h.Topic, h.Partition, h.State, h.Behind, h.Contribution)
		if n := len(s.Holders) - 1; n > 0 {
			fmt.Fprintf(tw, " (and %d more partitions holding)", n)
		}
		fmt.Fprintln(tw)
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "HOLDER\tPHASE\tBEHIND\tETA\tPAUSED\tMAX EVENT TIME\tBOUND\tWHY\n")
		for _, h := range s.Holders {
			fmt.Fprintf(tw, "%s/%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", h.Topic, h.Partition, h.State, h.Behind,
				eta(time.Duration(h.ETASeconds*float64(time.Second))), yesNo(h.Paused), h.MaxEventTime, h.Contribution, h.Why)
		}
	}
	fmt.Fprintln(tw)
	committedCol := ""
	if s.committing() {
		committedCol = "\tCOMMITTED"
	}
	fmt.Fprintf(tw, "PARTITION\tPHASE\tPOSITION\tSNAPSHOT END\tLATEST END\tBEHIND\tPAUSED%s\n", committedCol)
	for _, p := range s.Partitions {
		committed := ""
		if s.committing() {
			committed = "\t-"
			if p.Committed != nil {
				committed = "\t" + strconv.FormatInt(*p.Committed, 10)
			}
		}
		fmt.Fprintf(tw, "%s/%d\t%s\t%d\t%d\t%d\t%d\t%s%s\n", p.Topic, p.Partition, p.Phase, p.Position, p.SnapshotEnd, p.LatestEnd, p.Behind, yesNo(p.Paused), committed)
	}
	if len(s.Sinks) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "SINK\tRECORDS\tERRORS\tRETRIES\tREJECTED\tOUT OF ORDER\n")
		for _, k := range s.Sinks {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", k.Name, k.Records, k.Errors, k.Retries, k.Rejected, k.OutOfOrder)
		}
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

// committing reports whether the job commits offsets: as a member of a
// consumer group, or in its checkpoint sink's transactions (a Kafka sink's
// own group) once one committed.
func (s Status) committing() bool {
	return s.Group != "" || s.Counters.Commits+s.Counters.CommitFails > 0
}

// replaySummary sums the inputs' progress: offsets read, partitions caught
// up, the overall ETA (the longest), and the slowest input.
func replaySummary(inputs []Input) string {
	var total, remaining int64
	var parts, caught int
	etaMax, slowest := 0.0, -1
	for i, in := range inputs {
		total, remaining, parts, caught = total+in.Total, remaining+in.Remaining, parts+in.Partitions, caught+in.CaughtUp
		if in.Remaining > 0 && (etaMax >= 0 && in.ETASeconds > etaMax || in.ETASeconds < 0) {
			etaMax = in.ETASeconds
		}
		if slowest < 0 || in.Percent < inputs[slowest].Percent {
			slowest = i
		}
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * (1 - float64(remaining)/float64(total))
	}
	out := fmt.Sprintf(", %.1f%% of %d offsets, %d/%d partitions caught up, ETA %s", pct, total, caught, parts, eta(time.Duration(etaMax*float64(time.Second))))
	if slowest >= 0 && len(inputs) > 1 {
		in := inputs[slowest]
		out += fmt.Sprintf("; slowest input %s at %.1f%%", in.Input, in.Percent)
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// bytesText spells n bytes with a binary unit.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// windowsOf is the status of the windows ws.
func windowsOf(ws []signalbox.WindowStats) []Window {
	var out []Window
	for _, w := range ws {
		out = append(out, Window{Name: w.Name, Open: w.Open, Keys: w.Keys, Results: w.Results, Late: w.Late, StateBytes: w.StateBytes})
	}
	return out
}
