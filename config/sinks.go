package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/signalbox/signalbox"
)

// Sink is one entry of `sinks`, or `dead_letter`: its type and the settings
// of that type (see docs/config.md).
type Sink struct {
	Type string
	// Settings are the type's settings, a *JSONLSink, *BulkSink, *KafkaSink
	// or *PostgresSink as Type says; nil when Type is absent or unknown, or
	// for a type whose every setting takes its default.
	Settings SinkSettings
	// Where routes: a record goes to the sink only when this CEL
	// expression is true of it (process.go; "": every record).
	Where string

	// foreign are the keys set (not to their zero value) that belong to
	// another type, in the order of sinkKinds: Validate refuses them.
	foreign []string
}

// SinkSettings are the settings of one sink type: one struct per type,
// whose yaml tags are its keys, decoded from the keys of the sink's mapping
// once its type is known.
type SinkSettings interface {
	// validate checks the settings of the sink at path p.
	validate(v *validator, p string)
	// build makes the sink; j is the job, for the settings the sink
	// shares with it.
	build(j *Job) (signalbox.Sink, error)
	// info is what the sink build makes states about itself (its
	// package's Config.Info), without making it: validate's stand-ins
	// (validateLibrary) describe themselves by it.
	info(j *Job) signalbox.SinkInfo
}

// sinkKind is one sink type.
type sinkKind struct {
	name   string
	new    func() SinkSettings
	fields []string // the yaml tags of new()'s struct: the type's keys besides type
}

// sinkKinds are the sink types. Their order is that of the keys an unknown
// key is matched against when the type is unknown, and of the foreign keys
// a sink reports; sinkTypes is the order messages list them in.
var sinkKinds = []*sinkKind{
	{name: "jsonl", new: func() SinkSettings { return new(JSONLSink) }},
	{name: "bulk", new: func() SinkSettings { return new(BulkSink) }},
	{name: "kafka", new: func() SinkSettings { return new(KafkaSink) }},
	{name: "postgres", new: func() SinkSettings { return new(PostgresSink) }},
}

// sinkKindOf returns the kind named name, nil when there is none.
func sinkKindOf(name string) *sinkKind {
	if i := slices.IndexFunc(sinkKinds, func(k *sinkKind) bool { return k.name == name }); i >= 0 {
		return sinkKinds[i]
	}
	return nil
}

// sinkUnion is a struct holding type and every key of every sink type, each
// once (a key two types share has one Go type): a sink's mapping is decoded
// into it, so that merge keys, duplicate keys and values of the wrong kind
// are the generic decoder's (or yaml.v3's) business, and then its values go
// to the settings of the sink's type (Sink.take). unionField maps a key to
// its field.
var sinkUnion, unionField = func() (reflect.Type, map[string]int) {
	fields := []reflect.StructField{
		{Name: "Type", Type: reflect.TypeFor[string](), Tag: `yaml:"type"`},
		{Name: "Where", Type: reflect.TypeFor[string](), Tag: `yaml:"where"`}, // every type's (Sink.Where)
	}
	index := map[string]int{"type": 0, "where": 1}
	for _, k := range sinkKinds {
		t := reflect.TypeOf(k.new()).Elem()
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			k.fields = append(k.fields, tag)
			if j, dup := index[tag]; dup {
				if fields[j].Type != f.Type {
					panic(fmt.Sprintf("config: sink key %s is a %v and a %v", tag, fields[j].Type, f.Type))
				}
				continue
			}
			index[tag] = len(fields)
			fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", len(fields)), Type: f.Type, Tag: f.Tag})
		}
	}
	return reflect.StructOf(fields), index
}()

// take sets s from u, a decoded sinkUnion: the type, the settings of that
// type, and the keys of other types that are set.
func (s *Sink) take(u reflect.Value) {
	*s = Sink{Type: u.Field(0).String(), Where: u.Field(1).String()}
	kind := sinkKindOf(s.Type)
	if kind == nil {
		return // Validate reports the type; no key is foreign to no type
	}
	s.Settings = kind.new()
	settings := reflect.ValueOf(s.Settings).Elem()
	for i, tag := range kind.fields {
		settings.Field(i).Set(u.Field(unionField[tag]))
	}
	for _, k := range sinkKinds {
		for _, tag := range k.fields {
			if !slices.Contains(kind.fields, tag) && !slices.Contains(s.foreign, tag) && !u.Field(unionField[tag]).IsZero() {
				s.foreign = append(s.foreign, tag)
			}
		}
	}
}

// UnmarshalYAML lets yaml.v3 decode a Sink as Parse does (bar Parse's
// error messages and lines).
func (s *Sink) UnmarshalYAML(unmarshal func(any) error) error {
	u := reflect.New(sinkUnion)
	if err := unmarshal(u.Interface()); err != nil {
		return err
	}
	s.take(u.Elem())
	return nil
}

// validate checks the type, the keys of other types, and the settings.
func (s *Sink) validate(v *validator, p string) {
	kind := sinkKindOf(s.Type)
	switch {
	case s.Type == "":
		v.bad(p+".type", "required: one of %s", strings.Join(sinkTypes, ", "))
		return
	case kind == nil:
		v.bad(p+".type", "%q is not one of %s", s.Type, strings.Join(sinkTypes, ", "))
		return
	}
	for _, tag := range s.foreign {
		v.bad(p+"."+tag, "not a field of a %s sink (its fields: %s)%s", s.Type, strings.Join(kind.fields, ", "), didYouMean(tag, kind.fields))
	}
	if s.Settings != nil && reflect.TypeOf(s.Settings) != reflect.TypeOf(kind.new()) {
		v.bad(p+".type", "%s, but the settings are a %T", s.Type, s.Settings)
		return
	}
	s.settings().validate(v, p)
}

// settings are s.Settings, or the defaults of its type when nil; nil for
// an unknown type.
func (s *Sink) settings() SinkSettings {
	if s.Settings != nil {
		return s.Settings
	}
	if kind := sinkKindOf(s.Type); kind != nil {
		return kind.new()
	}
	return nil
}

// info is what the sink s builds to states about itself (SinkSettings.info);
// the zero SinkInfo for an unknown type.
func (s *Sink) info(j *Job) signalbox.SinkInfo {
	if c := s.settings(); c != nil {
		return c.info(j)
	}
	return signalbox.SinkInfo{}
}

// writesStdout reports whether the sink writes to standard output.
func (s *Sink) writesStdout() bool {
	c, ok := s.settings().(*JSONLSink)
	return ok && c.writesStdout()
}

// validateSinkSet checks what involves a sink and the rest of the job; how
// many sinks may store the checkpoint is the library's rule
// (validateLibrary).
func (j *Job) validateSinkSet(v *validator) {
	for i := range j.Sinks {
		p := fmt.Sprintf("sinks[%d]", i)
		if c, ok := j.Sinks[i].Settings.(*KafkaSink); ok && c.TransactionalID != "" && c.Group == "" && j.Group == "" {
			v.bad(p+".group", "required with transactional_id when the job has no group: the consumer group whose offsets the output transaction commits")
		}
	}
	if dl := j.DeadLetter; dl != nil {
		if c, ok := dl.Settings.(*KafkaSink); ok && c.Group != "" {
			v.bad("dead_letter.group", "not used by a dead-letter sink: it stores no checkpoint")
		}
	}
}

// sizeOrZero parses a validated size; "" is 0, the default.
func sizeOrZero(s string) int64 {
	n, _ := ParseSize(s)
	return n
}

// fromEnv reads the secret held by the environment variable name, which the
// sink field field names.
func fromEnv(field, name string) (string, error) {
	val := os.Getenv(name)
	if val == "" {
		return "", fmt.Errorf("%s: environment variable %s is unset or empty", field, name)
	}
	return val, nil
}
