package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/internal/jsonfield"
)

// The accepted values of the enumerated fields; the first is the default.
var (
	startValues      = []string{"earliest", "latest"}
	isolationValues  = []string{"read_committed", "read_uncommitted"}
	mechanismValues  = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
	timeValues       = []string{"timestamp", "field", "header", "none"}
	timeFormatValues = []string{"auto", "unix_ms", "unix_s", "unix_us", "unix_ns", "rfc3339"}
	keyValues        = []string{"key", "field"}
	lateValues       = []string{"emit", "dead-letter", "drop"}
	untilValues      = []string{"live", "end-offsets"}
	sinkTypes        = []string{"jsonl", "kafka", "postgres", "bulk"}
)

// validator collects FieldErrors.
type validator struct {
	lines map[string]int
	errs  Errors
}

// bad records a problem with the field at path, with the line of the field
// or of its nearest ancestor present in the file.
func (v *validator) bad(path, format string, args ...any) {
	line := 0
	for p := path; p != "" && line == 0; {
		line = v.lines[p]
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	v.errs = append(v.errs, &FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// oneOf checks an enumerated field; "" is accepted as the default.
func (v *validator) oneOf(path, val string, allowed []string) {
	if val != "" && !slices.Contains(allowed, val) {
		v.bad(path, "%q is not one of %s", val, strings.Join(allowed, ", "))
	}
}

// duration checks a Go duration field; "" is accepted as the default.
func (v *validator) duration(path, val string, positive bool) time.Duration {
	if val == "" {
		return 0
	}
	d, err := time.ParseDuration(val)
	switch {
	case err != nil:
		v.bad(path, "%q is not a duration such as 2s or 500ms", val)
	case d < 0 || positive && d == 0:
		v.bad(path, "%s must be positive", val)
	}
	return d
}

func (v *validator) size(path, val string) int64 {
	if val == "" {
		return 0
	}
	n, err := ParseSize(val)
	switch {
	case err != nil:
		v.bad(path, "%v", err)
	case n <= 0:
		v.bad(path, "%s must be positive", val)
	}
	return n
}

func (v *validator) fieldPath(path, val string) {
	if _, err := jsonfield.ParsePath(val); err != nil {
		v.bad(path, "%q is not a dotted JSON path such as meta.ts", val)
	}
}

// envName checks the name of an environment variable holding a secret.
func (v *validator) envName(path, name string) {
	if strings.ContainsAny(name, "= \t\n") {
		v.bad(path, "must be the NAME of an environment variable, not its value")
	}
}

// Validate checks every field and returns Errors listing every problem, or
// nil. It reads no file and no environment variable: see Build.
func (j *Job) Validate() error {
	v := &validator{lines: j.lines}
	if len(j.Brokers) == 0 {
		v.bad("brokers", "at least one broker is required")
	}
	for i, b := range j.Brokers {
		if host, port, ok := strings.Cut(b, ":"); !ok || host == "" || port == "" {
			v.bad(fmt.Sprintf("brokers[%d]", i), "%q is not host:port", b)
		}
	}
	v.oneOf("start", j.Start, startValues)
	v.oneOf("isolation", j.Isolation, isolationValues)
	j.validateTLS(v)
	j.validateSASL(v)
	if len(j.Inputs) == 0 {
		v.bad("inputs", "at least one input is required")
	}
	topics := map[string]int{}
	for i, in := range j.Inputs {
		p := fmt.Sprintf("inputs[%d]", i)
		if first, dup := topics[in.Topic]; dup && in.Topic != "" {
			v.bad(p+".topic", "%q is already declared by inputs[%d]", in.Topic, first)
		} else {
			topics[in.Topic] = i
		}
		in.validate(v, p)
	}
	v.duration("delay", j.Delay, false)
	v.duration("align", j.Align, false)
	v.duration("max_future", j.MaxFuture, false)
	v.duration("flush_linger", j.FlushLinger, false)
	v.oneOf("late", j.Late, lateValues)
	if j.Late == "dead-letter" && j.DeadLetter == nil {
		v.bad("dead_letter", "required when late is dead-letter")
	}
	v.oneOf("until", j.Until, untilValues)
	if len(j.Sinks) == 0 {
		v.bad("sinks", "at least one sink is required")
	}
	for i := range j.Sinks {
		j.Sinks[i].validate(v, fmt.Sprintf("sinks[%d]", i))
	}
	if j.DeadLetter != nil {
		j.DeadLetter.validate(v, "dead_letter")
	}
	j.validateSinkSet(v)
	v.size("state.memory", j.State.Memory)
	if (j.State.Dir != "" || j.State.Memory != "") && !pebbleAvailable {
		v.bad("state", "the pebble-backed parked store is not yet supported by this build; remove the state section")
	}
	v.duration("checkpoint_interval", j.CheckpointInterval, true)
	if j.BatchSize < 0 {
		v.bad("batch_size", "%d is negative", j.BatchSize)
	}
	if a := j.Admin.Addr; a != "" && a != admin.Off {
		if _, err := admin.ListenAddr(a); err != nil {
			v.bad("admin.addr", "%v", err)
		}
	}
	return v.errs.err()
}

func (j *Job) validateTLS(v *validator) {
	t := j.TLS
	if !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify) {
		v.bad("tls.enabled", "TLS files or options are set but enabled is false")
	}
	if t.CertFile != "" && t.KeyFile == "" {
		v.bad("tls.key_file", "required with cert_file")
	}
	if t.KeyFile != "" && t.CertFile == "" {
		v.bad("tls.cert_file", "required with key_file")
	}
}

func (j *Job) validateSASL(v *validator) {
	s := j.SASL
	v.oneOf("sasl.mechanism", s.Mechanism, mechanismValues)
	if s.Mechanism == "" {
		if s.User != "" || s.PasswordEnv != "" {
			v.bad("sasl.mechanism", "required when user or password_env is set")
		}
		return
	}
	if s.User == "" {
		v.bad("sasl.user", "required with mechanism %s", s.Mechanism)
	}
	if s.PasswordEnv == "" {
		v.bad("sasl.password_env", "required with mechanism %s: the name of the environment variable holding the password", s.Mechanism)
	} else {
		v.envName("sasl.password_env", s.PasswordEnv)
	}
}

func (in Input) validate(v *validator, p string) {
	if in.Topic == "" {
		v.bad(p+".topic", "required")
	}
	v.oneOf(p+".time", in.Time, timeValues)
	switch in.Time {
	case "field":
		if in.TimeField == "" {
			v.bad(p+".time_field", "required when time is field")
		} else {
			v.fieldPath(p+".time_field", in.TimeField)
		}
	case "header":
		if in.TimeField == "" {
			v.bad(p+".time_field", "required when time is header (the header name)")
		}
	default:
		if in.TimeField != "" {
			v.bad(p+".time_field", "only used when time is field or header")
		}
		if in.TimeFormat != "" {
			v.bad(p+".time_format", "only used when time is field or header")
		}
	}
	v.oneOf(p+".time_format", in.TimeFormat, timeFormatValues)
	v.oneOf(p+".key", in.Key, keyValues)
	switch {
	case in.Key == "field" && in.KeyField == "":
		v.bad(p+".key_field", "required when key is field")
	case in.Key == "field":
		v.fieldPath(p+".key_field", in.KeyField)
	case in.KeyField != "":
		v.bad(p+".key_field", "only used when key is field")
	}
}

func (s *Sink) validate(v *validator, p string) {
	switch kind, known := sinkKinds[s.Type]; {
	case s.Type == "":
		v.bad(p+".type", "required: one of %s", strings.Join(sinkTypes, ", "))
	case !known:
		v.bad(p+".type", "%q is not one of %s", s.Type, strings.Join(sinkTypes, ", "))
	case kind == nil:
		v.bad(p+".type", "the %s sink is not yet supported by this build", s.Type)
	default:
		s.checkFields(kind, v, p)
		kind.validate(s, v, p)
	}
}
