package main

import (
	"context"
	"testing"

	"github.com/signalbox/signalbox/internal/version"
)

// TestVersion checks that `version` and `--version` print the build's
// version, commit and Go version, on stdout, with exit code 0.
func TestVersion(t *testing.T) {
	want := version.Get().String()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := cli(t, context.Background(), args...)
		if code != exitOK || out != want || errs != "" {
			t.Errorf("signalbox %v: exit %d, stdout %q, stderr %q; want exit 0, stdout %q", args, code, out, errs, want)
		}
	}
	if code, _, _ := cli(t, context.Background(), "version", "extra"); code != exitUsage {
		t.Errorf("signalbox version extra: exit %d, want %d", code, exitUsage)
	}
}
