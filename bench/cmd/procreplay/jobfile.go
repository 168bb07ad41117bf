package main

// -window and -lookup: the replay's options come from a job file, built
// by package config as `signalbox run` builds them (config.Job.Build, the
// Plan's Options), so that the window's key and aggregate arguments and
// the lookup are compiled exactly as a job file's are.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
)

// The targets' expressions (issue 37 and issue 38, Targets).
const (
	windowKey = `value.sku`
	lookupMap = `{"id": value.id, "product": lookup("products", value.sku)}`
	tableName = "products"
)

// jobFile is the job the replay runs with -job, -window or -lookup: every
// orders topic `time: field` (ts), a 1 s delay, until the end offsets, one
// JSONL sink to o.out; with o.window a tumbling one-minute window keyed by
// value.sku with count, sum and max of value.qty, its results to
// o.winOut; with o.lookup the table products (its topic products, the
// Kafka key, the version time the Kafka timestamp) and the map of issue
// 38; with o.process issue 36's filter and map as the job's process. The
// brokers are never dialled: the generator is the source.
func jobFile(o options) string {
	var b strings.Builder
	b.WriteString("brokers: [127.0.0.1:9]\nuntil: end-offsets\ndelay: 1s\ninputs:\n")
	for _, t := range topicNames() {
		fmt.Fprintf(&b, "  - {topic: %s, time: field, time_field: ts}\n", t)
	}
	fmt.Fprintf(&b, "sinks:\n  - {type: jsonl, path: %q}\n", o.out)
	if o.window {
		fmt.Fprintf(&b, `windows:
  - name: per_minute
    key: %s
    tumbling: 1m
    aggregate:
      count: count()
      qty: sum(value.qty)
      max_qty: max(value.qty)
    sinks:
      - {type: jsonl, path: %q}
`, windowKey, o.winOut)
	}
	if o.process {
		fmt.Fprintf(&b, "process:\n  filter: '%s'\n  map: '%s'\n", filterSrc, mapSrc)
	}
	if o.lookup {
		fmt.Fprintf(&b, `tables:
  - {name: %s, topic: %s, key: key, format: json, time: timestamp}
process:
  map: '%s'
`, tableName, tableName, lookupMap)
	}
	return b.String()
}

// jobOptions builds jobFile(o) with package config: the pipeline's
// options, and what closes the plan after the run.
func jobOptions(o options) ([]signalbox.Option, func() error, error) {
	j, err := config.Parse([]byte(jobFile(o)))
	if err != nil {
		return nil, nil, err
	}
	plan, err := j.Build(nil)
	if err != nil {
		return nil, nil, err
	}
	return plan.Options, plan.Close, nil
}

// replayJob is replay with -window or -lookup: it checks that every order
// was written, every table record applied, and the window emitted.
func replayJob(o options) (int64, error) {
	opts, closePlan, err := jobOptions(o)
	if err != nil {
		return 0, err
	}
	defer closePlan()
	p, err := signalbox.New(newGenerator(o.n, o.batch, o.keys, o.lookup), opts...)
	if err != nil {
		return 0, err
	}
	if err := p.Run(context.Background()); err != nil {
		return 0, err
	}
	st := p.Stats()
	var errs []error
	if want := o.n - testRecords(o.n, o.process); st.Out != want {
		errs = append(errs, fmt.Errorf("%d records written, want %d", st.Out, want))
	}
	if o.lookup && st.TableVersions != o.keys {
		errs = append(errs, fmt.Errorf("%d table versions applied, want %d", st.TableVersions, o.keys))
	}
	if o.window && (len(st.Windows) != 1 || st.Windows[0].Results == 0 || st.Windows[0].Late != 0) {
		errs = append(errs, fmt.Errorf("window: %+v, want one with results and none late", st.Windows))
	}
	return st.Out, errors.Join(errs...)
}
