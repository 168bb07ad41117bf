package config

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/sinks/bulk"
	"github.com/signalbox/signalbox/sinks/jsonl"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/postgres"
	"github.com/signalbox/signalbox/sources/kafka"
)

// sinkKind validates and builds the sinks of one type.
type sinkKind struct {
	fields   []string // the YAML keys of Sink this type uses, besides type
	validate func(s *Sink, v *validator, path string)
	build    func(j *Job, s *Sink) (signalbox.Sink, error)
}

// sinkKinds maps every type in sinkTypes to its builder; nil means the
// type is recognised but this build cannot make it yet.
var sinkKinds = map[string]*sinkKind{
	"jsonl":    {fields: []string{"path", "sync", "buffer_size"}, validate: validateJSONL, build: buildJSONL},
	"bulk":     {fields: []string{"url", "index", "auth_env", "max_docs", "max_bytes", "linger", "doc_id", "versioning"}, validate: validateBulk, build: buildBulk},
	"kafka":    {fields: []string{"brokers", "topic", "transactional_id", "group"}, validate: validateKafka, build: buildKafka},
	"postgres": {fields: []string{"dsn_env", "table", "name", "value_type", "no_create", "max_batch"}, validate: validatePostgres, build: buildPostgres},
}

// checkFields reports every field of s that is set but not used by kind.
func (s *Sink) checkFields(kind *sinkKind, v *validator, p string) {
	rv, rt := reflect.ValueOf(*s), reflect.TypeOf(*s)
	for i := range rt.NumField() {
		tag := rt.Field(i).Tag.Get("yaml")
		if tag == "type" || rv.Field(i).IsZero() || slices.Contains(kind.fields, tag) {
			continue
		}
		v.bad(p+"."+tag, "not a field of a %s sink (its fields: %s)%s", s.Type, strings.Join(kind.fields, ", "), didYouMean(tag, kind.fields))
	}
}

func validateJSONL(s *Sink, v *validator, p string) {
	if n := v.size(p+".buffer_size", s.BufferSize); n > 0 {
		v.fields(p, jsonl.Options{BufferSize: int(n)}.Validate())
	}
	if s.Sync && s.writesStdout() {
		v.bad(p+".sync", "only for a file path, not stdout")
	}
}

func buildJSONL(_ *Job, s *Sink) (signalbox.Sink, error) {
	opts := jsonl.Options{Sync: s.Sync, BufferSize: int(sizeOrZero(s.BufferSize))}
	if s.writesStdout() {
		return jsonl.New(os.Stdout, opts), nil
	}
	return jsonl.Create(s.Path, opts), nil
}

var (
	docIDValues      = []string{"key", "offset"}
	versioningValues = []string{"event_time", "offset", "none"}
)

func validateBulk(s *Sink, v *validator, p string) {
	cfg := bulk.Config{URL: s.URL, Index: s.Index, MaxDocs: s.MaxDocs, MaxBytes: int(v.size(p+".max_bytes", s.MaxBytes)),
		Linger: v.duration(p+".linger", s.Linger, notNegative)}
	v.fields(p, cfg.Validate())
	v.oneOf(p+".doc_id", s.DocID, docIDValues)
	v.oneOf(p+".versioning", s.Versioning, versioningValues)
	v.envName(p+".auth_env", s.AuthEnv)
}

func buildBulk(_ *Job, s *Sink) (signalbox.Sink, error) {
	cfg := bulk.Config{URL: s.URL, Index: s.Index, MaxDocs: s.MaxDocs, MaxBytes: int(sizeOrZero(s.MaxBytes))}
	if s.Linger != "" {
		cfg.Linger, _ = time.ParseDuration(s.Linger) // validated
	}
	if s.DocID == "offset" {
		cfg.DocID = bulk.OffsetID
	}
	cfg.Versioning = map[string]bulk.Versioning{"offset": bulk.OffsetVersion, "none": bulk.NoVersion}[s.Versioning]
	if s.AuthEnv != "" {
		auth, err := fromEnv("auth_env", s.AuthEnv)
		if err != nil {
			return nil, err
		}
		cfg.Header = http.Header{"Authorization": []string{auth}}
	}
	return bulk.New(cfg), nil
}

// sizeOrZero parses a validated size; "" is 0, the default.
func sizeOrZero(s string) int64 {
	n, _ := ParseSize(s)
	return n
}

// writesStdout reports whether the sink writes to standard output.
func (s *Sink) writesStdout() bool { return s.Type == "jsonl" && stdoutPaths[s.Path] }

// A Kafka topic name: 1 to 249 of these characters, not "." or "..".
var topicRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

func validateKafka(s *Sink, v *validator, p string) {
	switch {
	case s.Topic == "":
		v.bad(p+".topic", "required for a kafka sink: the output topic, which must exist")
	case !topicRE.MatchString(s.Topic) || s.Topic == "." || s.Topic == "..":
		v.bad(p+".topic", "%q is not a Kafka topic name (letters, digits, '.', '_', '-'; at most 249)", s.Topic)
	}
	for i, b := range s.Brokers {
		if err := kafka.CheckBroker(b); err != nil {
			v.bad(fmt.Sprintf("%s.brokers[%d]", p, i), "%v", err)
		}
	}
	if s.Group != "" && s.TransactionalID == "" {
		v.bad(p+".group", "only used with transactional_id (exactly-once mode)")
	}
}

// pgTableRE is an unquoted-style table name, optionally schema-qualified.
// The sink quotes it, so upper case would make a case-sensitive name: the
// library accepts it, but the job file refuses it rather than silently
// surprise a psql user. (The length rule is the library's.)
var pgTableRE = regexp.MustCompile(`^([a-z_][a-z0-9_]*\.)?[a-z_][a-z0-9_]*$`)

func validatePostgres(s *Sink, v *validator, p string) {
	if s.DSNEnv == "" {
		v.bad(p+".dsn_env", "required for a postgres sink: the NAME of the environment variable holding the connection string")
	}
	v.envName(p+".dsn_env", s.DSNEnv)
	if s.Table != "" && !pgTableRE.MatchString(s.Table) {
		v.bad(p+".table", "%q is not a lower-case table name such as signalbox_records or ops.ordered", s.Table)
	}
	cfg := postgres.Config{DSN: "(read by Build)", Table: s.Table, ValueType: s.ValueType, MaxBatch: s.MaxBatch}
	cfg.EnsureDefaults()
	v.fields(p, cfg.Validate())
}

// exactlyOnce reports whether s stores the checkpoint in its own
// transaction (a CheckpointSink once built).
func (s *Sink) exactlyOnce() bool {
	return s.Type == "postgres" || s.Type == "kafka" && s.TransactionalID != ""
}

// validateSinkSet checks what involves a sink and the rest of the job; how
// many sinks may store the checkpoint is the library's rule
// (validateLibrary).
func (j *Job) validateSinkSet(v *validator) {
	for i := range j.Sinks {
		s, p := &j.Sinks[i], fmt.Sprintf("sinks[%d]", i)
		if s.Type == "kafka" && s.TransactionalID != "" && s.Group == "" && j.Group == "" {
			v.bad(p+".group", "required with transactional_id when the job has no group: the consumer group whose offsets the output transaction commits")
		}
	}
	if dl := j.DeadLetter; dl != nil && dl.Type == "kafka" {
		if dl.Group != "" {
			v.bad("dead_letter.group", "not used by a dead-letter sink: it stores no checkpoint")
		}
	}
}

// atLeastOnce hides the CheckpointSink methods of a sink that is not to
// store the checkpoint: the engine then calls Flush, never FlushCheckpoint,
// and restores nothing from it.
type atLeastOnce struct{ signalbox.Sink }

// Name passes on the wrapped sink's name (signalbox.Namer), which the
// engine's logs and metrics label it with.
func (a atLeastOnce) Name() string {
	if n, ok := a.Sink.(signalbox.Namer); ok {
		return n.Name()
	}
	return "sink"
}

// BytesOnly passes on the wrapped sink's signalbox.BytesSink answer, so
// that a job whose sinks all write original bytes skips rendering them.
func (a atLeastOnce) BytesOnly() bool {
	b, ok := a.Sink.(signalbox.BytesSink)
	return ok && b.BytesOnly()
}

func buildKafka(j *Job, s *Sink) (signalbox.Sink, error) {
	conn, err := j.connection()
	if err != nil {
		return nil, err
	}
	co, err := conn.ConnOpts() // the job's client id, TLS and SASL
	if err != nil {
		return nil, fmt.Errorf("kafka sink: %w", err)
	}
	cfg := kafkasink.Config{Brokers: s.Brokers, Topic: s.Topic, TransactionalID: s.TransactionalID, Conn: co, StartupTimeout: conn.StartupTimeout}
	if cfg.TransactionalID != "" {
		// The transaction commits the job's consumer offsets itself
		// (AddOffsetsToTxn), and signalbox then does not commit them
		// through the source (signalbox.SourceOffsetCommitter).
		cfg.GroupID = cmp.Or(s.Group, j.Group)
	}
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = j.Brokers
	}
	if cfg.TransactionalID == "" || cfg.GroupID == "" {
		return atLeastOnce{kafkasink.New(cfg)}, nil
	}
	return kafkasink.New(cfg), nil
}

func buildPostgres(j *Job, s *Sink) (signalbox.Sink, error) {
	dsn, err := fromEnv("dsn_env", s.DSNEnv)
	if err != nil {
		return nil, err
	}
	if _, err := pgx.ParseConfig(dsn); err != nil { // the message would show the secret
		return nil, fmt.Errorf("dsn_env: environment variable %s does not hold a PostgreSQL connection string", s.DSNEnv)
	}
	return postgres.New(postgres.Config{
		DSN: dsn, Table: s.Table, Name: cmp.Or(s.Name, j.Group, postgres.DefaultName),
		ValueType: s.ValueType, NoCreate: s.NoCreate, MaxBatch: s.MaxBatch,
	}), nil
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
