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
	"github.com/signalbox/signalbox/internal/fielderr"
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
	v.oneOf(p+".format", in.Format, formats.Names())
	v.oneOf(p+".key_format", in.KeyFormat, formats.Names())
	for _, f := range []struct{ path, val string }{{p + ".format", in.Format}, {p + ".key_format", in.KeyFormat}} {
		if formats.Format(f.val).Schemad() && reg == nil {
			v.bad(f.path, "%s needs a schema_registry block (the job has none)", f.val)
		}
	}
	if !formats.Format(in.Format).HasFields() && in.Time == string(signalbox.TimeFromField) {
		v.bad(p+".time_field", "format %s keeps the value as opaque bytes: there is no field to read the time from", in.Format)
	}
	if !formats.Format(in.Format).HasFields() && in.Key == string(signalbox.KeyFromField) {
		v.bad(p+".key_field", "format %s keeps the value as opaque bytes: there is no field to read the key from", in.Format)
	}
}

// validate checks the block. It reads no environment variable. The rules
// of the client's configuration (the URLs, username or bearer token) are
// registry.Config.Validate's and those of its TLS files kafka.TLS.Validate's,
// mapped onto the block's fields; only what the job file alone has (the
// secrets' environment variables) is checked here.
func (s *SchemaRegistry) validate(v *validator) {
	const p = "schema_registry"
	cfg := registry.Config{URLs: s.urls(), Username: s.Username}
	if s.BearerTokenEnv != "" {
		cfg.BearerToken = "(bearer_token_env)" // a stand-in: the token is read by Build
	}
	fields := s.fields()
	for _, fe := range fielderr.All(cfg.Validate()) {
		v.bad(p+"."+fields[fe.Field], "%s", fe.Msg)
	}
	for i, raw := range cfg.URLs {
		if u, err := registry.ParseURL(raw); err == nil && u.User != nil {
			if _, set := u.User.Password(); set {
				v.bad(p+"."+fields[fmt.Sprintf("urls[%d]", i)], "must not hold a password: use username and password_env")
			}
		}
	}
	if s.Username != "" && s.PasswordEnv == "" {
		v.bad(p+".password_env", "required with username: the name of the environment variable holding the password")
	}
	if s.PasswordEnv != "" && s.Username == "" {
		v.bad(p+".username", "required with password_env")
	}
	v.envName(p+".password_env", s.PasswordEnv)
	v.envName(p+".bearer_token_env", s.BearerTokenEnv)
	for _, fe := range fielderr.All(s.TLS.registryTLS().Validate()) {
		v.bad(p+".tls."+fe.Field, "%s", fe.Msg)
	}
}

// fields maps the fields of registry.Config onto the block's: its URLs
// are url, then urls (as urls() lists them), its bearer token is
// bearer_token_env.
func (s *SchemaRegistry) fields() map[string]string {
	m := map[string]string{"urls": "url", "bearer_token": "bearer_token_env"}
	first := 0
	if s.URL != "" {
		m["urls[0]"], first = "url", 1
	}
	for i := range s.URLs {
		m[fmt.Sprintf("urls[%d]", first+i)] = fmt.Sprintf("urls[%d]", i)
	}
	return m
}

// registryTLS is the TLS the registry client uses when it uses any: the
// block needs no enabled (a CA, a client certificate or an https URL
// enable it).
func (t TLS) registryTLS() kafka.TLS {
	return kafka.TLS{Enable: true, CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, InsecureSkipVerify: t.InsecureSkipVerify}
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
		kt := t.registryTLS()
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
// key_format is a schema format, all sharing one registry client and its
// compiled schemas (one formats.Codecs: an id compiles once for all).
func (j *Job) decoders(inputs []signalbox.Input) error {
	var codecs *formats.Codecs
	for i, in := range j.readInputs() {
		for _, f := range []struct {
			format string
			key    bool
			set    *signalbox.ValueDecoder
		}{{in.Format, false, &inputs[i].Decoder}, {in.KeyFormat, true, &inputs[i].KeyDecoder}} {
			if !formats.Format(f.format).Schemad() {
				continue
			}
			if codecs == nil {
				reg, err := j.SchemaRegistry.client(j.lines, registryAttempt)
				if err != nil {
					return err
				}
				codecs = formats.NewCodecs(reg)
			}
			d, err := formats.New(formats.Config{Format: formats.Format(f.format), Codecs: codecs, Key: f.key})
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
