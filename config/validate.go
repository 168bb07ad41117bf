package config

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/topicpattern"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/timers/durable"
)

// sinkTypes are the values of a sink's type, in the order messages list
// them.
var sinkTypes = []string{"jsonl", "kafka", "postgres", "bulk"}

// validator collects FieldErrors.
type validator struct {
	lines map[string]int
	errs  Errors
	// lookup lets the expressions read the job's tables (table.go).
	lookup []process.Option
}

// bad records a problem with the field at path, with the line of the field
// or of its nearest ancestor present in the file.
func (v *validator) bad(path, format string, args ...any) {
	v.badNear(path, path, format, args...)
}

// badNear records a problem with the field at path with the line of the
// field at near (or of its nearest ancestor present in the file): the one
// that makes path a problem when path itself is absent from the file.
func (v *validator) badNear(path, near, format string, args ...any) {
	line := 0
	for p := near; p != "" && line == 0; {
		line = v.lines[p]
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	v.errs = append(v.errs, &FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// fields records each field error of err (a library validator's verdict)
// at its YAML path under prefix; any other error is recorded at prefix.
func (v *validator) fields(prefix string, err error) {
	fes := fielderr.All(err)
	if err != nil && len(fes) == 0 {
		v.bad(prefix, "%v", err)
	}
	for _, fe := range fes {
		path := fe.Field
		if prefix != "" {
			path = prefix + "." + fe.Field
		}
		v.bad(path, "%s", fe.Msg)
	}
}

// uniqueName checks the name at path: required (what it is for, in the
// message), and not one seen before (dup says so); it records it in seen.
func (v *validator) uniqueName(seen map[string]bool, path, name, required, dup string) {
	switch {
	case name == "":
		v.bad(path, "required: %s", required)
	case seen[name]:
		v.bad(path, "%q: %s", name, dup)
	}
	seen[name] = true
}

// oneOf checks an enumerated field; "" is accepted as the default.
func (v *validator) oneOf(path, val string, allowed []string) {
	if val != "" && !slices.Contains(allowed, val) {
		v.bad(path, "%s is not one of %s", fielderr.Quote(val), strings.Join(allowed, ", "))
	}
}

// durationRule is what a duration field refuses besides bad syntax; the
// ranges are the library's (see validateLibrary). The last two are for the
// configuration structs of the Kafka source and the sinks, which take 0 for
// their default and a negative value for "off", where a job file leaves the
// field out and writes 0.
type durationRule int

const (
	libraryRange durationRule = iota // the library checks the value
	notNegative                      // a negative value would be "off" there
	notZero                          // 0 would be the default there
)

// duration checks the syntax of a Go duration field and rule; "" is
// accepted as the default.
func (v *validator) duration(path, val string, rule durationRule) time.Duration {
	if val == "" {
		return 0
	}
	d, err := time.ParseDuration(val)
	switch {
	case err != nil:
		v.bad(path, "%s is not a duration such as 2s or 500ms", fielderr.Quote(val))
	case rule == notNegative && d < 0:
		v.bad(path, "%s is negative: must be ≥ 0", val)
	case rule == notZero && d == 0:
		v.bad(path, "%s must be above 0 (leave it out for the default)", val)
	}
	return d
}

// size checks the syntax of a size field; "" is accepted as the default.
// The ranges are the library's.
func (v *validator) size(path, val string) int64 {
	if val == "" {
		return 0
	}
	n, err := ParseSize(val)
	switch {
	case err != nil:
		v.bad(path, "%v", err)
	case n <= 0:
		v.bad(path, "%s must be above 0 (leave it out for the default)", val)
	}
	return n
}

// asWritten sets *field, which the library's EnsureDefaults filled, back
// to val when the field at path is set in the file: a field that is set is
// judged as written (0 included), one left out takes the default.
func (v *validator) asWritten(path string, field *int, val int) {
	if _, set := v.lines[path]; set {
		*field = val
	}
}

// envNameRE is the name of an environment variable that holds a secret:
// upper-case letters, digits and underscores, as POSIX names the variables
// of applications. A mixed-case value is refused because it is more likely
// the secret itself than a name, and the error that the variable is unset
// would then print it.
var envNameRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// envName checks the name of an environment variable holding a secret. The
// message never repeats the value: it may be the secret.
func (v *validator) envName(path, name string) {
	if name != "" && !envNameRE.MatchString(name) {
		v.bad(path, "must be the NAME of an environment variable (upper-case letters, digits and _, such as SIGNALBOX_SECRET), not its value")
	}
}

// Validate checks every field and returns Errors listing every problem, or
// nil. It reads no file and no environment variable: see Build.
func (j *Job) Validate() error {
	v := &validator{lines: j.lines}
	j.validateConnection(v)
	for i, in := range j.Inputs {
		in.validateFormats(v, fmt.Sprintf("inputs[%d]", i), j.SchemaRegistry)
	}
	if j.SchemaRegistry != nil {
		j.SchemaRegistry.validate(v)
	}
	v.duration("delay", j.Delay, libraryRange)
	v.duration("align", j.Align, libraryRange)
	v.duration("max_future", j.MaxFuture, libraryRange)
	v.duration("flush_linger", j.FlushLinger, libraryRange)
	j.validateTimeRange(v)
	for i := range j.Sinks {
		j.Sinks[i].validate(v, fmt.Sprintf("sinks[%d]", i))
	}
	if j.DeadLetter != nil {
		j.DeadLetter.validate(v, "dead_letter")
	}
	j.validateSinkSet(v)
	j.validateOutputs(v)
	v.size("state.memory", j.State.Memory)
	v.duration("checkpoint_interval", j.CheckpointInterval, libraryRange)
	j.validateLibrary(v)
	j.validateTables(v)
	if set, _, _ := j.tableSet("", 0); set != nil {
		v.lookup = []process.Option{process.WithTables(set)}
	}
	j.processing(v)
	j.windows(v, nil)
	if a := j.Admin.Addr; a != "" && a != admin.Off {
		if _, err := admin.ListenAddr(a); err != nil {
			v.bad("admin.addr", "%v", err)
		}
	}
	v.duration("discovery_interval", j.DiscoveryInterval, notNegative)
	v.duration("startup_timeout", j.StartupTimeout, notZero)
	// In the file's order: the library's verdict comes in its own.
	slices.SortStableFunc(v.errs, func(a, b *FieldError) int { return cmp.Compare(lineOrLast(a.Line), lineOrLast(b.Line)) })
	return v.errs.err()
}

// lineOrLast sorts a problem of unknown line (0) after the others.
func lineOrLast(line int) int {
	if line == 0 {
		return math.MaxInt
	}
	return line
}

// validateLibrary maps the library's verdict on the pipeline the job makes
// (signalbox.ValidateOptions: the inputs, the late policy, the run mode, the
// set of sinks, every size and interval) and on the parked-state budget
// (durable.StoreOptions.Validate) onto the job's YAML paths: the rules are
// the library's, so that validate refuses what New would.
func (j *Job) validateLibrary(v *validator) {
	opts := append(j.options(), signalbox.WithInputs(j.libraryInputs()...))
	for i := range j.Sinks {
		s := standInFor(j.Sinks[i].info(j))
		if j.Sinks[i].Where != "" {
			opts = append(opts, signalbox.WithRoutedSink(s, func(*record.Record) (bool, error) { return true, nil }))
			continue
		}
		opts = append(opts, signalbox.WithSink(s))
	}
	if j.DeadLetter != nil {
		opts = append(opts, signalbox.WithDeadLetter(standInFor(j.DeadLetter.info(j))))
	}
	for _, fe := range fielderr.All(signalbox.ValidateOptions(opts...)) {
		path, near := optionPath(j.libraryField(fe.Field))
		v.badNear(path, near, "%s", fe.Msg)
	}
	if j.State.Dir != "" {
		opts := durable.StoreOptions{MemoryBudget: sizeOrZero(j.State.Memory)}
		for _, fe := range fielderr.All(opts.Validate()) {
			v.bad("state.memory", "%s", fe.Msg)
		}
	}
}

// standIn and checkpointStandIn stand for the job's sinks in the library's
// verdict, which only asks them what they are (Info): each states what the
// sink it stands for would (SinkSettings.info), and the exactly-once one is
// a CheckpointSink, as the real one is.
type (
	standIn struct {
		signalbox.Sink
		info signalbox.SinkInfo
	}
	checkpointStandIn struct {
		signalbox.CheckpointSink
		info signalbox.SinkInfo
	}
)

func (s standIn) Info() signalbox.SinkInfo           { return s.info }
func (s checkpointStandIn) Info() signalbox.SinkInfo { return s.info }

// standInFor is a stand-in for a sink that states info.
func standInFor(info signalbox.SinkInfo) signalbox.Sink {
	if info.ExactlyOnce {
		return checkpointStandIn{info: info}
	}
	return standIn{info: info}
}

// optionPath is the YAML path of the library's field, and the field whose
// line locates it when it is absent from the file.
func optionPath(field string) (path, near string) {
	switch {
	case field == "parked_limit":
		return "state.memory", "state.memory"
	case field == "dead_letter": // required by late
		return field, "late"
	case strings.HasPrefix(field, "sinks[") && strings.HasSuffix(field, "]"): // the second exactly-once sink
		return field + ".type", field + ".type"
	}
	return field, field
}

// validateConnection maps the Kafka source's verdict on the connection
// (kafka.Config.Validate, the one copy of those rules) onto the job's YAML
// paths, and checks what only the job file has: password_env and
// group_instance_id_env. The topics and topic patterns are the inputs':
// each topic name is checked at its input by the rule of every Kafka topic
// name (topicpattern.CheckName, the source's and the kafka sink's), the
// patterns by Input.Validate; that there is at least one is the source's
// rule, reported at inputs.
func (j *Job) validateConnection(v *validator) {
	k := j.kafkaConfig()
	if j.SASL.PasswordEnv != "" {
		k.SASL.Password = "(read by Build)" // stands in for the secret
	}
	if j.SASL.TokenEnv != "" {
		k.SASL.Token = "(read by Build)"
	}
	idFromEnv := j.GroupInstanceIDEnv != "" && j.GroupInstanceID == ""
	if idFromEnv {
		k.GroupInstanceID = "(read by Build)" // stands in for the variable's value
	}
	k.EnsureDefaults()
	for _, fe := range fielderr.All(k.Validate()) {
		switch {
		case fe.Field == "topics": // none: the job has no input
			v.bad("inputs", "%s", fe.Msg)
		case strings.HasPrefix(fe.Field, "topics"), strings.HasPrefix(fe.Field, "topic_patterns"):
		case fe.Field == "group_instance_id" && idFromEnv:
			v.bad("group_instance_id_env", "%s", fe.Msg)
		default:
			v.bad(fe.Field, "%s", fe.Msg)
		}
	}
	for i, in := range j.Inputs {
		if in.Topic == "" {
			continue // required unless topic_pattern is set: Input.Validate says which
		}
		if err := topicpattern.CheckName(in.Topic); err != nil {
			v.bad(fmt.Sprintf("inputs[%d].topic", i), "%v", err)
		}
	}
	switch s := j.SASL; {
	case s.Mechanism == kafka.SASLOAuthBearer && s.PasswordEnv != "":
		v.bad("sasl.password_env", "not used with mechanism %s: the token names the principal", s.Mechanism)
	case s.Mechanism != "" && s.Mechanism != kafka.SASLOAuthBearer && s.PasswordEnv == "":
		v.bad("sasl.password_env", "required with mechanism %s: the name of the environment variable holding the password", s.Mechanism)
	}
	v.envName("sasl.password_env", j.SASL.PasswordEnv)
	v.envName("sasl.token_env", j.SASL.TokenEnv)
	if j.GroupInstanceIDEnv != "" && j.GroupInstanceID != "" {
		v.bad("group_instance_id_env", "set group_instance_id or group_instance_id_env, not both")
	}
	v.envName("group_instance_id_env", j.GroupInstanceIDEnv)
}

// library is the signalbox.Input the job's input builds.
func (in Input) library() signalbox.Input {
	return signalbox.Input{
		Topic: in.Topic, TopicPattern: in.TopicPattern, Time: signalbox.TimeSource(in.Time), TimeField: in.TimeField,
		TimeFormat: signalbox.TimeFormat(in.TimeFormat), Key: signalbox.KeySource(in.Key), KeyField: in.KeyField,
	}
}

// libraryInputs are the signalbox.Inputs the job's inputs build, without
// their decoders (Build adds them).
func (j *Job) libraryInputs() []signalbox.Input {
	ins := j.readInputs() // the tables' inputs too (table.go)
	inputs := make([]signalbox.Input, len(ins))
	for i, in := range ins {
		inputs[i] = in.library()
	}
	return inputs
}
