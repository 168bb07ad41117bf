package main

import (
	"context"
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
