package examples_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/embedded"
)

// jobFiles is every job file under examples/, found by glob so that a new
// one is covered without touching this test.
func jobFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("found %d job files under examples/, want at least the 6 common shapes: %v", len(files), files)
	}
	return files
}

// TestJobFilesValidate runs what `signalbox validate` runs (Load, then
// Validate) on every job file.
func TestJobFilesValidate(t *testing.T) {
	for _, f := range jobFiles(t) {
		t.Run(f, func(t *testing.T) {
			if _, err := config.LoadChecked(f); err != nil {
				t.Errorf("signalbox validate -c examples/%s:\n%v", f, err)
			}
		})
	}
}

// TestJobFilesCommented holds every job file to a comment that says what it
// is for, at its top, for a newcomer who opens it first.
func TestJobFilesCommented(t *testing.T) {
	for _, f := range jobFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), "# ") {
			t.Errorf("%s: does not start with a comment saying what it is for", f)
		}
	}
}

// TestReadmeLinksExamples checks that the README links every job file and
// the library program.
func TestReadmeLinksExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(jobFiles(t), "library/main.go") {
		link := "(examples/" + filepath.ToSlash(f) + ")"
		if !strings.Contains(string(readme), link) {
			t.Errorf("README.md does not link %s: no %q", f, link)
		}
	}
}

// TestLibraryProgram builds examples/library and runs it with -replay
// against an embedded broker: it must print the records in event-time order
// and exit 0.
func TestLibraryProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	ctx := context.Background()
	c, err := embedded.Start(embedded.WithTopic("orders", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Event times interleave across the two partitions.
	err = c.Produce(ctx,
		embedded.Record("orders", 0, "a", `{"ts":3000}`),
		embedded.Record("orders", 1, "b", `{"ts":1000}`),
		embedded.Record("orders", 0, "c", `{"ts":4000}`),
		embedded.Record("orders", 1, "d", `{"ts":2000}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "library")
	if out, err := exec.Command("go", "build", "-o", bin, "./library").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/library: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-brokers", strings.Join(c.Addrs(), ","), "-topics", "orders", "-time-field", "ts", "-delay", "0s", "-replay")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("library -replay: %v\n%s", err, stderr.String())
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct{ Key string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		keys = append(keys, r.Key)
	}
	if got := strings.Join(keys, ","); got != "b,d,a,c" {
		t.Errorf("keys in output order = %s, want b,d,a,c (event-time order)\n%s", got, out)
	}
}
