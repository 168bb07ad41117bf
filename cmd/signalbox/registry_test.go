package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/formats/formatstest"
)

// TestRunRefusedRegistryCredentials: `signalbox run` whose schema registry
// refuses the credentials (a wrong password: 403) exits 1 at once, its
// error naming schema_registry and the status, never the password; nothing
// is written or dead-lettered.
func TestRunRefusedRegistryCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	const pass = "s3cret-pass"
	reg := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+pass))))
	defer reg.Close()
	const schema = `{"type":"record","name":"Ev","namespace":"audit","fields":[{"name":"ts","type":"long"}]}`
	id, _, err := reg.RegisterSchema("ev-value", sr.Schema{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(embedded.WithTopic("ev", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "ev", Value: formatstest.AvroRecord(t, schema, id, map[string]any{"ts": int64(1_700_000_000_000 + i)})})
	}
	if err := c.Produce(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUN_REG_PASSWORD", "wrong-"+pass)
	dir := t.TempDir()
	out, dead := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")
	job := writeFile(t, "job.yaml", fmt.Sprintf(`brokers: [%s]
schema_registry: {url: %q, username: alice, password_env: RUN_REG_PASSWORD}
inputs: [{topic: ev, format: avro, time: field, time_field: ts}]
until: end-offsets
sinks: [{type: jsonl, path: %s}]
dead_letter: {type: jsonl, path: %s}
`, c.Addrs()[0], reg.URL(), out, dead))
	start := time.Now()
	code, _, errs := cli(t, ctx, "--log-level", "error", "run", "-c", job, "--admin-addr", "off")
	took := time.Since(start)
	if code != 1 || !strings.Contains(errs, "schema_registry: the schema registry refused the credentials (HTTP 403 Forbidden)") || strings.Contains(errs, pass) {
		t.Fatalf("run: exit %d after %v, stderr %q; want 1, schema_registry and HTTP 403, no password", code, took, errs)
	}
	if took > 20*time.Second {
		t.Fatalf("run took %v to stop", took)
	}
	if got, lost := readOutput(t, out), readOutput(t, dead); len(got)+len(lost) != 0 {
		t.Fatalf("%d records written, %d dead-lettered", len(got), len(lost))
	}
}
