package crashtest

import (
	"slices"
	"strings"
	"testing"
)

// TestCheckWindows: CheckWindows accepts the oracle's output, and names
// each way an output can break it: a window missing, repeated, with other
// values, unknown, or out of order.
func TestCheckWindows(t *testing.T) {
	produced := []Produced{
		{Key: "a", TS: 1000}, {Key: "a", TS: 1999}, {Key: "b", TS: 1500}, {Key: "a", TS: 2000},
	}
	a1 := WindowResult{Key: "a", Start: "1970-01-01T00:00:01Z", End: "1970-01-01T00:00:02Z", Count: 2, SumTS: 2999, MinTS: 1000, MaxTS: 1999, Where: "r1"}
	b1 := WindowResult{Key: "b", Start: "1970-01-01T00:00:01Z", End: "1970-01-01T00:00:02Z", Count: 1, SumTS: 1500, MinTS: 1500, MaxTS: 1500, Where: "r2"}
	a2 := WindowResult{Key: "a", Start: "1970-01-01T00:00:02Z", End: "1970-01-01T00:00:03Z", Count: 1, SumTS: 2000, MinTS: 2000, MaxTS: 2000, Where: "r3"}
	if p := CheckWindows(produced, []WindowResult{a1, b1, a2}, 1000); len(p) != 0 {
		t.Fatalf("the oracle's own output: %q", p)
	}
	wrong := a2
	wrong.Count = 2
	unknown := a2
	unknown.Key = "c"
	for name, c := range map[string]struct {
		out  []WindowResult
		want string
	}{
		"missing":      {[]WindowResult{a1, a2}, "window b 1970-01-01T00:00:01Z missing"},
		"repeated":     {[]WindowResult{a1, b1, a2, a2}, "emitted again"},
		"other values": {[]WindowResult{a1, b1, wrong}, "the oracle's"},
		"unknown":      {[]WindowResult{a1, b1, a2, unknown}, "has no record"},
		"out of order": {[]WindowResult{b1, a1, a2}, "not in the order of their ends"},
		"end first":    {[]WindowResult{a2, a1, b1}, "not in the order of their ends"},
	} {
		p := CheckWindows(produced, c.out, 1000)
		if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: problems %q, want one saying %q", name, p, c.want)
		}
	}
}
