package config

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/early"
	"github.com/signalbox/signalbox/keyed"
	kdurable "github.com/signalbox/signalbox/keyed/durable"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/tables"
	"github.com/signalbox/signalbox/timers/durable"
)

// Plan is what Build makes of a Job: the Kafka source configuration and the
// pipeline options, sinks included.
type Plan struct {
	Kafka   kafka.Config
	Options []signalbox.Option
	// WritesStdout is true when a sink writes to standard output, which is
	// then not free for a progress display.
	WritesStdout bool
	// StateDir is state.dir ("" when unset).
	StateDir string
	// StateMemory is state.memory in bytes (0: the store's default).
	StateMemory int64
	// StateScratch: the store under StateDir only spills parked records
	// beyond memory and is emptied at each start (durable.Store.Scratch):
	// a job with windows rebuilds its windows and parked records from
	// Kafka's held-back offsets or its checkpoint sink's (docs/design.md,
	// K5-K9), never from the store.
	StateScratch bool
	// Tables are the job's tables, open: in pebble under
	// TablesDir(StateDir) when state.dir is set, else in memory. Close
	// closes them.
	Tables *tables.Set
	// windowStores keep the windows' state in pebble under
	// WindowsDir(StateDir) (state.dir without a group); Close closes them.
	windowStores []*kdurable.Store[keyed.State]
	// taskStores are the open stores of the tasks' windows (state.dir with
	// a group), which a revoke closes; Close closes the rest.
	taskStores *taskStores
	// Sinks are the sinks, unopened, in the job's order. At most one says
	// it is exactly once (signalbox.SinkInfo); the engine flushes it after
	// the others at each checkpoint. The dead-letter sink is not among
	// them.
	Sinks []signalbox.Sink
}

// kafkaConfig is the source configuration the job describes, without the
// password (see connection) and the logger.
func (j *Job) kafkaConfig() kafka.Config {
	k := kafka.Config{
		Brokers:  j.Brokers,
		ClientID: j.ClientID,
		Group:    j.Group, Start: j.Start, Isolation: j.Isolation,
		TLS: kafka.TLS{
			Enable: j.TLS.Enabled, CAFile: j.TLS.CAFile, CertFile: j.TLS.CertFile,
			KeyFile: j.TLS.KeyFile, InsecureSkipVerify: j.TLS.InsecureSkipVerify,
		},
		SASL: kafka.SASL{Mechanism: j.SASL.Mechanism, User: j.SASL.User, TokenFile: j.SASL.TokenFile},
	}
	k.Topics, k.TopicPatterns = signalbox.InputTopics(j.libraryInputs()...)
	k.Tables = j.tableTopics()
	k.GroupInstanceID = j.GroupInstanceID
	k.StartupTimeout, _ = time.ParseDuration(j.StartupTimeout) // "": the default
	if j.DiscoveryInterval != "" {
		d, _ := time.ParseDuration(j.DiscoveryInterval)
		k.DiscoveryInterval = cmp.Or(d, -1) // 0 disables discovery
	}
	return k
}

// connection is how the job reaches its cluster: brokers, client id, TLS and
// SASL, with the password and the group instance id read from their
// environment variables.
func (j *Job) connection() (kafka.Config, error) {
	k := j.kafkaConfig()
	var err error
	if name := j.GroupInstanceIDEnv; name != "" {
		if k.GroupInstanceID, err = envField(j.lines, "group_instance_id_env", name); err != nil {
			return k, err
		}
	}
	if name := j.SASL.PasswordEnv; name != "" {
		if k.SASL.Password, err = envField(j.lines, "sasl.password_env", name); err != nil {
			return k, err
		}
	}
	if name := j.SASL.TokenEnv; name != "" {
		if k.SASL.Token, err = envField(j.lines, "sasl.token_env", name); err != nil {
			return k, err
		}
	}
	return k, nil
}

// envField reads the environment variable name, which the field at path
// names; unset or empty is an error at that field and its line.
func envField(lines map[string]int, path, name string) (string, error) {
	val := os.Getenv(name)
	if val == "" {
		return "", Errors{{Path: path, Line: lines[path], Msg: fmt.Sprintf("environment variable %s is unset or empty", name)}}
	}
	return val, nil
}

// Build validates j and turns it into a Plan. Beyond Validate it can fail
// only on the environment: an unset password variable or an unreadable
// file. log is handed to the source and the pipeline (nil: no logging).
func (j *Job) Build(log *zap.Logger) (*Plan, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return j.build(log)
}

// build is Build without Validate: what `run` would make of the job if
// validate let it through.
func (j *Job) build(log *zap.Logger) (*Plan, error) {
	p := &Plan{StateDir: j.State.Dir, StateMemory: sizeOrZero(j.State.Memory), StateScratch: j.State.Dir != "" && len(j.Windows) > 0}
	if err := j.plan(p, log); err != nil {
		_ = p.Close() // the tables it opened
		return nil, err
	}
	return p, nil
}

// plan fills p: build's work.
func (j *Job) plan(p *Plan, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	var err error
	if p.Kafka, err = j.connection(); err != nil {
		return err
	}
	p.Kafka.Logger = log
	inputs := j.libraryInputs()
	if err := j.decoders(inputs); err != nil {
		return err
	}
	p.Options = append(j.options(), signalbox.WithInputs(inputs...), signalbox.WithLogger(log))
	for i := range j.Sinks {
		s, err := j.buildSink(&j.Sinks[i])
		if err != nil {
			return Errors{{Path: fmt.Sprintf("sinks[%d]", i), Line: j.lines[fmt.Sprintf("sinks[%d]", i)], Msg: err.Error()}}
		}
		p.Sinks = append(p.Sinks, s)
		p.WritesStdout = p.WritesStdout || j.Sinks[i].writesStdout()
	}
	v := validator{lines: j.lines}
	var tablesBudget int64
	if j.State.Dir != "" && len(j.Tables) > 0 {
		mem := cmp.Or(p.StateMemory, durable.DefaultMemoryBudget)
		tablesBudget = mem / tablesShare
		p.StateMemory = mem - tablesBudget
	}
	set, withTables, err := j.tableSet(TablesDir(j.State.Dir), tablesBudget)
	if err != nil {
		return err
	}
	p.Tables = set
	if set != nil {
		p.Options = append(p.Options, withTables)
		v.lookup = []process.Option{process.WithTables(set)}
	}
	pr := j.processing(&v)
	if err := v.errs.err(); err != nil {
		return err // never a sink without its where
	}
	for i, s := range p.Sinks {
		if pr.wheres[i] != nil {
			p.Options = append(p.Options, signalbox.WithRoutedSink(s, pr.wheres[i].Where()))
			continue
		}
		p.Options = append(p.Options, signalbox.WithSink(s))
	}
	switch {
	case pr.proc != nil && (tablesBudget > 0 || pr.allEarly):
		// a lookup in pebble caches: no fork beside it; and a process
		// that runs early leaves nothing to do ahead at release
		p.Options = append(p.Options, signalbox.WithProcess(pr.proc))
	case pr.proc != nil:
		p.Options = append(p.Options, signalbox.WithProcessFork(pr.proc, pr.fork))
		if pr.hint != nil {
			p.Options = append(p.Options, signalbox.WithProcessHint(pr.hint))
		}
	}
	if pr.early != nil {
		p.Options = append(p.Options, early.With(pr.early).(signalbox.Option))
	}
	wins := j.windows(&v, func(s *Sink, _ string) (signalbox.Sink, error) { return j.buildSink(s) })
	if err := v.errs.err(); err != nil {
		return err
	}
	if j.State.Dir != "" && len(wins) > 0 {
		open := p.openWindowStores
		if j.Group != "" {
			open = p.taskWindowStores
		}
		if err := open(WindowsDir(j.State.Dir), wins); err != nil {
			return err
		}
	}
	for i, w := range wins {
		p.Options = append(p.Options, signalbox.WithWindow(w.w, w.sinks...))
		for _, s := range j.Windows[i].Sinks {
			p.WritesStdout = p.WritesStdout || s.writesStdout()
		}
	}
	if j.DeadLetter != nil {
		s, err := j.buildSink(j.DeadLetter)
		if err != nil {
			return Errors{{Path: "dead_letter", Line: j.lines["dead_letter"], Msg: err.Error()}}
		}
		p.Options = append(p.Options, signalbox.WithDeadLetter(s))
		p.WritesStdout = p.WritesStdout || j.DeadLetter.writesStdout()
	}
	return nil
}

// options are the pipeline options of the job's settings, but its inputs,
// sinks and logger. A field left out gives no option, so the library's
// default applies; a field that is set gives its option whatever its
// value, for the library to judge (signalbox.Option). A field that does not
// parse gives none either: Validate reports it.
func (j *Job) options() []signalbox.Option {
	var opts []signalbox.Option
	if j.Late != "" {
		opts = append(opts, signalbox.WithLatePolicy(signalbox.LatePolicy(j.Late)))
	}
	if j.Until != "" {
		opts = append(opts, signalbox.WithUntil(signalbox.Until(j.Until)))
	}
	if _, set := j.lines["batch_size"]; set || j.BatchSize != 0 {
		opts = append(opts, signalbox.WithBatchSize(j.BatchSize))
	}
	if d, err := time.ParseDuration(j.Delay); err == nil {
		opts = append(opts, signalbox.WithDelay(d))
	}
	if d, err := time.ParseDuration(j.CheckpointInterval); err == nil {
		opts = append(opts, signalbox.WithCheckpointInterval(d))
	}
	if d, err := time.ParseDuration(j.Align); err == nil {
		opts = append(opts, signalbox.WithAlignment(d))
	}
	if d, err := time.ParseDuration(j.MaxFuture); err == nil {
		opts = append(opts, signalbox.WithMaxFuture(d))
	}
	if d, err := time.ParseDuration(j.FlushLinger); err == nil {
		opts = append(opts, signalbox.WithFlushLinger(d))
	}
	if mem := sizeOrZero(j.State.Memory); j.State.Dir == "" && mem > 0 {
		// Without a store to spill to, the budget bounds what is parked
		// in memory: past it, partitions running ahead pause.
		opts = append(opts, signalbox.WithParkedLimit(mem))
	}
	return opts
}

func (j *Job) buildSink(s *Sink) (signalbox.Sink, error) { return s.settings().build(j) }

// Pipeline opens nothing: it makes the Kafka source and the pipeline from
// the plan, with extra options appended (e.g. an observer).
func (p *Plan) Pipeline(extra ...signalbox.Option) (*signalbox.Pipeline, error) {
	src, err := kafka.New(p.Kafka)
	if err != nil {
		return nil, err
	}
	return signalbox.New(src, append(p.Options[:len(p.Options):len(p.Options)], extra...)...)
}

// Close releases what Build opened: the tables' pebble storage, when
// state.dir is set. The pipeline must not run after.
func (p *Plan) Close() error {
	var errs []error
	for _, s := range p.windowStores {
		errs = append(errs, s.Close())
	}
	p.windowStores = nil
	if p.taskStores != nil {
		errs = append(errs, p.taskStores.closeAll())
	}
	if p.Tables == nil {
		return errors.Join(errs...)
	}
	var ts []*tables.Table
	for _, n := range p.Tables.Names() {
		ts = append(ts, p.Tables.Table(n))
	}
	return errors.Join(append(errs, closeTables(ts))...)
}
