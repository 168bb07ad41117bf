package config

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/rulecases"
	"github.com/signalbox/signalbox/sinks/bulk"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/postgres"
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
		{"flush_linger: 61m", "", "flush_linger"},
		{"flush_linger: 1h", "", ""},
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
		{"", "{type: kafka, topic: t, max_buffered_records: 1000001}", "sinks[1].max_buffered_records"},
		{"", "{type: kafka, topic: t, max_buffered_records: -1}", "sinks[1].max_buffered_records"},
		{"", "{type: kafka, topic: t, max_buffered_records: 1000000}", ""},
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

// TestValidateAgreesWithLibrary: every cross-check case (internal/rulecases)
// gets one verdict from the job file's validate, from run's path (Build,
// then New and Open) and from the library given the same settings as
// options: the same field and the library's one message.
func TestValidateAgreesWithLibrary(t *testing.T) {
	t.Setenv(rulecases.DSNEnv, "postgres://u@127.0.0.1:1/db")
	dir := t.TempDir()
	for _, c := range rulecases.Cases {
		j, err := Parse([]byte(c.Job(dir)))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		verr := j.Validate()
		var es Errors
		errors.As(verr, &es)
		run := runVerdict(t, j)
		lib := fielderr.All(signalbox.ValidateOptions(c.LibraryOptions(func(exactlyOnce bool) signalbox.Sink {
			return standInFor(signalbox.SinkInfo{ExactlyOnce: exactlyOnce})
		})...))
		switch {
		case c.Field == "" && (verr != nil || len(run) != 0 || len(lib) != 0):
			t.Errorf("%s: want valid; validate: %v; run: %v; library: %v", c.Name, verr, run, lib)
		case c.Field == "":
		case len(es) != 1 || es[0].Path != c.Field:
			t.Errorf("%s: validate: %v; want one error about %s", c.Name, verr, c.Field)
		case len(run) != 1 || run[0].Msg != es[0].Msg:
			t.Errorf("%s: validate says %q, run's path %v: want the library's one message", c.Name, es[0].Msg, run)
		case len(lib) != 1 || lib[0].Msg != es[0].Msg:
			t.Errorf("%s: validate says %q, the library %v", c.Name, es[0].Msg, lib)
		}
	}
}

// TestExplicitZeroRefused: a count that cannot be off, written as 0, is
// taken as written, not as the default: validate and run's entry point
// (Build) refuse it with one error at its YAML path, the sink library's
// verdict on 0; left out, it takes the library's default and is valid.
// (runVerdict cannot tell 0 from left out: the library's Config structs
// take 0 for the default, so the job file's Validate is what refuses it.)
func TestExplicitZeroRefused(t *testing.T) {
	t.Setenv("SIGNALBOX_TEST_DSN", "postgres://u@127.0.0.1:1/db")
	const (
		bulkSink = "{type: bulk, url: 'http://127.0.0.1:1', index: i"
		pgSink   = "{type: postgres, dsn_env: SIGNALBOX_TEST_DSN"
	)
	for _, c := range []struct {
		sink, key string
		library   error // the library's verdict on 0 as written
	}{
		{"{type: kafka, topic: t", "max_buffered_records", kafkasink.Config{}.Validate()},
		{bulkSink, "max_docs", (&bulk.Config{URL: "http://h", Index: "i", MaxBytes: 1}).Validate()},
		{pgSink, "max_batch", (&postgres.Config{DSN: "x", Table: "t", ValueType: "jsonb"}).Validate()},
	} {
		lib := fielderr.All(c.library)
		if len(lib) != 1 || lib[0].Field != c.key || !strings.HasPrefix(lib[0].Msg, "0 is out of range: must be from 1 to ") {
			t.Fatalf("%s: the library's verdict on 0 is %v, want one range error about it", c.key, c.library)
		}
		for _, zero := range []struct{ name, doc, path string }{
			{"sink", withSink(c.sink + ", " + c.key + ": 0}"), "sinks[1]." + c.key},
			{"merged", withSink(c.sink + ", <<: {" + c.key + ": 0}}"), "sinks[1]." + c.key},
			{"dead letter", minimal + "dead_letter: " + c.sink + ", " + c.key + ": 0}\n", "dead_letter." + c.key},
		} {
			name := c.key + ": 0 in a " + zero.name
			want := zero.path + ": " + lib[0].Msg
			j, err := Parse([]byte(zero.doc))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			verr := j.Validate()
			var es Errors
			if !errors.As(verr, &es) || len(es) != 1 || es[0].Path+": "+es[0].Msg != want {
				t.Errorf("%s: validate: %v; want one error %q", name, verr, want)
				continue
			}
			var bes Errors
			if _, err := j.Build(nil); !errors.As(err, &bes) || len(bes) != 1 || bes[0].Error() != es[0].Error() {
				t.Errorf("%s: Build (run): %v; want validate's %v", name, err, es)
			}
		}
		j, err := Parse([]byte(withSink(c.sink + "}")))
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Validate(); err != nil {
			t.Errorf("%s left out: %v; want valid (the default)", c.key, err)
		}
		if _, err := j.Build(nil); err != nil {
			t.Errorf("%s left out: Build: %v", c.key, err)
		}
	}
}
