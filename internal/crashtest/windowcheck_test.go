package crashtest

import (
	"slices"
	"strings"
	"testing"
)

// TestCheckWindows: CheckWindows accepts the oracle's output, and names
// each way an output can break it: a window missing, repeated, with other
// values, unknown, or out of order; with AtLeastOnce, a repeat that is no
// exact copy; with PerTask, an order broken within a task, and a key in two
// tasks.
func TestCheckWindows(t *testing.T) {
	produced := []Produced{
		{Key: "a", TS: 1000}, {Key: "a", TS: 1999}, {Key: "b", TS: 1500, Partition: 1}, {Key: "a", TS: 2000},
	}
	a1 := WindowResult{Key: "a", Start: "1970-01-01T00:00:01Z", End: "1970-01-01T00:00:02Z", Count: 2, SumTS: 2999, MinTS: 1000, MaxTS: 1999, Where: "r1"}
	b1 := WindowResult{Key: "b", Start: "1970-01-01T00:00:01Z", End: "1970-01-01T00:00:02Z", Count: 1, SumTS: 1500, MinTS: 1500, MaxTS: 1500, Where: "r2"}
	a2 := WindowResult{Key: "a", Start: "1970-01-01T00:00:02Z", End: "1970-01-01T00:00:03Z", Count: 1, SumTS: 2000, MinTS: 2000, MaxTS: 2000, Where: "r3"}
	again := a1
	again.Where = "r4"
	wrong := a2
	wrong.Count = 2
	wrongAgain := again
	wrongAgain.MaxTS = 1998
	unknown := a2
	unknown.Key = "c"
	exactly, atLeast := WindowMode{}, WindowMode{AtLeastOnce: true}
	perTask, perTaskAtLeast := WindowMode{PerTask: true}, WindowMode{PerTask: true, AtLeastOnce: true}
	for name, mode := range map[string]WindowMode{"exactly once": exactly, "at least once": atLeast, "per task": perTask} {
		if p, _ := CheckWindows(produced, []WindowResult{a1, b1, a2}, 1000, mode); len(p) != 0 {
			t.Errorf("%s: the oracle's own output: %q", name, p)
		}
	}
	if p, _ := CheckWindows(produced, []WindowResult{a1, b1, a2, again}, 1000, atLeast); len(p) != 0 {
		t.Errorf("at least once: an exact copy after the others: %q", p)
	}
	// Per task, a's windows and b's (another partition) need no order
	// between them, and a copy of a1 after a2 is only a repeat.
	if p, _ := CheckWindows(produced, []WindowResult{a1, a2, again, b1}, 1000, perTaskAtLeast); len(p) != 0 {
		t.Errorf("per task, at least once: a's windows then b's: %q", p)
	}
	// Two sources (two members' sinks) need no order between them.
	a2other, a1other := a2, a1
	a2other.Source, a1other.Source = "m2", "m2"
	if p, _ := CheckWindows(produced, []WindowResult{a2other, a1, b1, a1other}, 1000, atLeast); len(p) != 0 {
		t.Errorf("at least once, two sources: %q", p)
	}
	for name, c := range map[string]struct {
		out  []WindowResult
		mode WindowMode
		want string
	}{
		"missing":                     {[]WindowResult{a1, a2}, exactly, "window b 1970-01-01T00:00:01Z missing"},
		"missing, at least once":      {[]WindowResult{a1, a2, a2}, atLeast, "window b 1970-01-01T00:00:01Z missing"},
		"repeated":                    {[]WindowResult{a1, b1, a2, a2}, exactly, "emitted again"},
		"repeated, per task":          {[]WindowResult{a1, b1, a2, again}, perTask, "emitted again"},
		"repeat differs":              {[]WindowResult{a1, b1, a2, wrongAgain}, atLeast, "emitted again with other values"},
		"other values":                {[]WindowResult{a1, b1, wrong}, exactly, "the oracle's"},
		"other values, at least once": {[]WindowResult{a1, b1, wrong, wrong}, atLeast, "the oracle's"},
		"unknown":                     {[]WindowResult{a1, b1, a2, unknown}, exactly, "has no record"},
		"out of order":                {[]WindowResult{b1, a1, a2}, exactly, "not in the order of their ends"},
		"end first":                   {[]WindowResult{a2, a1, b1}, exactly, "not in the order of their ends"},
		"end first, per task":         {[]WindowResult{a2, b1, a1}, perTask, "not in the order of their ends"},
		"end first, at least once":    {[]WindowResult{a2, a1, b1, a2}, atLeast, "not in the order of their ends"},
		"end first, one of sources":   {[]WindowResult{a2other, b1, a1other}, atLeast, "not in the order of their ends"},
	} {
		p, _ := CheckWindows(produced, c.out, 1000, c.mode)
		if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: problems %q, want one saying %q", name, p, c.want)
		}
	}
	split := append(slices.Clone(produced), Produced{Key: "b", TS: 1600, Partition: 2})
	b1split := b1
	b1split.Count, b1split.SumTS, b1split.MaxTS = 2, 3100, 1600
	if p, _ := CheckWindows(split, []WindowResult{a1, b1split, a2}, 1000, perTask); !slices.ContainsFunc(p, func(s string) bool {
		return strings.Contains(s, "key b has records in partitions 1 and 2")
	}) {
		t.Errorf("per task, key b in two partitions: problems %q, want one naming it", p)
	}
}

// TestCheckWindowsDelayed: with a delay bound, a window holding a live
// record acknowledged beyond it is not checked, present, absent or
// different, and is counted; a record acknowledged within the bound, or
// produced as history, leaves its window checked; so is a window holding
// a record flagged late (WindowMode.Late).
func TestCheckWindowsDelayed(t *testing.T) {
	produced := []Produced{
		{Key: "a", TS: 1000, Live: true, Acked: 1200},
		{Key: "b", TS: 1500, Live: true, Acked: 1500 + 600}, // beyond a 500 ms bound
		{Key: "c", TS: 1500, Acked: 1500 + 600},             // history: acknowledged before the job ran
	}
	a := WindowResult{Key: "a", Start: "1970-01-01T00:00:01Z", End: "1970-01-01T00:00:02Z", Count: 1, SumTS: 1000, MinTS: 1000, MaxTS: 1000}
	bWrong := WindowResult{Key: "b", Start: "1970-01-01T00:00:01Z", End: "1970-01-01T00:00:02Z", Count: 7}
	c := WindowResult{Key: "c", Start: "1970-01-01T00:00:01Z", End: "1970-01-01T00:00:02Z", Count: 1, SumTS: 1500, MinTS: 1500, MaxTS: 1500}
	mode := WindowMode{Delay: 500}
	for name, out := range map[string][]WindowResult{"absent": {a, c}, "different": {a, bWrong, c}} {
		if p, skipped := CheckWindows(produced, out, 1000, mode); len(p) != 0 || skipped != 1 {
			t.Errorf("b %s: problems %q, %d skipped; want none, 1 skipped", name, p, skipped)
		}
	}
	if p, _ := CheckWindows(produced, []WindowResult{a, bWrong, c}, 1000, WindowMode{}); len(p) == 0 {
		t.Errorf("without a delay bound, b's wrong result passes")
	}
	// A record flagged late leaves its window unchecked too.
	produced[0].ID = "a1"
	aWrong := a
	aWrong.Count = 9
	if p, skipped := CheckWindows(produced, []WindowResult{aWrong, c}, 1000, WindowMode{Delay: 500, Late: map[string]bool{"a1": true}}); len(p) != 0 || skipped != 2 {
		t.Errorf("a's record flagged late: problems %q, %d skipped; want none, 2 skipped", p, skipped)
	}
	if p, _ := CheckWindows(produced, []WindowResult{a}, 1000, mode); !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "window c") }) {
		t.Errorf("c, a history record's window, missing: problems %q, want one naming it", p)
	}
}

// TestParseWindowJSONL: envelopes of window results, one a line; a line
// that is no window result, and a last line without its newline, are
// problems.
func TestParseWindowJSONL(t *testing.T) {
	good := `{"topic":"w","key":"a","value":{"key":"a","start":"1970-01-01T00:00:01Z","end":"1970-01-01T00:00:02Z","count":2}}`
	rs, p := ParseWindowJSONL([]byte(good+"\n"+good+"\n"), "f")
	if len(p) != 0 || len(rs) != 2 || rs[1].Count != 2 || rs[1].Where != "f line 2" {
		t.Errorf("two good lines: %+v, problems %q", rs, p)
	}
	rs, p = ParseWindowJSONL([]byte(good+"\n{\"topic\":\"w\",\"value\":{}}\n"+good[:40]), "f")
	if len(rs) != 1 || len(p) != 3 {
		t.Errorf("a good line, a value that is no result, a cut line: %+v, problems %q; want 1 result, 3 problems", rs, p)
	}
}

// TestCheckWindowsHopping: with Every, a record is in every window of
// size that holds it, [k·Every, k·Every + size), and those windows are
// the oracle's.
func TestCheckWindowsHopping(t *testing.T) {
	produced := []Produced{{Key: "a", TS: 1000}, {Key: "a", TS: 1700}, {Key: "a", TS: -200}}
	w := func(start, end string, count, sum, lo, hi int64) WindowResult {
		return WindowResult{Key: "a", Start: start, End: end, Count: count, SumTS: sum, MinTS: lo, MaxTS: hi}
	}
	want := []WindowResult{
		w("1969-12-31T23:59:58Z", "1970-01-01T00:00:00Z", 1, -200, -200, -200),
		w("1969-12-31T23:59:59Z", "1970-01-01T00:00:01Z", 1, -200, -200, -200), // 1000 is its end, not in it
		w("1970-01-01T00:00:00Z", "1970-01-01T00:00:02Z", 2, 2700, 1000, 1700),
		w("1970-01-01T00:00:01Z", "1970-01-01T00:00:03Z", 2, 2700, 1000, 1700),
	}
	mode := WindowMode{Every: 1000}
	if p, _ := CheckWindows(produced, want, 2000, mode); len(p) != 0 {
		t.Errorf("the oracle's own hopping windows: %q", p)
	}
	if p, _ := CheckWindows(produced, slices.Delete(slices.Clone(want), 1, 2), 2000, mode); !slices.ContainsFunc(p, func(s string) bool {
		return strings.Contains(s, "1969-12-31T23:59:59Z missing")
	}) {
		t.Errorf("the window starting at -1 s missing: problems %q, want one naming it", p)
	}
	if p, _ := CheckWindows(produced, want, 2000, WindowMode{}); len(p) == 0 {
		t.Errorf("hopping windows pass as tumbling ones")
	}
	// Ends at fractions of a second sort as times, not as strings.
	half := []Produced{{Key: "a", TS: 600}, {Key: "b", TS: 1100}}
	r := func(key, start, end string, ts int64) WindowResult {
		return WindowResult{Key: key, Start: "1970-01-01T00:00:" + start + "Z", End: "1970-01-01T00:00:" + end + "Z", Count: 1, SumTS: ts, MinTS: ts, MaxTS: ts}
	}
	a1, a15 := r("a", "00", "01", 600), r("a", "00.5", "01.5", 600)
	b15, b2 := r("b", "00.5", "01.5", 1100), r("b", "01", "02", 1100)
	if p, _ := CheckWindows(half, []WindowResult{a1, a15, b15, b2}, 1000, WindowMode{Every: 500}); len(p) != 0 {
		t.Errorf("ends at 1, 1.5, 1.5 and 2 s, in order: %q", p)
	}
	if p, _ := CheckWindows(half, []WindowResult{a1, b2, a15, b15}, 1000, WindowMode{Every: 500}); len(p) == 0 {
		t.Errorf("the end at 2 s before those at 1.5 s passes")
	}
}
