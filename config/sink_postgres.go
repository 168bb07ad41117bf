package config

import (
	"cmp"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/sinks/postgres"
)

// PostgresSink are the settings of a `type: postgres` sink. DSNEnv is the
// NAME of the environment variable that holds the connection string.
type PostgresSink struct {
	DSNEnv    string `yaml:"dsn_env"`
	Table     string `yaml:"table"`
	Name      string `yaml:"name"`
	ValueType string `yaml:"value_type"`
	NoCreate  bool   `yaml:"no_create"`
	MaxBatch  int    `yaml:"max_batch"`
}

// pgTableRE is an unquoted-style table name, optionally schema-qualified.
// The sink quotes it, so upper case would make a case-sensitive name: the
// library accepts it, but the job file refuses it rather than silently
// surprise a psql user. (The length rule is the library's.)
var pgTableRE = regexp.MustCompile(`^([a-z_][a-z0-9_]*\.)?[a-z_][a-z0-9_]*$`)

func (s *PostgresSink) validate(v *validator, p string) {
	if s.DSNEnv == "" {
		v.bad(p+".dsn_env", "required for a postgres sink: the NAME of the environment variable holding the connection string")
	}
	v.envName(p+".dsn_env", s.DSNEnv)
	if s.Table != "" && !pgTableRE.MatchString(s.Table) {
		v.bad(p+".table", "%q is not a lower-case table name such as signalbox_records or ops.ordered", s.Table)
	}
	cfg := postgres.Config{DSN: "(read by Build)", Table: s.Table, ValueType: s.ValueType, MaxBatch: s.MaxBatch}
	cfg.EnsureDefaults()
	v.asWritten(p+".max_batch", &cfg.MaxBatch, s.MaxBatch)
	v.fields(p, cfg.Validate())
}

func (s *PostgresSink) info(*Job) signalbox.SinkInfo { return postgres.Config{}.Info() }

func (s *PostgresSink) build(j *Job) (signalbox.Sink, error) {
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
