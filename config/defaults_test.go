package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/sinks/bulk"
	"github.com/signalbox/signalbox/sinks/jsonl"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/postgres"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/timers/durable"
)

// docDefaults reads the field tables of docs/config.md: "| `field` |
// default | meaning |" rows, keyed by field and, in a "### `type: X`"
// section, prefixed with "X.".
func docDefaults(t *testing.T) map[string]string {
	t.Helper()
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z_.\\[\\]]+)` \\| ([^|]*) \\|")
	section := regexp.MustCompile("^### `type: ([a-z]+)`")
	out, prefix := map[string]string{}, ""
	for _, line := range strings.Split(string(md), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			prefix = ""
			if m := section.FindStringSubmatch(line); m != nil {
				prefix = m[1] + "."
			}
		case row.MatchString(line):
			m := row.FindStringSubmatch(line)
			out[prefix+m[1]] = strings.TrimSpace(m[2])
		}
	}
	return out
}

// value is the first `quoted` value of a documented default.
func value(cell string) string {
	_, rest, _ := strings.Cut(cell, "`")
	v, _, _ := strings.Cut(rest, "`")
	return v
}

// TestDocumentedDefaultsMatchCode holds every default that docs/config.md
// gives as a value (in backquotes) to the default the code applies: the
// library's EnsureDefaults and Default constants, which a zero field of the
// job file leaves in place. A documented field whose default is a value but
// that has no check here fails, so a new field gets one.
func TestDocumentedDefaultsMatchCode(t *testing.T) {
	var k kafka.Config
	k.EnsureDefaults()
	var b bulk.Config
	b.EnsureDefaults()
	var pg postgres.Config
	pg.EnsureDefaults()
	var st durable.StoreOptions
	st.EnsureDefaults()

	str := func(code string) func(string) error {
		return func(doc string) error {
			if doc != code {
				return fmt.Errorf("the code's default is %q", code)
			}
			return nil
		}
	}
	size := func(code int64) func(string) error {
		return func(doc string) error {
			if n, err := ParseSize(doc); err != nil || n != code {
				return fmt.Errorf("the code's default is %d bytes (doc: %d, %v)", code, n, err)
			}
			return nil
		}
	}
	dur := func(code time.Duration) func(string) error {
		return func(doc string) error {
			if d, err := time.ParseDuration(doc); err != nil || d != code {
				return fmt.Errorf("the code's default is %v", code)
			}
			return nil
		}
	}
	num := func(code int) func(string) error { return str(strconv.Itoa(code)) }
	zero := func(v any) func(string) error { return str(fmt.Sprint(reflect.Zero(reflect.TypeOf(v)))) }

	docIDs := map[uintptr]string{reflect.ValueOf(bulk.KeyID).Pointer(): "key", reflect.ValueOf(bulk.OffsetID).Pointer(): "offset"}
	versions := map[bulk.Versioning]string{bulk.EventTimeVersion: "event_time", bulk.OffsetVersion: "offset", bulk.NoVersion: "none"}
	stdout := "a file"
	if (&Sink{Type: "jsonl"}).writesStdout() {
		stdout = "-"
	}

	code := map[string]func(string) error{
		"client_id":                   str(k.ClientID),
		"start":                       str(k.Start),
		"isolation":                   str(k.Isolation),
		"tls.enabled":                 zero(k.TLS.Enable),
		"tls.insecure_skip_verify":    zero(k.TLS.InsecureSkipVerify),
		"inputs[i].time":              str(string(signalbox.DefaultTimeSource)),
		"inputs[i].time_format":       str(string(signalbox.DefaultTimeFormat)),
		"inputs[i].key":               str(string(signalbox.DefaultKeySource)),
		"inputs[i].format":            str(string(formats.DefaultFormat)),
		"schema_registry.tls.enabled": zero(SchemaRegistry{}.TLS.Enabled),
		"schema_registry.tls.insecure_skip_verify": zero(SchemaRegistry{}.TLS.InsecureSkipVerify),
		"delay":             dur(0), // WithDelay: zero unless set
		"allowed_lateness":  dur(time.Duration(keyed.Spec{}.Lateness) * time.Millisecond),
		"late":              str(string(signalbox.DefaultLatePolicy)),
		"until":             str(string(signalbox.DefaultUntil)),
		"jsonl.path":        str(stdout),
		"jsonl.sync":        zero(jsonl.Options{}.Sync),
		"jsonl.buffer_size": size(jsonl.DefaultBufferSize),
		"bulk.max_docs":     num(b.MaxDocs),
		"bulk.max_bytes":    size(int64(b.MaxBytes)),
		"bulk.linger":       dur(b.Linger),
		"bulk.doc_id":       str(docIDs[reflect.ValueOf(b.DocID).Pointer()]),
		"bulk.versioning":   str(versions[b.Versioning]),
		"postgres.table":    str(pg.Table),
		"postgres.name": func(string) error { // "the job's `group`, else `default`"
			if cell := docDefaults(t)["postgres.name"]; !strings.HasSuffix(cell, "`"+postgres.DefaultName+"`") {
				return fmt.Errorf("the code's default, without a group, is %q", postgres.DefaultName)
			}
			return nil
		},
		"postgres.value_type":        str(pg.ValueType),
		"postgres.no_create":         zero(pg.NoCreate),
		"postgres.max_batch":         num(pg.MaxBatch),
		"kafka.max_buffered_records": num(kafkasink.DefaultMaxBufferedRecords),
		"state.memory":               size(st.MemoryBudget),
		"checkpoint_interval":        dur(signalbox.DefaultCheckpointInterval),
		"batch_size":                 num(signalbox.DefaultBatchSize),
		"align":                      dur(signalbox.DefaultAlignment),
		"max_future":                 dur(signalbox.DefaultMaxFuture),
		"flush_linger":               dur(signalbox.DefaultFlushLinger),
		"discovery_interval":         dur(k.DiscoveryInterval),
		"startup_timeout":            dur(k.StartupTimeout),
		"admin.addr":                 str(admin.DefaultAddr),
		"tables[i].format":           str(string(formats.DefaultFormat)),
		"tables[i].history": func(doc string) error {
			if d, err := parseHistory(doc); err != nil || d != DefaultHistory {
				return fmt.Errorf("the code's default is %v", DefaultHistory)
			}
			return nil
		},
	}
	// Defaults that name another field rather than a value.
	references := map[string]bool{
		"kafka.brokers": true, // the job's brokers (KafkaSink.build)
		"kafka.group":   true, // the job's group (KafkaSink.build)
	}

	doc := docDefaults(t)
	if len(doc) < 30 {
		t.Fatalf("found only %d documented fields in docs/config.md; has the table format changed?", len(doc))
	}
	for field, cell := range doc {
		check, ok := code[field]
		switch {
		case ok:
			if err := check(value(cell)); err != nil {
				t.Errorf("docs/config.md: %s defaults to %s: %v", field, cell, err)
			}
		case references[field]:
		case value(cell) != "":
			t.Errorf("docs/config.md: %s defaults to %s, which no check in this test holds to the code: add one", field, cell)
		}
	}
	for field := range code {
		if _, ok := doc[field]; !ok {
			t.Errorf("docs/config.md does not document the default of %s", field)
		}
	}
}

// TestDocumentedRangesMatchCode holds the Ranges table of docs/config.md to
// the code: each setting's least and most value is valid, one step beyond
// either is refused naming the setting, and every setting with a range is
// in the table.
func TestDocumentedRangesMatchCode(t *testing.T) {
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	top := func(key string) func(string) (string, string) {
		return func(v string) (string, string) { return minimal + key + ": " + v + "\n", key }
	}
	sink := func(spec, key string) func(string) (string, string) {
		return func(v string) (string, string) { return withSink(spec + key + ": " + v + "}"), "sinks[1]." + key }
	}
	settings := map[string]func(string) (string, string){
		"delay": top("delay"), "align": top("align"), "max_future": top("max_future"),
		"flush_linger": top("flush_linger"), "checkpoint_interval": top("checkpoint_interval"),
		"batch_size": top("batch_size"), "discovery_interval": top("discovery_interval"),
		"startup_timeout": top("startup_timeout"),
		"state.memory": func(v string) (string, string) {
			return minimal + "state: {memory: " + v + "}\n", "state.memory"
		},
		"jsonl buffer_size":          sink("{type: jsonl, path: x, ", "buffer_size"),
		"bulk max_docs":              sink("{type: bulk, url: 'http://h:1', index: i, ", "max_docs"),
		"bulk max_bytes":             sink("{type: bulk, url: 'http://h:1', index: i, ", "max_bytes"),
		"bulk linger":                sink("{type: bulk, url: 'http://h:1', index: i, ", "linger"),
		"postgres max_batch":         sink("{type: postgres, dsn_env: PG, ", "max_batch"),
		"kafka max_buffered_records": sink("{type: kafka, topic: t, ", "max_buffered_records"),
	}
	_, table, _ := strings.Cut(string(md), "\n## Ranges\n")
	row := regexp.MustCompile("^\\| ([a-z_. ]+) \\| `([^`]+)`[^|]* \\| `([^`]+)`[^|]* \\|$")
	seen := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		doc, ok := settings[m[1]]
		if !ok {
			t.Errorf("docs/config.md ranges %q: no check here", m[1])
			continue
		}
		seen[m[1]] = true
		for i, v := range []string{m[2], m[3]} {
			d, field := doc(v)
			if p := problems(t, d); len(p) != 0 {
				t.Errorf("%s: %s is documented valid, got %q", m[1], v, p)
			}
			beyond := step(t, v, 2*i-1) // below the least (0 written out included), above the most
			d, _ = doc(beyond)
			if p := strings.Join(problems(t, d), "\n"); !strings.Contains(p, field+": ") {
				t.Errorf("%s: %s is beyond the documented range, got %q", m[1], beyond, p)
			}
		}
	}
	for s := range settings {
		if !seen[s] {
			t.Errorf("%s has a range but no row in the Ranges table of docs/config.md", s)
		}
	}
}

// step returns the value one step (1ns, one byte, one) from v in the
// direction dir (-1 or 1), in the job file's notation.
func step(t *testing.T, v string, dir int) string {
	if d, err := time.ParseDuration(v); err == nil {
		return (d + time.Duration(dir)).String()
	}
	n, err := ParseSize(v)
	if err != nil {
		t.Fatalf("%q is neither a duration nor a size", v)
	}
	return strconv.FormatInt(n+int64(dir), 10)
}

// TestDocumentedNotFoundTTLMatchesCode holds docs/config.md's "an unknown
// id is remembered for …" to registry.DefaultNotFoundTTL.
func TestDocumentedNotFoundTTLMatchesCode(t *testing.T) {
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`unknown id\s+is remembered for (a|\d+) (second|minute|hour)s?\b`).FindStringSubmatch(string(md))
	if m == nil {
		t.Fatal(`docs/config.md no longer says how long "an unknown id is remembered for"`)
	}
	n := 1
	if m[1] != "a" {
		n, _ = strconv.Atoi(m[1])
	}
	unit := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour}[m[2]]
	if doc := time.Duration(n) * unit; doc != registry.DefaultNotFoundTTL {
		t.Errorf("docs/config.md: an unknown id is remembered for %v, the code for %v", doc, registry.DefaultNotFoundTTL)
	}
}

// TestDocumentedDocumentBoundsMatchCode holds docs/config.md's bounds on a
// job file as a document to MaxJobSize, MaxNodes and MaxDepth.
func TestDocumentedDocumentBoundsMatchCode(t *testing.T) {
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`at most (\d+) MiB, and at most\s+([\d,]+) YAML nodes nested at most (\d+) levels deep`).FindStringSubmatch(string(md))
	if m == nil {
		t.Fatal("docs/config.md no longer states a job file's bounds as a document")
	}
	mib, _ := strconv.Atoi(m[1])
	nodes, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
	depth, _ := strconv.Atoi(m[3])
	if mib<<20 != MaxJobSize || nodes != MaxNodes || depth != MaxDepth {
		t.Errorf("docs/config.md: %d MiB, %d nodes, %d levels; the code: %d bytes, %d nodes, %d levels",
			mib, nodes, depth, MaxJobSize, MaxNodes, MaxDepth)
	}
}
