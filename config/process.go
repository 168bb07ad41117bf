package config

// Processing in the job file: process (filter, map), inputs[i].process and
// a sink's where, compiled by package process when the job is validated
// and built (docs/config.md, Processing).

import (
	"errors"
	"fmt"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/decode"
	"github.com/signalbox/signalbox/internal/early"
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

// processing is what the job's expressions compile to (Job.processing).
type processing struct {
	proc signalbox.Process        // the pipeline's Process, nil when there is none
	fork func() signalbox.Process // a maker of more of it (each a fork: signalbox.WithProcessFork)
	hint func([]*record.Record)   // the hint of its lookups (process.Hints; nil without: signalbox.WithProcessHint)
	// early is the processing of a topic's records as they are decoded
	// (internal/early; nil for a topic whose processing runs at release),
	// allEarly that every topic's does, whole (no template's lookups left
	// for the release): proc then only gives the results early found, and
	// needs no fork.
	early    func(topic string) early.Func
	allEarly bool
	wheres   []*process.Expr // each sink's where (nil for a sink without one)
}

// earlyProcessing turns early processing on (tests turn it off to compare).
var earlyProcessing = true

// processing compiles the job's expressions, with every problem in v.
func (j *Job) processing(v *validator) processing {
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
		return processing{wheres: wheres}
	}
	fork := func() signalbox.Process { return j.inputSteps(byInput, job) }
	p := processing{proc: fork(), fork: fork, hint: process.Hints(append(byInput, job)...), wheres: wheres}
	if !earlyProcessing {
		return p
	}
	p.allEarly = true
	for i := -1; i < len(j.Inputs); i++ {
		e, ok := j.earlySteps(i, byInput, job)
		p.allEarly = p.allEarly && ok && e.Complete() // a template's lookups are made at release
	}
	p.early = func(topic string) early.Func {
		e, ok := j.earlySteps(j.inputOf(topic), byInput, job)
		if !ok {
			return nil
		}
		return func(r *record.Record, m *decode.Members) { e.Prepare(r, m.Spans, m.OK) }
	}
	return p
}

// earlySteps is the chain of input i's records (-1: a topic no input
// declares) as an Early, when it may run as they are decoded: it reads
// nothing known only at release but the lookups of its last map that a
// template leaves holes for (process.NewEarly), and the input's key
// and value are the record's bytes, its value JSON (a schema'd key or
// value is rendered at release).
func (j *Job) earlySteps(i int, byInput []process.Steps, job process.Steps) (process.Early, bool) {
	in := process.Steps{}
	if i >= 0 {
		if f := j.Inputs[i].Format; f != "" && f != "json" || j.Inputs[i].KeyFormat != "" {
			return process.Early{}, false
		}
		in = byInput[i]
	}
	return process.NewEarly(in, job)
}

// inputSteps is the Process that runs a record's input's steps, then the
// job's. A record's input is the one whose topic is the record's, else
// the first whose topic_pattern matches it (as the engine finds it); the
// answer is remembered per topic, so one Process is used by one goroutine
// at a time: a fork is another inputSteps. For a topic whose steps run
// early (earlySteps), it gives the result they found as the record was
// decoded (process.Early.Release).
func (j *Job) inputSteps(byInput []process.Steps, job process.Steps) signalbox.Process {
	known := map[string]signalbox.Process{}
	return func(r *record.Record) (bool, error) {
		p, ok := known[r.Topic]
		if !ok {
			i := j.inputOf(r.Topic)
			if e, ok := j.earlySteps(i, byInput, job); ok && earlyProcessing {
				p = e.Release
			} else {
				in := process.Steps{}
				if i >= 0 {
					in = byInput[i]
				}
				p = process.Chain(in, job)
			}
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
