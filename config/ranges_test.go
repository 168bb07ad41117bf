package config

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/timers/durable"
)

// runVerdict is what `run` makes of j when validate does not stop it: Build
// without Validate, then what run opens (the parked-state store, the
// source and pipeline, each sink), returning every field error the library
// reports on the way. Errors that are not about a field (a sink that cannot
// connect) are no verdict on the values.
func runVerdict(t *testing.T, j *Job) []*fielderr.Error {
	t.Helper()
	plan, err := j.build(nil)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	var fes []*fielderr.Error
	if plan.StateDir != "" { // as cmd/signalbox run does
		opts := durable.StoreOptions{MemoryBudget: plan.StateMemory}
		opts.EnsureDefaults()
		store, err := durable.OpenStore(plan.StateDir, opts)
		fes = append(fes, fielderr.All(err)...)
		if err == nil {
			defer store.Close()
			plan.Options = append(plan.Options, signalbox.WithParkedStore(store),
				signalbox.WithMaxInflightBytes(InflightBytes(opts)))
		} else if len(fes) == 0 {
			t.Fatalf("OpenStore: %v", err)
		}
	}
	_, err = plan.Pipeline()
	fes = append(fes, fielderr.All(err)...)
	if err != nil && len(fielderr.All(err)) == 0 {
		t.Fatalf("Pipeline: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a sink validates its config before it connects
	for _, s := range plan.Sinks {
		err := s.Open(ctx)
		fes = append(fes, fielderr.All(err)...)
		if err == nil {
			s.Close()
		}
	}
	return fes
}

// TestValidateAgreesWithRun: every size and interval of a job file gets the
// same verdict from validate as from run's path (Build, then the library's
// New and Open), since the ranges are the library's: values just outside a
// range are refused by both, values at its edge accepted by both.
func TestValidateAgreesWithRun(t *testing.T) {
	t.Setenv("SIGNALBOX_TEST_DSN", "postgres://u@127.0.0.1:1/db")
	dir := t.TempDir()
	job := func(top, sink string) string {
		return "brokers: [localhost:9092]\ninputs: [{topic: a}]\n" + top +
			"\nsinks:\n  - {type: jsonl, path: " + dir + "/out.jsonl}\n  - " + sink + "\n"
	}
	const bulk = "{type: bulk, url: 'http://127.0.0.1:1', index: i, "
	const pg = "{type: postgres, dsn_env: SIGNALBOX_TEST_DSN, "
	for _, c := range []struct {
		top, sink string
		field     string // the YAML path validate names; "" when valid
	}{
		{"batch_size: 1e9", "", "batch_size"},
		{"batch_size: 65537", "", "batch_size"},
		{"batch_size: 65536", "", ""},
		{"discovery_interval: 1ns", "", "discovery_interval"},
		{"discovery_interval: 99ms", "", "discovery_interval"},
		{"discovery_interval: 100ms", "", ""},
		{"discovery_interval: 2h", "", "discovery_interval"},
		{"delay: 721h", "", "delay"},
		{"delay: 720h", "", ""},
		{"checkpoint_interval: 61m", "", "checkpoint_interval"},
		{"checkpoint_interval: 1h", "", ""},
		{"align: 721h", "", "align"},
		{"align: 0s", "", ""},
		{"max_future: 8761h", "", "max_future"},
		{"max_future: 8760h", "", ""},
		{"flush_linger: 61s", "", "flush_linger"},
		{"flush_linger: 1m", "", ""},
		{"state: {memory: 100TiB}", "", "state.memory"},
		{"state: {memory: 1TiB}", "", ""},
		{"state: {memory: 2TiB, dir: " + dir + "/state}", "", "state.memory"},
		{"state: {memory: 32MiB, dir: " + dir + "/state}", "", ""},
		{"", "{type: jsonl, path: " + dir + "/b.jsonl, buffer_size: 100TiB}", "sinks[1].buffer_size"},
		{"", "{type: jsonl, path: " + dir + "/b.jsonl, buffer_size: 15}", "sinks[1].buffer_size"},
		{"", "{type: jsonl, path: " + dir + "/b.jsonl, buffer_size: 64MiB}", ""},
		{"", bulk + "max_bytes: 101MiB}", "sinks[1].max_bytes"},
		{"", bulk + "max_bytes: 100MiB, max_docs: 100000, linger: 1m}", ""},
		{"", bulk + "max_docs: 100001}", "sinks[1].max_docs"},
		{"", bulk + "linger: 61s}", "sinks[1].linger"},
		{"", pg + "max_batch: 1000001}", "sinks[1].max_batch"},
		{"", pg + "max_batch: 1000000}", ""},
	} {
		sink := c.sink
		if sink == "" {
			sink = "{type: jsonl, path: " + dir + "/b.jsonl}"
		}
		doc := job(c.top, sink)
		j, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s %s: %v", c.top, c.sink, err)
		}
		verr := j.Validate()
		var es Errors
		errors.As(verr, &es)
		run := runVerdict(t, j)
		name := c.top + c.sink
		switch {
		case c.field == "" && (verr != nil || len(run) != 0):
			t.Errorf("%s: want valid; validate: %v; run: %v", name, verr, run)
		case c.field != "" && (len(es) != 1 || es[0].Path != c.field || !strings.Contains(es[0].Msg, "out of range: must be")):
			t.Errorf("%s: validate: %v; want one error about %s naming its range", name, verr, c.field)
		case c.field != "" && len(run) == 0:
			t.Errorf("%s: validate refuses it (%v), run's path accepts it", name, verr)
		case c.field != "" && run[0].Msg != es[0].Msg:
			t.Errorf("%s: validate says %q, run's path %q: want the library's one message", name, es[0].Msg, run[0].Msg)
		}
	}
}

// TestDocumentedRangesMatchCode holds the Ranges table of docs/config.md to
// the code: each setting's least and most value is valid, one step beyond
// either is refused naming the setting, and every setting with a range is
// in the table.
func TestDocumentedRangesMatchCode(t *testing.T) {
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	top := func(key string) func(string) (string, string) {
		return func(v string) (string, string) { return minimal + key + ": " + v + "\n", key }
	}
	sink := func(spec, key string) func(string) (string, string) {
		return func(v string) (string, string) { return withSink(spec + key + ": " + v + "}"), "sinks[1]." + key }
	}
	settings := map[string]func(string) (string, string){
		"delay": top("delay"), "align": top("align"), "max_future": top("max_future"),
		"flush_linger": top("flush_linger"), "checkpoint_interval": top("checkpoint_interval"),
		"batch_size": top("batch_size"), "discovery_interval": top("discovery_interval"),
		"state.memory": func(v string) (string, string) {
			return minimal + "state: {memory: " + v + "}\n", "state.memory"
		},
		"jsonl buffer_size":  sink("{type: jsonl, path: x, ", "buffer_size"),
		"bulk max_docs":      sink("{type: bulk, url: 'http://h:1', index: i, ", "max_docs"),
		"bulk max_bytes":     sink("{type: bulk, url: 'http://h:1', index: i, ", "max_bytes"),
		"bulk linger":        sink("{type: bulk, url: 'http://h:1', index: i, ", "linger"),
		"postgres max_batch": sink("{type: postgres, dsn_env: PG, ", "max_batch"),
	}
	_, table, _ := strings.Cut(string(md), "\n## Ranges\n")
	row := regexp.MustCompile("^\\| ([a-z_. ]+) \\| `([^`]+)`[^|]* \\| `([^`]+)`[^|]* \\|$")
	seen := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		doc, ok := settings[m[1]]
		if !ok {
			t.Errorf("docs/config.md ranges %q: no check here", m[1])
			continue
		}
		seen[m[1]] = true
		for i, v := range []string{m[2], m[3]} {
			d, field := doc(v)
			if p := problems(t, d); len(p) != 0 {
				t.Errorf("%s: %s is documented valid, got %q", m[1], v, p)
			}
			beyond := step(t, v, 2*i-1) // below the least, above the most
			if beyond == "0" {          // 0 is the default of a count
				beyond = "-1"
			}
			d, _ = doc(beyond)
			if p := strings.Join(problems(t, d), "\n"); !strings.Contains(p, field+": ") {
				t.Errorf("%s: %s is beyond the documented range, got %q", m[1], beyond, p)
			}
		}
	}
	for s := range settings {
		if !seen[s] {
			t.Errorf("%s has a range but no row in the Ranges table of docs/config.md", s)
		}
	}
}

// step returns the value one step (1ns, one byte, one) from v in the
// direction dir (-1 or 1), in the job file's notation.
func step(t *testing.T, v string, dir int) string {
	if d, err := time.ParseDuration(v); err == nil {
		return (d + time.Duration(dir)).String()
	}
	n, err := ParseSize(v)
	if err != nil {
		t.Fatalf("%q is neither a duration nor a size", v)
	}
	return strconv.FormatInt(n+int64(dir), 10)
}
