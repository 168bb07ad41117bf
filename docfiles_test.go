package signalbox_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
	for _, m := range regexp.MustCompile(`\b[a-z_]+\.go\b`).FindAllString(list, -1) {
		named[m] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
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
