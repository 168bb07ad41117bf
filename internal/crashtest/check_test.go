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
	for _, tc := range []struct {
		name string
		outs []Out
		mode Mode
		want string // a problem containing this; "" for none
	}{
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(checkInput(), tc.outs, tc.mode)
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
