package config

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sources/kafka"
)

// SchemaRegistry is the `schema_registry` block: the Confluent-compatible
// registry that the schema'd formats read their schemas from.
type SchemaRegistry struct {
	URL            string   `yaml:"url"`
	URLs           []string `yaml:"urls"`
	Username       string   `yaml:"username"`
	PasswordEnv    string   `yaml:"password_env"`
	BearerTokenEnv string   `yaml:"bearer_token_env"`
	TLS            TLS      `yaml:"tls"`
}

// The values of an input's format and key_format.
const (
	FormatJSON       = "json"
	FormatAvro       = "avro"
	FormatProtobuf   = "protobuf"
	FormatJSONSchema = "json_schema"
	FormatRaw        = "raw"
	DefaultFormat    = FormatJSON
)

var formatNames = []string{FormatJSON, FormatAvro, FormatProtobuf, FormatJSONSchema, FormatRaw}

// schemaFormat reports whether f reads the schema registry.
func schemaFormat(f string) bool {
	return f == FormatAvro || f == FormatProtobuf || f == FormatJSONSchema
}

// registryAttempt bounds one attempt of the registry client: no retries
// inside it (MaxElapsed 1ns), because the engine holds a partition whose
// record cannot be decoded and retries it with its own backoff, without
// blocking the other partitions' records for longer than one request.
var registryAttempt = retry.Policy{MaxElapsed: time.Nanosecond}

// urls are the block's URLs: url, then urls.
func (s *SchemaRegistry) urls() []string {
	if s.URL == "" {
		return s.URLs
	}
	return append([]string{s.URL}, s.URLs...)
}

// validateFormats checks an input's format and key_format against its
// time and key settings and the job's schema_registry.
func (in Input) validateFormats(v *validator, p string, reg *SchemaRegistry) {
	v.oneOf(p+".format", in.Format, formatNames)
	v.oneOf(p+".key_format", in.KeyFormat, formatNames)
	for _, f := range []struct{ path, val string }{{p + ".format", in.Format}, {p + ".key_format", in.KeyFormat}} {
		if schemaFormat(f.val) && reg == nil {
			v.bad(f.path, "%s needs a schema_registry block (the job has none)", f.val)
		}
	}
	if in.Format == FormatRaw && in.Time == string(signalbox.TimeFromField) {
		v.bad(p+".time_field", "format raw keeps the value as opaque bytes: there is no field to read the time from")
	}
	if in.Format == FormatRaw && in.Key == string(signalbox.KeyFromField) {
		v.bad(p+".key_field", "format raw keeps the value as opaque bytes: there is no field to read the key from")
	}
}

// validate checks the block. It reads no environment variable.
func (s *SchemaRegistry) validate(v *validator) {
	const p = "schema_registry"
	if len(s.urls()) == 0 {
		v.bad(p+".url", "required (or urls): the registry's base URL, such as http://localhost:8081")
	}
	check := func(path, raw string) {
		if u, err := registry.ParseURL(raw); err != nil {
			v.bad(path, "%v", err)
		} else if _, set := u.User.Password(); set {
			v.bad(path, "must not hold a password: use username and password_env")
		}
	}
	if s.URL != "" {
		check(p+".url", s.URL)
	}
	for i, raw := range s.URLs {
		check(fmt.Sprintf("%s.urls[%d]", p, i), raw)
	}
	if s.Username != "" && s.PasswordEnv == "" {
		v.bad(p+".password_env", "required with username: the name of the environment variable holding the password")
	}
	if s.PasswordEnv != "" && s.Username == "" {
		v.bad(p+".username", "required with password_env")
	}
	if s.BearerTokenEnv != "" && s.Username != "" {
		v.bad(p+".bearer_token_env", "set username or bearer_token_env, not both")
	}
	v.envName(p+".password_env", s.PasswordEnv)
	v.envName(p+".bearer_token_env", s.BearerTokenEnv)
	if (s.TLS.CertFile == "") != (s.TLS.KeyFile == "") {
		v.bad(p+".tls.key_file", "tls.cert_file and tls.key_file go together")
	}
}

// client builds the registry client, reading the secrets from their
// environment variables.
func (s *SchemaRegistry) client(lines map[string]int, policy retry.Policy) (*registry.Client, error) {
	const p = "schema_registry"
	cfg := registry.Config{URLs: s.urls(), Username: s.Username, Retry: policy, Setting: p}
	var err error
	if s.PasswordEnv != "" {
		if cfg.Password, err = envField(lines, p+".password_env", s.PasswordEnv); err != nil {
			return nil, err
		}
	}
	if s.BearerTokenEnv != "" {
		if cfg.BearerToken, err = envField(lines, p+".bearer_token_env", s.BearerTokenEnv); err != nil {
			return nil, err
		}
	}
	if t := s.TLS; t.Enabled || t.CAFile != "" || t.CertFile != "" || slices.ContainsFunc(cfg.URLs, isHTTPS) {
		kt := kafka.TLS{Enable: true, CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, InsecureSkipVerify: t.InsecureSkipVerify}
		if cfg.TLS, err = kt.Config(); err != nil {
			return nil, Errors{{Path: p + ".tls", Line: lines[p+".tls"], Msg: err.Error()}}
		}
	}
	c, err := registry.New(cfg)
	if err != nil {
		return nil, Errors{{Path: p, Line: lines[p], Msg: err.Error()}}
	}
	return c, nil
}

func isHTTPS(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme == "https"
}

// decoders sets the Decoder and KeyDecoder of every input whose format or
// key_format is a schema format, all sharing one registry client.
func (j *Job) decoders(inputs []signalbox.Input) error {
	var reg *registry.Client
	for i, in := range j.readInputs() {
		for _, f := range []struct {
			format string
			key    bool
			set    *signalbox.ValueDecoder
		}{{in.Format, false, &inputs[i].Decoder}, {in.KeyFormat, true, &inputs[i].KeyDecoder}} {
			if !schemaFormat(f.format) {
				continue
			}
			if reg == nil {
				var err error
				if reg, err = j.SchemaRegistry.client(j.lines, registryAttempt); err != nil {
					return err
				}
			}
			d, err := formats.New(formats.Config{Format: formats.Format(f.format), Registry: reg, Key: f.key})
			if err != nil {
				return err
			}
			*f.set = d
		}
	}
	return nil
}

// CheckRegistry asks the job's schema registry whether it answers (what
// `signalbox validate --connect` does); nil when the job has none. The
// error names the field and never holds a credential.
func (j *Job) CheckRegistry(ctx context.Context) error {
	if j.SchemaRegistry == nil {
		return nil
	}
	c, err := j.SchemaRegistry.client(j.lines, registryAttempt) // Ping tries each URL once
	if err != nil {
		return err
	}
	if err := c.Ping(ctx); err != nil {
		msg := "cannot reach the registry: " + err.Error()
		if ae := (*registry.AuthError)(nil); errors.As(err, &ae) {
			msg = ae.Refusal()
		}
		return Errors{{Path: "schema_registry", Line: j.lines["schema_registry"], Msg: msg}}
	}
	return nil
}
