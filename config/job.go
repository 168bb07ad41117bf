package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Job is one signalbox job file. Every field is documented, with its
// default, in docs/config.md.
type Job struct {
	Brokers            []string `yaml:"brokers"`
	Group              string   `yaml:"group"`
	ClientID           string   `yaml:"client_id"`
	Start              string   `yaml:"start"`
	Isolation          string   `yaml:"isolation"`
	TLS                TLS      `yaml:"tls"`
	SASL               SASL     `yaml:"sasl"`
	Inputs             []Input  `yaml:"inputs"`
	Delay              string   `yaml:"delay"`
	Late               string   `yaml:"late"`
	Until              string   `yaml:"until"`
	Sinks              []Sink   `yaml:"sinks"`
	DeadLetter         *Sink    `yaml:"dead_letter"`
	State              State    `yaml:"state"`
	CheckpointInterval string   `yaml:"checkpoint_interval"`
	BatchSize          int      `yaml:"batch_size"`
	Align              string   `yaml:"align"`
	MaxFuture          string   `yaml:"max_future"`
	FlushLinger        string   `yaml:"flush_linger"`
	DiscoveryInterval  string   `yaml:"discovery_interval"`
	GroupInstanceID    string   `yaml:"group_instance_id"`
	GroupInstanceIDEnv string   `yaml:"group_instance_id_env"`
	StartupTimeout     string   `yaml:"startup_timeout"`
	Admin              Admin    `yaml:"admin"`
	// SchemaRegistry is the registry of the schema'd formats (nil: none).
	SchemaRegistry *SchemaRegistry `yaml:"schema_registry"`
	// Process filters and maps every record on its way to the sinks
	// (process.go; nil: none).
	Process *Process `yaml:"process"`
	// Windows are computed on the released records (window.go).
	Windows []Window `yaml:"windows"`
	// Tables are topics read as versioned tables for lookup (table.go).
	Tables []Table `yaml:"tables"`

	lines map[string]int // YAML path → line, filled by Parse
}

// TLS is the `tls` section.
type TLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SASL is the `sasl` section. PasswordEnv and TokenEnv are the NAMES of the
// environment variables that hold the password and the OAUTHBEARER token.
type SASL struct {
	Mechanism   string `yaml:"mechanism"`
	User        string `yaml:"user"`
	PasswordEnv string `yaml:"password_env"`
	TokenEnv    string `yaml:"token_env"`
	TokenFile   string `yaml:"token_file"`
}

// Input is one entry of `inputs`.
type Input struct {
	Topic        string `yaml:"topic"`
	TopicPattern string `yaml:"topic_pattern"`
	Time         string `yaml:"time"`
	TimeField    string `yaml:"time_field"`
	TimeFormat   string `yaml:"time_format"`
	Key          string `yaml:"key"`
	KeyField     string `yaml:"key_field"`
	// Format is the value's format (formats.Names: json, avro, protobuf,
	// json_schema, raw; default json), KeyFormat the key's (default: the
	// key's bytes).
	Format    string `yaml:"format"`
	KeyFormat string `yaml:"key_format"`
	// Process filters and maps the input's records before the job's
	// process (process.go; nil: none).
	Process *Process `yaml:"process"`
}

// State is the `state` section: where and within what memory budget parked
// records are kept.
type State struct {
	Dir    string `yaml:"dir"`
	Memory string `yaml:"memory"`
}

// Admin is the `admin` section: the HTTP admin server of `run` (/metrics,
// /status, /healthz, /readyz).
type Admin struct {
	// Addr is host:port, or "off"; "" means admin.DefaultAddr. An empty host
	// binds the loopback interface only.
	Addr string `yaml:"addr"`
}

// FieldError is one problem with one field of a job file.
type FieldError struct {
	Path string // YAML path, e.g. "inputs[2].time_field"; "" for the document
	Line int    // 1-based line in the file; 0 when unknown
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// Errors is every problem found in a job file. Its Error has one problem per
// line.
type Errors []*FieldError

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap lets errors.As find each FieldError.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// err returns es as an error, nil when empty.
func (es Errors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// MaxJobSize bounds a job file. A real job is a few kilobytes; the bound
// keeps `validate` and `run` fast and small on a file that is not a job at
// all (a 10 MB YAML would otherwise take seconds and hundreds of MB to parse).
const MaxJobSize = 1 << 20

// Load reads and parses the job file at path. See Parse.
func Load(path string) (*Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxJobSize+1))
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes a job file. Unknown keys and values of the wrong type come
// back as Errors, each with its YAML path and line, together with the job
// decoded from everything else, so that Validate can report the rest; a job
// is nil only when the document is not YAML at all, holds more than one
// document, or is larger than MaxJobSize.
//
// The document is parsed once into a yaml.Node tree and decoded by walking
// it against the yaml tags of Job (decode.go), so that every problem is
// found on the node it is about, never by reading the text of yaml.v3's
// error messages.
func Parse(data []byte) (*Job, error) {
	j, _, err := parse(data)
	return j, err
}

// parse is Parse; it also returns how many nodes the decoder visited.
func parse(data []byte) (*Job, int, error) {
	if len(data) > MaxJobSize {
		return nil, 0, Errors{{Msg: fmt.Sprintf("a job file is at most %d bytes (1 MiB); this one is larger", MaxJobSize)}}
	}
	r := bytes.NewReader(data)
	dec := yaml.NewDecoder(r)
	var root yaml.Node
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, Errors{syntaxError(data, len(data)-r.Len(), err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, 0, Errors{{Line: extra.Line, Msg: "a job file holds one YAML document"}}
	} else if !errors.Is(err, io.EOF) {
		return nil, 0, Errors{syntaxError(data, len(data)-r.Len(), err)}
	}
	if len(root.Content) == 0 { // an empty file: every field takes its default
		return &Job{lines: map[string]int{}}, 0, nil
	}
	if err := checkExpansion(&root); err != nil {
		return nil, 0, Errors{err}
	}
	j, d := decodeJob(root.Content[0])
	return j, d.nodes, d.errs.err()
}

// decodeJob decodes a document checkExpansion accepted.
func decodeJob(n *yaml.Node) (*Job, *nodeDecoder) {
	j := &Job{lines: map[string]int{}}
	d := &nodeDecoder{lines: j.lines}
	d.decode(n, reflect.ValueOf(j).Elem(), "")
	return j, d
}

// LoadChecked is Load followed by Validate: it returns the job together with
// every problem of both, as one Errors, or a file-system error.
func LoadChecked(path string) (*Job, error) {
	j, err := Load(path)
	var es Errors
	if err != nil && !errors.As(err, &es) {
		return nil, err
	}
	if j != nil {
		if verr := j.Validate(); verr != nil {
			es = append(es, verr.(Errors)...)
		}
	}
	return j, es.err()
}
