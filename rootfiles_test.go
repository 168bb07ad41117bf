package signalbox_test

// Checks on the root package's own source files.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rootSources are the package's non-test Go files.
func rootSources(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
}

// TestDocMapsEveryFile: doc.go's list of files names every non-test Go file
// of the package, and only those, so that the map stays true as files are
// split or added.
func TestDocMapsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(doc), "// The files:\n")
	if !ok {
		t.Fatal(`doc.go has no "The files:" section`)
	}
	list, _, _ = strings.Cut(list, "\n//\n// Names:")
	named := map[string]bool{}
	for _, w := range strings.FieldsFunc(list, func(r rune) bool { return r == ' ' || r == '\n' || r == ',' || r == ':' || r == '/' }) {
		if strings.HasSuffix(w, ".go") {
			named[w] = true
		}
	}
	for _, f := range rootSources(t) {
		if f == "doc.go" {
			continue
		}
		if !named[f] {
			t.Errorf("doc.go's list of files does not name %s", f)
		}
		delete(named, f)
	}
	for f := range named {
		t.Errorf("doc.go's list of files names %s, which does not exist", f)
	}
}

// maxRootLines is the most lines a non-test Go file of the package may
// have: a file says one thing, and a reader takes it in whole. The root is
// the public API and the driver in at most maxRootFiles files (issue 35):
// the engine is internal/engine, record decoding internal/decode, so each
// root file holds one part of the API or one goroutine of the driver.
const maxRootLines = 400

// maxRootFiles is the most non-test Go files the package may have.
const maxRootFiles = 16

// overLong are the files allowed past maxRootLines, each with the most it
// may have (its size when the cap came in: it may shrink, not grow) and why.
var overLong = map[string]struct {
	max int
	why string
}{
	"options.go": {525, "the public option API: one documented With function per setting, the defaults and their validation, which docs/config.md mirrors"},
}

// TestRootFilesShort holds every non-test Go file of the package to
// maxRootLines, except those overLong lists, which may not grow; an
// exception that no longer needs to be one must be removed from the list.
func TestRootFilesShort(t *testing.T) {
	if n := len(rootSources(t)); n > maxRootFiles {
		t.Errorf("the root package has %d non-test Go files, more than %d: the engine's part goes to internal/engine, a new concern to a package of its own", n, maxRootFiles)
	}
	seen := map[string]bool{}
	for _, f := range rootSources(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "\n")
		ex, ok := overLong[f]
		seen[f] = ok
		switch {
		case !ok && n > maxRootLines:
			t.Errorf("%s has %d lines, more than %d: split it by responsibility (and map the new files in doc.go)", f, n, maxRootLines)
		case ok && n > ex.max:
			t.Errorf("%s has %d lines; as an exception (%s) it may have at most %d", f, n, ex.why, ex.max)
		case ok && n <= maxRootLines:
			t.Errorf("%s has %d lines, within %d: remove it from overLong", f, n, maxRootLines)
		}
	}
	for f := range overLong {
		if _, ok := seen[f]; !ok {
			t.Errorf("overLong lists %s, which does not exist", f)
		}
	}
}

// TestClockReadsGoThroughWithClock: the engine reads the time only through
// the configured clock (WithClock), so that a scripted clock drives every
// decision (the engine transcripts). A read of the wall clock in the root
// package is allowed only where a comment on its line, or the line before,
// says why wall time is right ("wall time": retry backoffs, log rate
// limits, trimming idle buffers).
func TestClockReadsGoThroughWithClock(t *testing.T) {
	for _, f := range rootSources(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if !strings.Contains(l, "time.Now()") && !strings.Contains(l, "time.Since(") && !strings.Contains(l, "time.Until(") {
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
