package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBombsRefused: an alias or merge-key bomb is refused before it is
// expanded, quickly and in little memory, naming the line of the alias that
// expands it. Expanded, merge7.yaml alone took 25 s and 1.78 GB.
func TestBombsRefused(t *testing.T) {
	files, _ := filepath.Glob("testdata/bombs/*.yaml")
	if len(files) < 3 {
		t.Fatalf("bombs: %q", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			done := make(chan struct{})
			var j *Job
			go func() { defer close(done); j, err = Load(f) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load still expanding the bomb after 10s")
			}
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if j != nil || err == nil {
				t.Fatalf("Load = %v, %v; want the bomb refused", j, err)
			}
			// The error names an alias that alone expands beyond the
			// bound, and its line.
			var alias string
			var line int
			if _, serr := fmt.Sscanf(err.Error(), "alias *%s expands the job file beyond 100000 YAML nodes", &alias); serr != nil {
				t.Fatalf("error %q: %v", err, serr)
			}
			if i := strings.LastIndex(err.Error(), "(line "); i < 0 {
				t.Fatalf("error %q names no line", err)
			} else if _, serr := fmt.Sscanf(err.Error()[i:], "(line %d)", &line); serr != nil {
				t.Fatalf("error %q: %v", err, serr)
			}
			if lines := strings.Split(string(data), "\n"); line < 1 || !strings.Contains(lines[line-1], "*"+alias) {
				t.Errorf("error %q: line %d does not hold *%s", err, line, alias)
			}
			if took > time.Second {
				t.Errorf("refusing took %v, want < 1s", took)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
				t.Errorf("refusing allocated %d bytes, want < 100 MB", alloc)
			}
		})
	}
}

// TestExpansionBounds: the bounds hold at their edges, and a cycle or a deep
// nest is refused with the line to blame.
func TestExpansionBounds(t *testing.T) {
	// A list of n aliases to one small mapping: about 1+n*5 nodes.
	aliases := func(n int) string {
		return minimal + "x: &x {topic: t, time: none}\nsasl: {user: [" + strings.Repeat("*x, ", n) + "]}\n"
	}
	for _, c := range []struct {
		name, doc, want string
	}{
		{"cycle", minimal + "tls: &t {<<: *t}\n", "alias *t refers to a node that contains it (line 7)"},
		{"cycle in a list", minimal + "x: &l [a, *l]\n", "alias *l refers to a node that contains it (line 7)"},
		{"too many nodes", aliases(MaxNodes / 5), "what starts here takes the job file beyond 100000 YAML nodes (the most a job file may hold) once every alias and merge key is expanded (line 8)"},
		{"too deep", minimal + "x: " + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + "\n",
			"what starts here takes the job file beyond 64 levels deep"},
	} {
		j, err := Parse([]byte(c.doc))
		if j != nil || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse = %v, %v; want %q", c.name, j, err, c.want)
		}
	}
	// Below the bounds the decoder runs, and reports the wrong kinds.
	j, nodes, err := parse([]byte(aliases(MaxNodes/5 - 100)))
	if j == nil || !strings.Contains(fmt.Sprint(err), "sasl.user: want a single value") || nodes > MaxNodes {
		t.Errorf("below the bound: Parse = %v, %v (%d nodes)", j, err, nodes)
	}
	deep := minimal + "x: " + strings.Repeat("[", MaxDepth-3) + strings.Repeat("]", MaxDepth-3) + "\n"
	if j, err := Parse([]byte(deep)); j == nil || !strings.Contains(fmt.Sprint(err), "x: unknown field") {
		t.Errorf("%d levels: Parse = %v, %v", MaxDepth-1, j, err)
	}
}

// TestDuplicateKeys: a key set twice in one mapping is an error naming both
// lines, wherever the mapping is; a mapping's own key overriding a merged
// one is not (YAML 1.1 merge keys), and of merged mappings the first wins.
func TestDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"top level", minimal + "until: end-offsets\nuntil: live\n", "until: set twice in one mapping, at lines 7 and 8 (line 8)"},
		{"in a sink", withSink("{type: jsonl, path: a, path: b}"), "sinks[1].path: set twice in one mapping, at lines 5 and 5 (line 5)"},
		{"in a merged mapping", "x: &x {time: none, time: kafka}\n" + minimal + "  - {<<: *x, topic: b}\n",
			"inputs[1].time: set twice in one mapping, at lines 1 and 1 (line 1)"},
		{"two merge keys", "x: &x {time: none}\n" + minimal + "  - {<<: *x, <<: *x, topic: b}\n",
			"inputs[1].<<: set twice in one mapping, at lines 8 and 8 (line 8)"},
	} {
		got := strings.Join(problems(t, c.doc), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want %q", c.name, got, c.want)
		}
	}
	j, err := Parse([]byte(`
a: &a {topic: a, time: none, key: field, key_field: id}
b: &b {topic: b, time: kafka, time_field: ts}
c: &c {<<: [*a, *b], key_field: own}
inputs:
  - {<<: [*a, *b], topic: own}
  - {<<: *c, <<: *c}
`))
	if !strings.Contains(fmt.Sprint(err), "inputs[1].<<: set twice") || strings.Contains(fmt.Sprint(err), "inputs[0]") {
		t.Fatalf("Parse: %v", err)
	}
	in := j.Inputs[0]
	if in.Topic != "own" || in.Time != "none" || in.KeyField != "id" || in.TimeField != "ts" {
		t.Errorf("inputs[0] = %+v; want its own topic, then a's keys over b's", in)
	}
	if j.lines["inputs[0].time"] != 2 || j.lines["inputs[0].time_field"] != 3 {
		t.Errorf("lines of merged keys: %v", j.lines)
	}
}
