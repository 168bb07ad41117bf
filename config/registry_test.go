package config

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/sources/kafka"
)

// TestFormatValidation: each wrong format setting is refused naming its
// field.
func TestFormatValidation(t *testing.T) {
	reg := "schema_registry: {url: 'http://localhost:8081'}\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"format", minimal + "  - {topic: b, format: xml}", `inputs[1].format: "xml" is not one of json, avro, protobuf, json_schema, raw`},
		{"key_format", minimal + "  - {topic: b, key_format: csv}", `inputs[1].key_format: "csv" is not one of json`},
		{"no registry", minimal + "  - {topic: b, format: avro}", "inputs[1].format: avro needs a schema_registry block (the job has none)"},
		{"no registry for keys", minimal + "  - {topic: b, key_format: protobuf}", "inputs[1].key_format: protobuf needs a schema_registry block"},
		{"raw time field", minimal + "  - {topic: b, format: raw, time: field, time_field: ts}", "inputs[1].time_field: format raw keeps the value as opaque bytes"},
		{"raw key field", minimal + "  - {topic: b, format: raw, key: field, key_field: id}", "inputs[1].key_field: format raw keeps the value as opaque bytes"},
		{"registry url", "schema_registry: {username: u}\n" + minimal, "schema_registry.url: at least one URL is required"},
		{"registry bad url", "schema_registry: {url: 'localhost:8081'}\n" + minimal, `schema_registry.url: "localhost:8081" is not an http(s) URL with a host`},
		{"registry urls", "schema_registry: {urls: ['http://a:1', 'ftp://b']}\n" + minimal, `schema_registry.urls[1]: "ftp://b" is not an http(s) URL with a host`},
		{"registry password in url", "schema_registry: {url: 'http://u:secret@a:1'}\n" + minimal, "schema_registry.url: must not hold a password"},
		{"registry password_env", "schema_registry: {url: 'http://a:1', username: u}\n" + minimal, "schema_registry.password_env: required with username"},
		{"registry username", "schema_registry: {url: 'http://a:1', password_env: P}\n" + minimal, "schema_registry.username: required with password_env"},
		{"registry both", "schema_registry: {url: 'http://a:1', username: u, password_env: P, bearer_token_env: T}\n" + minimal, "schema_registry.bearer_token_env: set a username or a bearer token, not both"},
		{"registry secret inline", "schema_registry: {url: 'http://a:1', bearer_token_env: 'abc.def'}\n" + minimal, "schema_registry.bearer_token_env: must be the NAME"},
		{"registry tls", "schema_registry: {url: 'http://a:1', tls: {cert_file: c.pem}}\n" + minimal, "schema_registry.tls.key_file: required with cert_file"},
		{"registry unknown field", "schema_registry: {url: 'http://a:1', password: x}\n" + minimal, "schema_registry.password: unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found := false
			ps := problems(t, tc.doc)
			for _, p := range ps {
				found = found || strings.Contains(p, tc.want)
			}
			if !found {
				t.Fatalf("problems %q, want one containing %q", ps, tc.want)
			}
		})
	}
	for _, ok := range []string{
		minimal + "  - {topic: b, format: json, key_format: raw}",
		minimal + "  - {topic: b, format: raw}",
		reg + minimal + "  - {topic: b, format: avro, key_format: avro, time: field, time_field: meta.ts, key: field, key_field: sku}",
		"schema_registry: {urls: ['https://a:1', 'https://b:1'], username: u, password_env: SR_PASSWORD}\n" + minimal + "  - {topic: b, format: protobuf}",
	} {
		if p := problems(t, ok); len(p) != 0 {
			t.Errorf("%s\nproblems %q, want none", ok, p)
		}
	}
}

// TestBuildSchemaFormats: Build gives schema'd inputs a decoder of their
// format (keys with the key header), others none; a secret is read from
// its variable and never appears in an error.
func TestBuildSchemaFormats(t *testing.T) {
	doc := "schema_registry: {url: 'http://127.0.0.1:1', username: u, password_env: SR_TEST_PASSWORD}\n" + minimal +
		"  - {topic: b, format: avro, key_format: protobuf}\n  - {topic: c, format: raw}\n"
	j, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SR_TEST_PASSWORD", "")
	if _, err := j.Build(nil); err == nil || !strings.Contains(err.Error(), "schema_registry.password_env: environment variable SR_TEST_PASSWORD is unset or empty") {
		t.Fatalf("Build without the password: %v", err)
	}
	t.Setenv("SR_TEST_PASSWORD", "hunter2")
	lib := make([]signalbox.Input, len(j.Inputs))
	for i, in := range j.Inputs {
		lib[i] = in.library()
	}
	if err := j.decoders(lib); err != nil {
		t.Fatal(err)
	}
	if lib[0].Decoder != nil || lib[0].KeyDecoder != nil || lib[2].Decoder != nil {
		t.Fatalf("json and raw inputs got decoders: %+v %+v", lib[0], lib[2])
	}
	if _, ok := lib[1].Decoder.(*formats.Decoder); !ok {
		t.Fatalf("avro input: decoder %T", lib[1].Decoder)
	}
	if _, ok := lib[1].KeyDecoder.(*formats.Decoder); !ok {
		t.Fatalf("protobuf key: decoder %T", lib[1].KeyDecoder)
	}
	// The registry is down (nothing listens on port 1): CheckRegistry says
	// so, naming the block, without the password.
	err = j.CheckRegistry(context.Background())
	if err == nil || !strings.Contains(err.Error(), "schema_registry: cannot reach the registry") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("CheckRegistry on a closed port: %v", err)
	}
}

// TestCheckRegistry: --connect's check passes against a registry that
// answers, with basic auth, and fails naming the field when it answers 503.
func TestCheckRegistry(t *testing.T) {
	reg := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("u:s3cret"))))
	defer reg.Close()
	t.Setenv("SR_TEST_PASSWORD", "s3cret")
	doc := "schema_registry: {url: '" + reg.URL() + "', username: u, password_env: SR_TEST_PASSWORD}\n" + minimal
	j, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.CheckRegistry(context.Background()); err != nil {
		t.Fatalf("a registry that answers: %v", err)
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	j.SchemaRegistry.URL = down.URL
	if err := j.CheckRegistry(context.Background()); err == nil || !strings.Contains(err.Error(), "schema_registry") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a registry answering 503: %v", err)
	}
}

// TestCheckRegistryBearerToken: the token is read from bearer_token_env
// (unset: an error naming that field), sent to the registry, and kept out
// of the error even when the registry echoes it back.
func TestCheckRegistryBearerToken(t *testing.T) {
	const token = "tok-s3cret-42"
	reg := srfake.New(srfake.WithAuth("Bearer " + token))
	defer reg.Close()
	doc := "schema_registry: {url: '" + reg.URL() + "', bearer_token_env: SR_TEST_TOKEN}\n" + minimal
	j, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SR_TEST_TOKEN", "")
	if err := j.CheckRegistry(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "schema_registry.bearer_token_env: environment variable SR_TEST_TOKEN is unset or empty") {
		t.Fatalf("CheckRegistry without the token: %v", err)
	}
	t.Setenv("SR_TEST_TOKEN", token)
	if err := j.CheckRegistry(context.Background()); err != nil {
		t.Fatalf("a registry that answers: %v", err)
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error_code":50301,"message":"down; you sent `+r.Header.Get("Authorization")+`"}`, http.StatusServiceUnavailable)
	}))
	defer echo.Close()
	j.SchemaRegistry.URL = echo.URL
	err = j.CheckRegistry(context.Background())
	if err == nil || !strings.Contains(err.Error(), "schema_registry: cannot reach the registry") || strings.Contains(err.Error(), token) {
		t.Fatalf("a registry answering 503 with the token: %v", err)
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("the echoed token is not marked redacted: %v", err)
	}
}

// TestConnectionRulesAreTheOwners: the rules of the registry client's
// configuration (registry.Config.Validate) and of TLS files
// (kafka.TLS.Validate) are written once, by the packages that own them:
// the job file reports each at its own field with the owner's message.
func TestConnectionRulesAreTheOwners(t *testing.T) {
	for _, tc := range []struct {
		name, doc, path string
		owner           error // the owner's verdict on the same settings
	}{
		{"no registry url", "schema_registry: {}\n" + minimal, "schema_registry.url", registry.Config{}.Validate()},
		{"bad registry url", "schema_registry: {url: 'http://c:1', urls: ['http://a:1', 'ftp://b']}\n" + minimal, "schema_registry.urls[1]",
			registry.Config{URLs: []string{"http://c:1", "http://a:1", "ftp://b"}}.Validate()},
		{"registry username and bearer token", "schema_registry: {url: 'http://a:1', username: u, password_env: P, bearer_token_env: T}\n" + minimal,
			"schema_registry.bearer_token_env", registry.Config{URLs: []string{"http://a:1"}, Username: "u", BearerToken: "t"}.Validate()},
		{"registry certificate without key", "schema_registry: {url: 'https://a:1', tls: {cert_file: c.pem}}\n" + minimal,
			"schema_registry.tls.key_file", kafka.TLS{Enable: true, CertFile: "c.pem"}.Validate()},
		{"registry key without certificate", "schema_registry: {url: 'https://a:1', tls: {key_file: k.pem}}\n" + minimal,
			"schema_registry.tls.cert_file", kafka.TLS{Enable: true, KeyFile: "k.pem"}.Validate()},
		{"kafka key without certificate", minimal + "tls: {enabled: true, key_file: k.pem}\n", "tls.cert_file", kafka.TLS{Enable: true, KeyFile: "k.pem"}.Validate()},
	} {
		owner := fielderr.All(tc.owner)
		if len(owner) != 1 {
			t.Fatalf("%s: the owner's verdict %v, want one field error", tc.name, tc.owner)
		}
		j, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var es Errors
		errors.As(j.Validate(), &es)
		if len(es) != 1 || es[0].Path != tc.path || es[0].Msg != owner[0].Msg {
			t.Errorf("%s: validate says %v; want one problem at %s saying %q (the owner's)", tc.name, es, tc.path, owner[0].Msg)
		}
	}
}
