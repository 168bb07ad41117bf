// Package rulecases is one table of pipeline settings, each written twice:
// as a job file and as the library's options. The library's tests, the job
// file's and the CLI's feed every case through their route and require the
// same verdict, so that validate, run and New never disagree on a rule.
package rulecases

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
)

// Sink kinds of a case: an at-least-once sink (jsonl), an exactly-once
// one, which stores the checkpoint (postgres), and a Kafka sink without a
// transactional id, at least once although it has the CheckpointSink
// methods.
const (
	AtLeastOnce = "jsonl"
	ExactlyOnce = "postgres"
	PlainKafka  = "kafka"
)

// DSNEnv is the environment variable a case's postgres sinks name; the
// route that builds them sets it (to an unreachable server: no case
// connects).
const DSNEnv = "SIGNALBOX_RULECASES_DSN"

// Case is one set of settings.
type Case struct {
	Name string
	// YAML holds top-level job-file lines, and Options the same settings
	// as options.
	YAML    string
	Options []signalbox.Option
	// Inputs and Sinks default to one input (topic a) and one AtLeastOnce
	// sink; DeadLetter adds an AtLeastOnce dead-letter sink.
	Inputs     []signalbox.Input
	Sinks      []string
	DeadLetter bool
	// Wheres are the sinks' where expressions, by sink index (a routed
	// sink: signalbox.WithRoutedSink).
	Wheres map[int]string
	// Field is the YAML path validate names (the library's field error
	// names it or its parent: sinks[2] for sinks[2].type); "" when valid.
	Field string
}

// Cases are the settings every route must agree on: values the library used
// to replace with its default, the edges of ranges, and the rules that
// involve several settings.
var Cases = []Case{
	{Name: "checkpoint_interval 0s", YAML: "checkpoint_interval: 0s",
		Options: opts(signalbox.WithCheckpointInterval(0)), Field: "checkpoint_interval"},
	{Name: "checkpoint_interval 1h", YAML: "checkpoint_interval: 1h",
		Options: opts(signalbox.WithCheckpointInterval(time.Hour))},
	{Name: "batch_size 0", YAML: "batch_size: 0", Options: opts(signalbox.WithBatchSize(0)), Field: "batch_size"},
	{Name: "batch_size -1", YAML: "batch_size: -1", Options: opts(signalbox.WithBatchSize(-1)), Field: "batch_size"},
	{Name: "batch_size 1", YAML: "batch_size: 1", Options: opts(signalbox.WithBatchSize(1))},
	{Name: "delay -1s", YAML: "delay: -1s", Options: opts(signalbox.WithDelay(-time.Second)), Field: "delay"},
	{Name: "delay 0s", YAML: "delay: 0s", Options: opts(signalbox.WithDelay(0))},
	{Name: "align 0s is off", YAML: "align: 0s", Options: opts(signalbox.WithAlignment(0))},
	{Name: "max_future -1s", YAML: "max_future: -1s", Options: opts(signalbox.WithMaxFuture(-time.Second)), Field: "max_future"},
	{Name: "flush_linger 0s", YAML: "flush_linger: 0s", Options: opts(signalbox.WithFlushLinger(0))},
	{Name: "late ignore", YAML: "late: ignore", Options: opts(signalbox.WithLatePolicy("ignore")), Field: "late"},
	{Name: "until tomorrow", YAML: "until: tomorrow", Options: opts(signalbox.WithUntil("tomorrow")), Field: "until"},
	{Name: "until end-offsets", YAML: "until: end-offsets", Options: opts(signalbox.WithUntil(signalbox.UntilEndOffsets))},
	{Name: "until a time, no input has event times", YAML: "until: 2026-03-08T00:00:00Z",
		Options: opts(signalbox.WithUntil("2026-03-08T00:00:00Z")), Field: "until",
		Inputs: []signalbox.Input{{Topic: "a", Time: signalbox.TimeNone}, {Topic: "b", Time: signalbox.TimeNone}}},
	{Name: "until a time, one input has event times", YAML: "until: 2026-03-08T00:00:00Z",
		Options: opts(signalbox.WithUntil("2026-03-08T00:00:00Z")),
		Inputs:  []signalbox.Input{{Topic: "a", Time: signalbox.TimeNone}, {Topic: "b", Time: signalbox.TimeFromTimestamp}}},
	{Name: "late dead-letter without a dead-letter sink", YAML: "late: dead-letter",
		Options: opts(signalbox.WithLatePolicy(signalbox.LateDeadLetter)), Field: "dead_letter"},
	{Name: "late dead-letter with a dead-letter sink", YAML: "late: dead-letter",
		Options: opts(signalbox.WithLatePolicy(signalbox.LateDeadLetter)), DeadLetter: true},
	{Name: "duplicate topic", Inputs: []signalbox.Input{{Topic: "a"}, {Topic: "b"}, {Topic: "a"}}, Field: "inputs[2].topic"},
	{Name: "duplicate topic_pattern", Inputs: []signalbox.Input{{TopicPattern: "a.*"}, {TopicPattern: "a.*"}}, Field: "inputs[1].topic_pattern"},
	{Name: "a topic and a pattern spelt alike", Inputs: []signalbox.Input{{Topic: "a"}, {TopicPattern: "a"}}},
	{Name: "topic_pattern of 4096 bytes", Inputs: []signalbox.Input{{TopicPattern: "a" + strings.Repeat("|a", 2047) + "b"}}},
	{Name: "topic_pattern of 4097 bytes", Inputs: []signalbox.Input{{TopicPattern: "a" + strings.Repeat("|a", 2048)}}, Field: "inputs[0].topic_pattern"},
	{Name: "two exactly-once sinks", Sinks: []string{AtLeastOnce, ExactlyOnce, ExactlyOnce}, Field: "sinks[2].type"},
	{Name: "one exactly-once sink", Sinks: []string{AtLeastOnce, ExactlyOnce}},
	{Name: "a plain kafka sink beside an exactly-once one", Sinks: []string{PlainKafka, ExactlyOnce}},
	{Name: "process filter and map", YAML: "process: {filter: 'value.ok', map: '{\"a\": value.a}'}",
		Options: opts(signalbox.WithProcess(func(*record.Record) (bool, error) { return true, nil }))},
	{Name: "a routed exactly-once sink", Sinks: []string{AtLeastOnce, ExactlyOnce}, Wheres: map[int]string{1: "late"}},
	{Name: "a where on the 65th sink", Sinks: slices.Repeat([]string{AtLeastOnce}, 65), Wheres: map[int]string{64: "late"}, Field: "sinks[64].where"},
	{Name: "a where on the 64th sink", Sinks: slices.Repeat([]string{AtLeastOnce}, 64), Wheres: map[int]string{63: "late"}},
}

func opts(o ...signalbox.Option) []signalbox.Option { return o }

// inputs are c's inputs, with the default.
func (c Case) inputs() []signalbox.Input {
	if len(c.Inputs) == 0 {
		return []signalbox.Input{{Topic: "a"}}
	}
	return c.Inputs
}

// sinks are c's sink kinds, with the default.
func (c Case) sinks() []string {
	if len(c.Sinks) == 0 {
		return []string{AtLeastOnce}
	}
	return c.Sinks
}

// Job is c as a job file whose jsonl sinks write under dir. Its broker
// refuses connections at once, so that a run that validates stops when it
// starts reading, and it serves no admin port.
func (c Case) Job(dir string) string {
	var b strings.Builder
	b.WriteString("brokers: [127.0.0.1:1]\nstartup_timeout: 1s\nadmin: {addr: \"off\"}\ninputs:\n")
	for _, in := range c.inputs() {
		timed := ""
		if in.Time != "" {
			timed = ", time: " + string(in.Time)
		}
		if in.TopicPattern != "" {
			fmt.Fprintf(&b, "  - {topic_pattern: '%s'%s}\n", in.TopicPattern, timed)
		} else {
			fmt.Fprintf(&b, "  - {topic: %s%s}\n", in.Topic, timed)
		}
	}
	sink := func(i int, kind string) string {
		where := ""
		if w, ok := c.Wheres[i]; ok {
			where = ", where: '" + w + "'"
		}
		switch kind {
		case ExactlyOnce:
			return "{type: postgres, dsn_env: " + DSNEnv + ", table: t" + fmt.Sprint(i) + where + "}"
		case PlainKafka:
			return "{type: kafka, topic: out" + fmt.Sprint(i) + where + "}"
		}
		return "{type: jsonl, path: '" + dir + "/out" + fmt.Sprint(i) + ".jsonl'" + where + "}"
	}
	b.WriteString("sinks:\n")
	for i, kind := range c.sinks() {
		b.WriteString("  - " + sink(i, kind) + "\n")
	}
	if c.DeadLetter {
		b.WriteString("dead_letter: " + sink(-1, AtLeastOnce) + "\n")
	}
	if c.YAML != "" {
		b.WriteString(c.YAML + "\n")
	}
	return b.String()
}

// LibraryOptions is c as options, its sinks made by sink (true: one that
// stores the checkpoint); a PlainKafka sink is the Kafka sink itself
// (sinks/kafka, never opened), whose own description is what is tested.
func (c Case) LibraryOptions(sink func(exactlyOnce bool) signalbox.Sink) []signalbox.Option {
	o := append([]signalbox.Option{signalbox.WithInputs(c.inputs()...)}, c.Options...)
	for i, kind := range c.sinks() {
		s := sink(kind == ExactlyOnce)
		if kind == PlainKafka {
			s = kafkasink.New(kafkasink.Config{Brokers: []string{"127.0.0.1:1"}, Topic: "out" + fmt.Sprint(i)})
		}
		if _, ok := c.Wheres[i]; ok { // the expression's verdict is the job file's (package process)
			o = append(o, signalbox.WithRoutedSink(s, func(*record.Record) (bool, error) { return true, nil }))
			continue
		}
		o = append(o, signalbox.WithSink(s))
	}
	if c.DeadLetter {
		o = append(o, signalbox.WithDeadLetter(sink(false)))
	}
	return o
}
