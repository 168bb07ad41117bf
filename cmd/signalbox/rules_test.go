package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/internal/rulecases"
)

// TestValidateAgreesWithRunBinary: `signalbox validate` and `signalbox run`
// give every cross-check case (internal/rulecases) one verdict. A job that
// validate refuses, run refuses with exit 2 and the same problem; a job that
// validate accepts, run accepts and starts, then fails (exit 1) on its
// broker, which refuses connections.
func TestValidateAgreesWithRunBinary(t *testing.T) {
	t.Setenv(rulecases.DSNEnv, "postgres://u@127.0.0.1:1/db")
	for _, c := range rulecases.Cases {
		dir := t.TempDir()
		agreeBinary(t, c.Name, c.Job(dir), c.Field, dir)
	}
}

// TestExplicitZeroRefusedBinary: a sink's count written as 0 is refused by
// validate and by run with the same problem at its YAML path, naming its
// range; left out, it is the default and the job valid.
func TestExplicitZeroRefusedBinary(t *testing.T) {
	t.Setenv(rulecases.DSNEnv, "postgres://u@127.0.0.1:1/db")
	for _, c := range []struct{ sink, key string }{
		{"{type: kafka, topic: t", "max_buffered_records"},
		{"{type: bulk, url: 'http://127.0.0.1:1', index: i", "max_docs"},
		{"{type: postgres, dsn_env: " + rulecases.DSNEnv, "max_batch"},
	} {
		dir := t.TempDir()
		job := func(extra string) string {
			return "brokers: [127.0.0.1:1]\nstartup_timeout: 100ms\ninputs: [{topic: a}]\nsinks:\n  - " + c.sink + extra + "}\n"
		}
		agreeBinary(t, c.key+" 0", job(", "+c.key+": 0"), "sinks[0]."+c.key, dir)
		agreeBinary(t, c.key+" left out", job(""), "", dir)
	}
}

// agreeBinary runs `signalbox validate` and `signalbox run` on the job doc
// and requires one verdict: field "" valid (run starts, then fails on its
// broker, which refuses connections), else validate's problem about field
// from both, and nothing written to dir.
func agreeBinary(t *testing.T, name, doc, field, dir string) {
	t.Helper()
	job := writeFile(t, "job.yaml", doc)
	vcode, vout, verrs := cli(t, context.Background(), "validate", "-c", job)
	rcode, _, rerrs := cli(t, context.Background(), "--log-level", "error", "run", "-c", job)
	if field == "" {
		if vcode != 0 || vout != "ok\n" || rcode != exitRuntime || strings.Contains(rerrs, "invalid") {
			t.Errorf("%s: want valid; validate: exit %d %q %q; run: exit %d %q", name, vcode, vout, verrs, rcode, rerrs)
		}
		return
	}
	var line string // validate's problem about field
	for _, l := range strings.Split(vout, "\n") {
		if strings.HasPrefix(l, job+": "+field+": ") {
			line = l
		}
	}
	switch {
	case vcode != exitRuntime || line == "":
		t.Errorf("%s: validate: exit %d %q; want exit 1 naming %s", name, vcode, vout, field)
	case rcode != exitUsage || !strings.Contains(rerrs, line):
		t.Errorf("%s: validate says %q; run: exit %d %q; want exit 2 and the same problem", name, line, rcode, rerrs)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Errorf("%s: run of a job validate refuses wrote %q", name, files)
	}
}
