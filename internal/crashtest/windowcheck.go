package crashtest

import (
	"cmp"
	"encoding/json"
	"fmt"
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

// CheckWindows checks the results of tumbling windows of size ms keyed by
// the records' key, aggregated by WindowAggregates, against an oracle that
// computes every window from the produced records in one batch: every
// window present exactly once, with the oracle's values, none that the
// oracle has not, and in the order of their ends, ties by key. It returns
// the problems.
func CheckWindows(produced []Produced, results []WindowResult, size int64) []string {
	type id struct {
		key   string
		start int64
	}
	want := map[id]*WindowResult{}
	for _, p := range produced {
		k := id{p.Key, p.TS - ((p.TS%size)+size)%size}
		w := want[k]
		if w == nil {
			w = &WindowResult{Key: p.Key, Start: rfc3339(k.start), End: rfc3339(k.start + size), MinTS: p.TS, MaxTS: p.TS}
			want[k] = w
		}
		w.Count++
		w.SumTS += p.TS
		w.MinTS, w.MaxTS = min(w.MinTS, p.TS), max(w.MaxTS, p.TS)
	}
	var problems []string
	seen := map[id]string{}
	var prev *WindowResult
	for i := range results {
		r := &results[i]
		start, err := time.Parse(time.RFC3339Nano, r.Start)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: start %q: %v", r.Where, r.Start, err))
			continue
		}
		k := id{r.Key, start.UnixMilli()}
		if at, dup := seen[k]; dup {
			problems = append(problems, fmt.Sprintf("%s: window %s %s emitted again (first at %s)", r.Where, r.Key, r.Start, at))
			continue
		}
		seen[k] = r.Where
		w := want[k]
		switch {
		case w == nil:
			problems = append(problems, fmt.Sprintf("%s: window %s %s has no record", r.Where, r.Key, r.Start))
		case r.End != w.End || r.Count != w.Count || r.SumTS != w.SumTS || r.MinTS != w.MinTS || r.MaxTS != w.MaxTS:
			problems = append(problems, fmt.Sprintf("%s: window %s %s: %+v, the oracle's %+v", r.Where, r.Key, r.Start, *r, *w))
		}
		if prev != nil && cmp.Or(cmp.Compare(prev.End, r.End), cmp.Compare(strconv.Quote(prev.Key), strconv.Quote(r.Key))) > 0 {
			problems = append(problems, fmt.Sprintf("%s: window %s ending %s after %s ending %s (%s): not in the order of their ends, ties by key",
				r.Where, r.Key, r.End, prev.Key, prev.End, prev.Where))
		}
		prev = r
	}
	var missing []id
	for k := range want {
		if _, ok := seen[k]; !ok {
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
	return problems
}

func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
