package crashtest

import (
	"fmt"
	"strings"
	"testing"
)

// checkInput is four records of two partitions; in timer order: a0 b0 a1 b1.
func checkInput() []Produced {
	return []Produced{
		{ID: "a0", Topic: "a", Partition: 0, Offset: 0, Key: "k1", TS: 10},
		{ID: "a1", Topic: "a", Partition: 0, Offset: 1, Key: "k2", TS: 30},
		{ID: "b0", Topic: "b", Partition: 0, Offset: 0, Key: "k2", TS: 20},
		{ID: "b1", Topic: "b", Partition: 0, Offset: 1, Key: "k1", TS: 40, Live: true},
	}
}

func outs(ids ...string) []Out {
	o := make([]Out, len(ids))
	for i, id := range ids {
		late := strings.HasSuffix(id, "!")
		o[i] = Out{ID: strings.TrimSuffix(id, "!"), Late: late, Where: fmt.Sprintf("#%d", i)}
	}
	return o
}

// Every property of Check fails on an output that breaks it.
func TestCheck(t *testing.T) {
	runCheckCases(t, checkInput, []checkCase{
		{"in order", outs("a0", "b0", "a1", "b1"), Mode{ExactlyOnce: true}, ""},
		{"at-least-once replays", outs("a0", "b0", "a0", "b0", "a1", "b1", "a1"), Mode{}, ""},
		{"duplicate under exactly-once", outs("a0", "b0", "a0", "a1", "b1"), Mode{ExactlyOnce: true}, "duplicate"},
		{"lost", outs("a0", "a1", "b1"), Mode{}, "lost: b/0@0"},
		{"reordered", outs("a0", "a1", "b0", "b1"), Mode{}, "released after"},
		{"reordered first occurrence", outs("a0", "a1", "a0", "b0", "b1"), Mode{}, "released after"},
		{"reordered across keys is fine per key", outs("a0", "b1", "b0", "a1"), Mode{PerKeyOrder: true}, ""},
		{"reordered within a key", outs("b1", "a0", "b0", "a1"), Mode{PerKeyOrder: true}, "released after"},
		{"live record late", outs("a0", "b0", "b1!", "a1"), Mode{}, ""},
		{"history record late", outs("a0", "a1", "b0!", "b1"), Mode{}, "flagged late"},
		{"unknown", outs("a0", "b0", "x", "a1", "b1"), Mode{}, "never produced"},
		{"wrong coordinates", []Out{{ID: "a0", HasCoords: true, Topic: "a", Partition: 0, Offset: 7}}, Mode{}, "was produced at a/0@0"},
	})
}

// checkCase is an output, a mode, and a problem Check must report.
type checkCase struct {
	name string
	outs []Out
	mode Mode
	want string // a problem containing this; "" for none
}

// runCheckCases runs Check on input's records for each case.
func runCheckCases(t *testing.T, input func() []Produced, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(input(), tc.outs, tc.mode)
			got := strings.Join(rep.Problems, "\n")
			if tc.want == "" && !rep.OK() {
				t.Fatalf("unexpected problems:\n%s", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("want a problem with %q, got %s:\n%s", tc.want, rep, got)
			}
		})
	}
}

func TestParseJSONL(t *testing.T) {
	line := func(id string, off int) string {
		return fmt.Sprintf(`{"topic":"a","partition":0,"offset":%d,"key":"k","event_time_ms":1,"value":{"id":%q,"ts":1,"k":"k"},"late":false}`, off, id)
	}
	whole := line("a0", 0) + "\n" + line("a1", 1) + "\n"
	o, problems := ParseJSONL([]byte(whole))
	if len(o) != 2 || len(problems) != 0 || o[1].ID != "a1" || !o[1].HasCoords || o[1].Offset != 1 {
		t.Fatalf("whole file: %+v %q", o, problems)
	}
	// A run killed mid-write, then a restart appending after the tear.
	torn := line("a0", 0) + "\n" + line("a1", 1)[:25] + line("a1", 1) + "\n"
	o, problems = ParseJSONL([]byte(torn))
	if len(o) != 2 || o[1].ID != "a1" || tornLines(problems) != 1 {
		t.Fatalf("torn file: %+v %q", o, problems)
	}
	// A file cut short.
	if _, problems = ParseJSONL([]byte(whole[:len(whole)-10])); len(problems) == 0 {
		t.Fatal("a file not ending with a newline is not reported")
	}
	// A bare payload (a Kafka value).
	if o, err := ParseEnvelope([]byte(`{"id":"a0","ts":1,"k":"k"}`), "v"); err != nil || o.ID != "a0" || o.HasCoords {
		t.Fatalf("bare payload: %+v %v", o, err)
	}
}

// delayedInput is history a0 x a1 and live records: the broker
// acknowledged c0 5 s after its event time (its producer stalled beyond a
// 2 s delay bound), w and c1 at once.
func delayedInput() []Produced {
	return []Produced{
		{ID: "a0", Topic: "a", Partition: 0, Offset: 0, Key: "k1", TS: 10},
		{ID: "x", Topic: "a", Partition: 1, Offset: 0, Key: "k1", TS: 15},
		{ID: "c0", Topic: "c", Partition: 0, Offset: 0, Key: "k2", TS: 20, Live: true, Acked: 5020},
		{ID: "w", Topic: "d", Partition: 0, Offset: 0, Key: "k2", TS: 25, Live: true, Acked: 27},
		{ID: "a1", Topic: "a", Partition: 0, Offset: 1, Key: "k2", TS: 30},
		{ID: "c1", Topic: "c", Partition: 0, Offset: 1, Key: "k2", TS: 35, Live: true, Acked: 5021},
	}
}

// A record its producer delayed beyond the delay bound may come out of turn
// unflagged in an at-least-once output (a killed run released past it
// before it was in the log, and the restart released it in order from the
// last checkpoint), and only such a record.
func TestCheckDelayed(t *testing.T) {
	const delay = 2000
	runCheckCases(t, delayedInput, []checkCase{
		{"delayed record after a crash", outs("a0", "x", "w", "a1", "a0", "x", "c0", "w", "a1", "c1"), Mode{Delay: delay}, ""},
		{"delayed record, no delay bound given", outs("a0", "x", "w", "a1", "c0", "c1"), Mode{}, "c/0@0 (ts 20, key k2, acknowledged 5000ms after it) released after a/0@1"},
		{"record within the bound", outs("a0", "x", "c0", "a1", "w", "c1"), Mode{Delay: delay}, "d/0@0 (ts 25, key k2, acknowledged 2ms after it) released after a/0@1"},
		{"exactly-once keeps no killed run's tail", outs("a0", "x", "w", "a1", "c0", "c1"), Mode{ExactlyOnce: true, Delay: delay}, "c/0@0 (ts 20, key k2, acknowledged 5000ms after it) released after a/0@1"},
		{"a delayed record in turn still orders the rest", outs("a0", "c0", "x", "w", "a1", "c1"), Mode{Delay: delay}, "a/1@0 (ts 15, key k1) released after c/0@0"},
	})
	rep := Check(delayedInput(), outs("a0", "x", "w", "a1", "c0", "c1"), Mode{Delay: delay})
	if rep.Delayed != 2 || rep.DelayedOutOfTurn != 1 || rep.Inversions != 0 {
		t.Fatalf("delayed %d, out of turn %d, inversions %d; want 2, 1, 0", rep.Delayed, rep.DelayedOutOfTurn, rep.Inversions)
	}
	// A late flag on a record acknowledged within the bound is counted.
	rep = Check(delayedInput(), outs("a0", "x", "w!", "a1", "c0!", "c1"), Mode{Delay: delay})
	if !rep.OK() || rep.LateLive != 2 || rep.LateWithin != 1 {
		t.Fatalf("late %d, late within the bound %d, problems %q; want 2, 1, none", rep.LateLive, rep.LateWithin, rep.Problems)
	}
}
