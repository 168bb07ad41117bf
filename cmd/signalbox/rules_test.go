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
		job := writeFile(t, "job.yaml", c.Job(dir))
		vcode, vout, verrs := cli(t, context.Background(), "validate", "-c", job)
		rcode, _, rerrs := cli(t, context.Background(), "--log-level", "error", "run", "-c", job)
		if c.Field == "" {
			if vcode != 0 || vout != "ok\n" || rcode != exitRuntime || strings.Contains(rerrs, "invalid") {
				t.Errorf("%s: want valid; validate: exit %d %q %q; run: exit %d %q", c.Name, vcode, vout, verrs, rcode, rerrs)
			}
			continue
		}
		var line string // validate's problem about c.Field
		for _, l := range strings.Split(vout, "\n") {
			if strings.HasPrefix(l, job+": "+c.Field+": ") {
				line = l
			}
		}
		switch {
		case vcode != exitRuntime || line == "":
			t.Errorf("%s: validate: exit %d %q; want exit 1 naming %s", c.Name, vcode, vout, c.Field)
		case rcode != exitUsage || !strings.Contains(rerrs, line):
			t.Errorf("%s: validate says %q; run: exit %d %q; want exit 2 and the same problem", c.Name, line, rcode, rerrs)
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
			t.Errorf("%s: run of a job validate refuses wrote %q", c.Name, files)
		}
	}
}
