package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the raw consumers' child process,
// as the command's own binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestTinyRun runs the whole benchmark on a tiny history, one round, with a
// profile, into a bench.md that has other content. run fails if any
// consumer reads a different number of records than the history holds;
// the test checks the section's rows, the profile and the splice. It
// asserts no timing.
func TestTinyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds signalbox and runs a broker process")
	}
	md := filepath.Join(t.TempDir(), "bench.md")
	if err := os.WriteFile(md, []byte("# Benchmarks\n\nhand-written notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"-sizes", "2400", "-rounds", "1", "-profile-size", "2400", "-out", md}, &out); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	if !strings.HasPrefix(s, "# Benchmarks\n\nhand-written notes\n") || !strings.Contains(s, beginMark) || !strings.Contains(s, out.String()) {
		t.Fatalf("bench.md not spliced:\n%s", s)
	}
	for _, c := range consumers {
		if !strings.Contains(out.String(), "| 3K | "+labels[c]+" |") {
			t.Errorf("no row for %s (3400 records):\n%s", c, out.String())
		}
	}
	if n := strings.Count(out.String(), "flat  flat%"); n != 2 {
		t.Errorf("%d CPU profiles in the section, want 2:\n%s", n, out.String())
	}
}
