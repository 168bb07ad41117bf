package config

// Processing in the job file: process (filter, map), inputs[i].process and
// a sink's where, compiled by package process when the job is validated
// and built (docs/config.md, Processing).

import (
	"errors"
	"fmt"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/topicpattern"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
)

// Process is a `process` section (the job's or an input's): a filter, then
// a map, each a CEL expression.
type Process struct {
	Filter string `yaml:"filter"`
	Map    string `yaml:"map"`
}

// compileExpr compiles the expression at path (none when src is empty),
// reporting its errors at path, with the expression's line and column.
func compileExpr(v *validator, path, src string, k process.Kind) *process.Expr {
	if src == "" {
		if _, set := v.lines[path]; set {
			v.bad(path, "an empty expression: leave the field out")
		}
		return nil
	}
	x, err := process.Compile(path, src, k, v.lookup...)
	if err != nil {
		for _, e := range unjoin(err) {
			var ce *process.CompileError
			if errors.As(e, &ce) {
				v.bad(path, "expression line %d, column %d: %s", ce.Line, ce.Column, ce.Msg)
			} else {
				v.bad(path, "%v", e)
			}
		}
		return nil
	}
	return x
}

// unjoin splits an errors.Join.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// steps compiles a process section at path.
func (p *Process) steps(v *validator, path string) process.Steps {
	if p == nil {
		return process.Steps{}
	}
	return process.Steps{
		Filter: compileExpr(v, path+".filter", p.Filter, process.Filter),
		Map:    compileExpr(v, path+".map", p.Map, process.Map),
	}
}

// processing is what the job's expressions compile to: the pipeline's
// Process (nil when there is none), a maker of more of it (each a fork:
// signalbox.WithProcessFork), the hint of its lookups (process.Hints, nil
// without: signalbox.WithProcessHint), and each sink's where (nil for a
// sink without one), with every problem in v.
func (j *Job) processing(v *validator) (signalbox.Process, func() signalbox.Process, func([]*record.Record), []*process.Expr) {
	wheres := make([]*process.Expr, len(j.Sinks))
	for i, s := range j.Sinks {
		wheres[i] = compileExpr(v, fmt.Sprintf("sinks[%d].where", i), s.Where, process.Where)
	}
	if j.DeadLetter != nil && j.DeadLetter.Where != "" {
		v.bad("dead_letter.where", "the dead-letter sink takes every record that fails, and no where")
	}
	job := j.Process.steps(v, "process")
	var byInput []process.Steps
	some := job.Filter != nil || job.Map != nil
	for i, in := range j.Inputs {
		s := in.Process.steps(v, fmt.Sprintf("inputs[%d].process", i))
		byInput = append(byInput, s)
		some = some || s.Filter != nil || s.Map != nil
	}
	if !some {
		return nil, nil, nil, wheres
	}
	fork := func() signalbox.Process { return j.inputSteps(byInput, job) }
	return fork(), fork, process.Hints(append(byInput, job)...), wheres
}

// inputSteps is the Process that runs a record's input's steps, then the
// job's. A record's input is the one whose topic is the record's, else
// the first whose topic_pattern matches it (as the engine finds it); the
// answer is remembered per topic, so one Process is used by one goroutine
// at a time: a fork is another inputSteps.
func (j *Job) inputSteps(byInput []process.Steps, job process.Steps) signalbox.Process {
	known := map[string]signalbox.Process{}
	return func(r *record.Record) (bool, error) {
		p, ok := known[r.Topic]
		if !ok {
			in := process.Steps{}
			if i := j.inputOf(r.Topic); i >= 0 {
				in = byInput[i]
			}
			p = process.Chain(in, job)
			known[r.Topic] = p
		}
		return p(r)
	}
}

// inputOf is the index of topic's input, -1 when none declares it.
func (j *Job) inputOf(topic string) int {
	for i, in := range j.Inputs {
		if in.Topic == topic {
			return i
		}
	}
	for i, in := range j.Inputs {
		if in.TopicPattern == "" {
			continue
		}
		if re, err := topicpattern.Compile(in.TopicPattern); err == nil && re.MatchString(topic) {
			return i
		}
	}
	return -1
}
