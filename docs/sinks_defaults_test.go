// Package docs_test holds the library defaults that docs/sinks.md states to
// the code (docs/config.md's job-file defaults are held by
// config/defaults_test.go).
package docs_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/sinks/bulk"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/postgres"
)

// sinkDefaults reads the settings tables of docs/sinks.md: "| `Field` |
// default | meaning |" rows, keyed by the section's package ("jsonl",
// "bulk", ...) and the first field the row names.
func sinkDefaults(t *testing.T) map[string]string {
	t.Helper()
	md, err := os.ReadFile("sinks.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile("^## .*\\(`sinks/([a-z]+)`\\)")
	row := regexp.MustCompile("^\\| `([A-Z][A-Za-z]*)`[^|]* \\| ([^|]*) \\|")
	out, pkg := map[string]string{}, ""
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "## ") {
			pkg = ""
			if m := section.FindStringSubmatch(line); m != nil {
				pkg = m[1]
			}
		} else if m := row.FindStringSubmatch(line); m != nil && pkg != "" {
			out[pkg+"."+m[1]] = strings.TrimSpace(m[2])
		}
	}
	return out
}

// size renders a byte count as docs/sinks.md writes it.
func size(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprint(n)
}

// duration renders a duration as docs/sinks.md writes it.
func duration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return fmt.Sprintf("%d ms", d/time.Millisecond)
}

// TestSinkDefaultsMatchCode holds every default in the settings tables of
// docs/sinks.md to what the sink's EnsureDefaults applies. A row that is
// neither checked here nor listed as descriptive fails, so a new setting
// gets a check.
func TestSinkDefaultsMatchCode(t *testing.T) {
	var j jsonl.Options
	j.EnsureDefaults()
	var b bulk.Config
	b.EnsureDefaults()
	var pg postgres.Config
	pg.EnsureDefaults()
	var k kafka.Config
	k.EnsureDefaults()

	want := map[string]string{
		"jsonl.BufferSize":     size(int64(j.BufferSize)),
		"jsonl.Sync":           fmt.Sprint(j.Sync),
		"jsonl.FileMode":       fmt.Sprintf("%04o", j.FileMode),
		"bulk.MaxDocs":         fmt.Sprint(b.MaxDocs),
		"bulk.MaxBytes":        size(int64(b.MaxBytes)),
		"bulk.Linger":          duration(b.Linger),
		"bulk.Client":          duration(b.Client.Timeout) + " timeout",
		"postgres.Table":       "`" + pg.Table + "`",
		"postgres.Name":        "`" + pg.Name + "`",
		"postgres.ValueType":   "`" + pg.ValueType + "`",
		"postgres.NoCreate":    fmt.Sprint(pg.NoCreate),
		"postgres.MaxBatch":    fmt.Sprint(pg.MaxBatch),
		"kafka.StartupTimeout": duration(kafka.DefaultStartupTimeout),
	}
	if b.Versioning != bulk.EventTimeVersion {
		t.Errorf("bulk: the zero Versioning is %v, not EventTimeVersion as docs/sinks.md says", b.Versioning)
	}
	want["bulk.Versioning"] = "`EventTimeVersion`"
	want["kafka.MaxBufferedRecords"] = fmt.Sprintf("%d,%03d", k.MaxBufferedRecords/1000, k.MaxBufferedRecords%1000)
	// Rows whose default is a description, not a value.
	descriptive := map[string]bool{
		"bulk.URL": true, "bulk.Retry": true, "bulk.DocID": true, "postgres.DSN": true,
		"kafka.Brokers": true, "kafka.TransactionalID": true, "kafka.GroupID": true, "kafka.Conn": true,
	}

	doc := sinkDefaults(t)
	if len(doc) < len(want) {
		t.Fatalf("found %d settings rows in docs/sinks.md, want at least %d; has the table format changed?", len(doc), len(want))
	}
	for field, w := range want {
		got, ok := doc[field]
		switch {
		case !ok:
			t.Errorf("docs/sinks.md has no row for %s (default %s)", field, w)
		case got != w:
			t.Errorf("docs/sinks.md: %s defaults to %q; the code's default is %q", field, got, w)
		}
	}
	for field := range doc {
		if _, ok := want[field]; !ok && !descriptive[field] {
			t.Errorf("docs/sinks.md: %s has a default no check in this test holds to the code: add one", field)
		}
	}
}
