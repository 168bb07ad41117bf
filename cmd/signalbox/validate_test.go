package main

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// TestValidateConnect: --connect checks the schema registry, which plain
// validate never contacts.
func TestValidateConnect(t *testing.T) {
	job := func(url string) string {
		return writeFile(t, "job.yaml", "brokers: [localhost:9092]\nschema_registry: {url: '"+url+"'}\n"+
			"inputs: [{topic: a, format: avro}]\nsinks: [{type: jsonl}]\n")
	}
	reg := srfake.New()
	defer reg.Close()
	if code, out, errs := cli(t, context.Background(), "validate", "--connect", "-c", job(reg.URL())); code != 0 || out != "ok\n" {
		t.Fatalf("a registry that answers: exit %d, %q %q", code, out, errs)
	}
	var asked atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	path := job(down.URL)
	if code, out, _ := cli(t, context.Background(), "validate", "-c", path); code != 0 || out != "ok\n" || asked.Load() != 0 {
		t.Fatalf("validate without --connect: exit %d, %q, %d requests to the registry", code, out, asked.Load())
	}
	code, out, _ := cli(t, context.Background(), "validate", "--connect", "-c", path)
	if code != 1 || !strings.Contains(out, path+": schema_registry: cannot reach the registry") || strings.Contains(out, "ok\n") {
		t.Fatalf("a registry answering 503: exit %d, %q", code, out)
	}
}

// TestValidateConnectRefusedCredentials: a registry that answers 401 (no
// credentials) or 403 (a wrong password) is reported as refusing the
// credentials, naming schema_registry and the status, never the password.
func TestValidateConnectRefusedCredentials(t *testing.T) {
	const pass = "s3cret-pass"
	reg := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+pass))))
	defer reg.Close()
	t.Setenv("VALIDATE_REG_PASSWORD", "wrong-"+pass)
	for _, tc := range []struct{ auth, want string }{
		{"", "schema_registry: the schema registry refused the credentials (HTTP 401 Unauthorized)"},
		{", username: alice, password_env: VALIDATE_REG_PASSWORD", "schema_registry: the schema registry refused the credentials (HTTP 403 Forbidden)"},
	} {
		path := writeFile(t, "job.yaml", "brokers: [localhost:9092]\nschema_registry: {url: '"+reg.URL()+"'"+tc.auth+"}\n"+
			"inputs: [{topic: a, format: avro}]\nsinks: [{type: jsonl}]\n")
		code, out, errs := cli(t, context.Background(), "validate", "--connect", "-c", path)
		if code != 1 || !strings.Contains(out, path+": "+tc.want) || strings.Contains(out+errs, pass) || strings.Contains(out, "cannot reach") {
			t.Fatalf("%s: exit %d, %q %q; want 1 and %q", tc.auth, code, out, errs, tc.want)
		}
	}
}
