package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTimeRangeFields: start and until accept their documented forms, refuse
// others naming the field, and an until not after a start time is refused.
func TestTimeRangeFields(t *testing.T) {
	for _, tc := range []struct {
		doc, want string // want: "" valid, else a path that must be named
	}{
		{"start: -7d\n", ""},
		{"start: -36h\n", ""},
		{"start: 2026-03-01T00:00:00Z\n", ""},
		{"start: '2026-03-01T00:00:00+01:00'\n", ""},
		{"until: 2026-03-08T00:00:00Z\n", ""},
		{"start: 2026-03-01T00:00:00Z\nuntil: 2026-03-08T00:00:00Z\n", ""},
		{"start: -7d\nuntil: 2999-01-01T00:00:00Z\n", ""},
		{"start: yesterday\n", "start: "},
		{"start: 7d\n", "start: "},
		{"start: 2026-03-01\n", "start: "},
		{"until: tomorrow\n", "until: "},
		{"until: 2026-03-08\n", "until: "},
		{"start: 2026-03-08T00:00:00Z\nuntil: 2026-03-08T00:00:00Z\n", "until: "},
		{"start: 2026-03-09T00:00:00Z\nuntil: 2026-03-08T00:00:00Z\n", "until: "},
		{"start: -1h\nuntil: 2000-01-01T00:00:00Z\n", "until: "},
	} {
		p := strings.Join(problems(t, minimal+tc.doc), "\n")
		switch {
		case tc.want == "" && p != "":
			t.Errorf("%q: %s", tc.doc, p)
		case tc.want != "" && !strings.Contains(p, tc.want):
			t.Errorf("%q: problems %q, want one naming %q", tc.doc, p, tc.want)
		}
	}
}

// TestDocumentedTimeRangeForms holds the start and until rows of
// docs/config.md to the code: every example value they quote is valid.
func TestDocumentedTimeRangeForms(t *testing.T) {
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(field string) string {
		for _, line := range strings.Split(string(md), "\n") {
			if strings.HasPrefix(line, "| `"+field+"` |") {
				return line
			}
		}
		return ""
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	value := regexp.MustCompile(`^(earliest|latest|live|end-offsets|-.+|[0-9].+)$`)
	for _, field := range []string{"start", "until"} {
		n := 0
		for _, m := range quoted.FindAllStringSubmatch(row(field), -1) {
			v := m[1]
			if !value.MatchString(v) {
				continue // a field's name, or another field's value
			}
			n++
			if p := problems(t, minimal+field+": '"+v+"'\n"); len(p) != 0 {
				t.Errorf("docs/config.md %s: %q is documented, got %q", field, v, p)
			}
		}
		if n < 3 {
			t.Errorf("docs/config.md %s: found %d documented values; has the row changed?", field, n)
		}
	}
}
