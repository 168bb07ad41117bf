package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunLogsReplayDoneEveryTime: a job run to its end offsets with stdout
// not a terminal logs one replay done line, every run: the pipeline stops
// right after its replay is done, before the progress display's next tick,
// and the display's last snapshot must still show it.
func TestRunLogsReplayDoneEveryTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	job, out, _ := setup(t, ctx, "end-offsets")
	spec, err := os.ReadFile(job)
	if err != nil {
		t.Fatal(err)
	}
	for run := range 5 {
		// A fresh output file each run, so that each replays everything.
		runJob := writeFile(t, "job.yaml", strings.Replace(string(spec), out, filepath.Join(t.TempDir(), "out.jsonl"), 1))
		code, stdout, errs := cli(t, ctx, "run", "-c", runJob)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s", run, code, errs)
		}
		if stdout != "" {
			t.Fatalf("run %d wrote %q to a stdout that is not a terminal", run, stdout)
		}
		if n := strings.Count(errs, "replay done"); n != 1 {
			t.Fatalf("run %d: %d replay done lines, want 1:\n%s", run, n, errs)
		}
		if strings.Index(errs, "replay done") > strings.Index(errs, "stopped") {
			t.Fatalf("run %d: replay done after the stopped line:\n%s", run, errs)
		}
	}
}
