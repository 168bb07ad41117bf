package signalbox_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestClockReadsGoThroughWithClock: the engine reads the time only through
// the configured clock (WithClock), so that a scripted clock drives every
// decision (the engine transcripts). A read of the wall clock in the root
// package is allowed only where a comment on its line, or the line before,
// says why wall time is right ("wall time": retry backoffs, log rate
// limits, trimming idle buffers).
func TestClockReadsGoThroughWithClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	wall := regexp.MustCompile(`\btime\.(Now|Since|Until)\(`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if !wall.MatchString(l) {
				continue
			}
			said := strings.Contains(strings.ToLower(l), "wall time")
			if i > 0 {
				said = said || strings.Contains(strings.ToLower(lines[i-1]), "wall time")
			}
			if !said {
				t.Errorf("%s:%d reads the wall clock without saying why (use the configured clock, r.cfg.clock): %s", f, i+1, strings.TrimSpace(l))
			}
		}
	}
}
