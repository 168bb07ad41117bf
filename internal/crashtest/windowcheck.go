package crashtest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// WindowAggregates is the aggregate section of the crash tests' window job,
// whose results CheckWindows checks.
const WindowAggregates = "    aggregate:\n      count: count()\n      sum_ts: sum(value.ts)\n      min_ts: min(value.ts)\n      max_ts: max(value.ts)\n"

// unwrap returns the value of an envelope (a JSONL line), or b itself
// when it is no envelope (a bare Kafka value).
func unwrap(b []byte, where string) ([]byte, error) {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s: not JSON: %.120s", where, b)
	}
	if e.Topic != nil {
		return e.Value, nil
	}
	return b, nil
}

// WindowResult is one window result read back from a sink.
type WindowResult struct {
	Key   string `json:"key"`
	Start string `json:"start"`
	End   string `json:"end"`
	Count int64  `json:"count"`
	SumTS int64  `json:"sum_ts"`
	MinTS int64  `json:"min_ts"`
	MaxTS int64  `json:"max_ts"`
	Where string `json:"-"`
	// Source is the output it was read from (ParseWindowJSONL: the file's
	// name): results of different sources, such as two members' sinks,
	// have no order between them.
	Source string `json:"-"`
}

// ParseWindowResult reads a window result: a bare one (a Kafka value) or
// the value of an envelope (a JSONL line).
func ParseWindowResult(b []byte, where string) (WindowResult, error) {
	b, err := unwrap(b, where)
	if err != nil {
		return WindowResult{}, err
	}
	var r WindowResult
	if err := json.Unmarshal(b, &r); err != nil || r.Key == "" || r.Start == "" {
		return WindowResult{}, fmt.Errorf("%s: not a window result: %.200s", where, b)
	}
	r.Where = where
	return r, nil
}

// WindowMode says what CheckWindows demands beyond the oracle's values.
type WindowMode struct {
	// AtLeastOnce: a window may be emitted again, as an exact copy of its
	// first emission (an at-least-once sink after a crash or a task move);
	// a repeat with other values is still a problem. The order is then
	// checked on first emissions. Otherwise every window exactly once.
	AtLeastOnce bool
	// PerTask: the order of their ends is checked within each task only
	// (a group: each task emits its own windows at its own watermark), the
	// task of a key being the partition number its records are in; a key
	// whose records are in two partition numbers is a problem (a group's
	// window keyed by the Kafka key needs each key in one task).
	// Otherwise the whole output is in the order of the windows' ends.
	PerTask bool
	// Delay is the job's delay bound in ms. A window holding a live record
	// its producer delayed beyond it (acknowledged more than Delay after
	// its event time) is not checked: the watermark may have passed that
	// record before it was in the log, and it is then late, in no window
	// (counted in the returned skipped). 0: every window is checked.
	Delay int64
	// Late holds the IDs of records a raw output flagged late (late by
	// timing: the watermark passed them before they were in the log, or
	// stale evidence); their windows are not checked either.
	Late map[string]bool
	// Every is the step of hopping windows, ms: windows [k·Every,
	// k·Every + size). 0: tumbling windows of size.
	Every int64
}

// CheckWindows checks the results of tumbling windows of size ms (or
// hopping ones: WindowMode.Every) keyed by the records' key, aggregated by WindowAggregates, against an oracle that
// computes every window from the produced records in one batch: every
// window present exactly once (or, AtLeastOnce, at least once and every
// repeat an exact copy), with the oracle's values, none that the oracle has
// not, and in the order of their ends, ties by key (PerTask: within each
// task). It returns the problems, and how many windows it did not check
// (WindowMode.Delay).
func CheckWindows(produced []Produced, results []WindowResult, size int64, mode WindowMode) (problems []string, skipped int) {
	type id struct {
		key   string
		start int64
	}
	want := map[id]*WindowResult{}
	unsure := map[id]bool{}
	task := map[string]int32{}
	every := cmp.Or(mode.Every, size)
	for _, p := range produced {
		// The earliest start with start + size > TS, then every window
		// starting at or before TS.
		for start := floorDiv(p.TS-size, every)*every + every; start <= p.TS; start += every {
			k := id{p.Key, start}
			w := want[k]
			if w == nil {
				w = &WindowResult{Key: p.Key, Start: rfc3339(start), End: rfc3339(start + size), MinTS: p.TS, MaxTS: p.TS}
				want[k] = w
			}
			w.Count++
			w.SumTS += p.TS
			w.MinTS, w.MaxTS = min(w.MinTS, p.TS), max(w.MaxTS, p.TS)
			if p.delayedBeyond(mode.Delay) || mode.Late[p.ID] {
				unsure[k] = true
			}
		}
		if t, ok := task[p.Key]; !ok {
			task[p.Key] = p.Partition
		} else if mode.PerTask && t != p.Partition && t >= 0 {
			problems = append(problems, fmt.Sprintf("key %s has records in partitions %d and %d: in no one task (the test's data breaks the group's premise)", p.Key, t, p.Partition))
			task[p.Key] = -1
		}
	}
	seen := map[id]*WindowResult{}
	type stream struct {
		source string
		task   int32 // -1: every task
	}
	prev := map[stream]*WindowResult{} // the last first emission
	for i := range results {
		r := &results[i]
		start, err := time.Parse(time.RFC3339Nano, r.Start)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: start %q: %v", r.Where, r.Start, err))
			continue
		}
		k := id{r.Key, start.UnixMilli()}
		if first, dup := seen[k]; dup {
			switch {
			case !mode.AtLeastOnce:
				problems = append(problems, fmt.Sprintf("%s: window %s %s emitted again (first at %s)", r.Where, r.Key, r.Start, first.Where))
			case !sameResult(*first, *r):
				problems = append(problems, fmt.Sprintf("%s: window %s %s emitted again with other values: %+v, first at %s %+v", r.Where, r.Key, r.Start, *r, first.Where, *first))
			}
			continue
		}
		seen[k] = r
		w := want[k]
		switch {
		case w == nil:
			problems = append(problems, fmt.Sprintf("%s: window %s %s has no record", r.Where, r.Key, r.Start))
		case unsure[k]:
		case !sameResult(*w, *r):
			problems = append(problems, fmt.Sprintf("%s: window %s %s: %+v, the oracle's %+v", r.Where, r.Key, r.Start, *r, *w))
		}
		t := stream{r.Source, -1}
		if mode.PerTask {
			t.task = task[r.Key]
		}
		if p := prev[t]; p != nil && cmp.Or(cmp.Compare(endMs(p), endMs(r)), cmp.Compare(strconv.Quote(p.Key), strconv.Quote(r.Key))) > 0 {
			problems = append(problems, fmt.Sprintf("%s: window %s ending %s after %s ending %s (%s): not in the order of their ends, ties by key",
				r.Where, r.Key, r.End, p.Key, p.End, p.Where))
		}
		prev[t] = r
	}
	var missing []id
	for k := range want {
		if _, ok := seen[k]; !ok && !unsure[k] {
			missing = append(missing, k)
		}
	}
	slices.SortFunc(missing, func(a, b id) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.key, b.key)) })
	for i, k := range missing {
		if i == 10 {
			problems = append(problems, fmt.Sprintf("... and %d more windows missing", len(missing)-10))
			break
		}
		problems = append(problems, fmt.Sprintf("window %s %s missing", k.key, rfc3339(k.start)))
	}
	return problems, len(unsure)
}

// endMs is r's end, Unix ms (RFC 3339 strings do not sort as times: "…:01Z"
// is after "…:01.5Z"); an end that does not parse sorts first.
func endMs(r *WindowResult) int64 {
	end, err := time.Parse(time.RFC3339Nano, r.End)
	if err != nil {
		return math.MinInt64
	}
	return end.UnixMilli()
}

// sameResult reports whether two results have the same window and values.
func sameResult(a, b WindowResult) bool {
	a.Where, b.Where, a.Source, b.Source = "", "", "", ""
	return a == b
}

// ParseWindowJSONL reads a JSONL window sink's file, named name (the
// results' Source): one envelope a line, whose value is a window result. A
// line that does not parse is a problem.
func ParseWindowJSONL(data []byte, name string) (results []WindowResult, problems []string) {
	lines := bytes.Split(data, []byte{'\n'})
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	} else if n > 0 {
		problems = append(problems, fmt.Sprintf("%s: the file does not end with a newline: last line %.120q", name, lines[n-1]))
	}
	for i, l := range lines {
		r, err := ParseWindowResult(l, fmt.Sprintf("%s line %d", name, i+1))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		r.Source = name
		results = append(results, r)
	}
	return results, problems
}

// floorDiv is a / b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
