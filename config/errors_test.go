package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fieldErrors parses and validates doc and returns every problem.
func fieldErrors(t *testing.T, doc string) Errors {
	t.Helper()
	var all Errors
	j, err := Parse([]byte(doc))
	var es Errors
	if err != nil && !errors.As(err, &es) {
		t.Fatalf("Parse returned %T %v, want Errors", err, err)
	}
	all = append(all, es...)
	if j != nil {
		if err := j.Validate(); err != nil {
			all = append(all, err.(Errors)...)
		}
	}
	return all
}

// problemAt returns the problem whose text contains want, failing the test
// when there is none.
func problemAt(t *testing.T, doc, want string) *FieldError {
	t.Helper()
	es := fieldErrors(t, doc)
	for _, e := range es {
		if strings.Contains(e.Error(), want) {
			return e
		}
	}
	t.Fatalf("want a problem containing %q, got %q", want, es.Error())
	return nil
}

func TestSyntaxErrorNamesTheFaultyLine(t *testing.T) {
	for _, tc := range []struct {
		name, doc, msg string
		line           int
	}{
		{"entry left of its list", "brokers: [a:1]\ninputs:\n  - topic: a\n - topic: b\nsinks:\n  - type: jsonl\n", "did not find expected key", 4},
		{"entry left of its list after blank lines", "brokers: [a:1]\n\ninputs:\n  - topic: a\n\n\n - topic: b\n", "did not find expected key", 7},
		{"key left of its entry", "brokers: [a:1]\ninputs:\n  - topic: a\nsinks:\n  - type: jsonl\n   path: x\n", "did not find expected '-' indicator", 6},
		{"entry right of its list", "brokers: [a:1]\ninputs:\n- topic: a\n  - topic: b\n", "did not find expected key", 4},
		{"nested entry", "brokers: [a:1]\ninputs:\n  - topic: a\n    - topic: b\n", "did not find expected key", 4},
		{"key right of its entry", "brokers: [a:1]\nsinks:\n  - type: jsonl\n    path: x\n  - type: jsonl\n      path: y\ninputs:\n  - topic: a\n",
			"mapping values are not allowed in this context", 6},
		{"in a second document", "brokers: [a:1]\n---\na:\n  - 1\n - 2\n", "did not find expected key", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := problemAt(t, tc.doc, tc.msg)
			if e.Line != tc.line || strings.Contains(e.Msg, "line") {
				t.Fatalf("got %q (line %d), want %q at line %d", e.Msg, e.Line, tc.msg, tc.line)
			}
		})
	}
}

func TestUnknownFieldsSuggestTheNearestKnownOne(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"top", minimal + "dealy: 2s", "dealy: unknown field (did you mean delay?) (line 7)"},
		{"top, dashed", minimal + "dead-letter: {type: jsonl, path: x}", "dead-letter: unknown field (did you mean dead_letter?)"},
		{"top, camel case", minimal + "checkpointInterval: 1s", "checkpointInterval: unknown field (did you mean checkpoint_interval?)"},
		{"input", minimal + "    tiem_field: ts", "inputs[0].tiem_field: unknown field (did you mean time_field?) (line 7)"},
		{"jsonl sink", withSink("{type: jsonl, pth: out.jsonl}"), "sinks[1].pth: unknown field (did you mean path?)"},
		{"kafka sink", withSink("{type: kafka, topik: out}"), "sinks[1].topik: unknown field (did you mean topic?)"},
		{"postgres sink", withSink("{type: postgres, dsn_env: PG, tabel: t}"), "sinks[1].tabel: unknown field (did you mean table?)"},
		{"bulk sink", withSink("{type: bulk, url: 'http://h:9200', indx: i}"), "sinks[1].indx: unknown field (did you mean index?)"},
		{"dead letter", minimal + "dead_letter: {type: jsonl, paht: x}", "dead_letter.paht: unknown field (did you mean path?)"},
		{"state", minimal + "state: {dri: /tmp/s}", "state.dri: unknown field (did you mean dir?)"},
		{"admin", minimal + "admin: {adr: ':0'}", "admin.adr: unknown field (did you mean addr?)"},
		{"tls", minimal + "tls: {enabled: true, ca_fle: ca.pem}", "tls.ca_fle: unknown field (did you mean ca_file?)"},
		{"sasl", minimal + "sasl: {mechanism: PLAIN, usr: u, password_env: P}", "sasl.usr: unknown field (did you mean user?)"},
		{"field of another sink type", withSink("{type: kafka, topic: t, indx: i}"), "sinks[1].indx: unknown field (line"},
		{"far from every field", minimal + "colour: red", "colour: unknown field (line 7)"},
		{"set but of another type", withSink("{type: kafka, topic: t, tble: x, table: y}"), "sinks[1].table: not a field of a kafka sink"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problemAt(t, tc.doc, tc.want)
		})
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"delay", "delay", 0}, {"", "abc", 3}, {"dealy", "delay", 1}, {"dely", "delay", 1},
		{"delayy", "delay", 1}, {"dlay", "delay", 1}, {"topik", "topic", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3},
	} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
		if d := editDistance(tc.b, tc.a); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.b, tc.a, d, tc.d)
		}
	}
	// A short key is never corrected into an unrelated one.
	for _, key := range []string{"a", "xyz", "delete", "groupe_id_x"} {
		if s := didYouMean(key, knownKeys(reflect.ValueOf(&Job{}).Elem(), nil)); s != "" {
			t.Errorf("%q: got %q, want no suggestion", key, s)
		}
	}
}

func TestSinksSharingAnOutputRefused(t *testing.T) {
	abs, err := filepath.Abs("out.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc string
		want      []string // each problem; none when the job is valid
	}{
		{"dead letter on a sink's file, spelt otherwise",
			"brokers: [a:1]\ninputs: [{topic: a}]\nsinks:\n  - {type: jsonl, path: out.jsonl}\ndead_letter: {type: jsonl, path: ./logs/../out.jsonl}\n",
			[]string{`dead_letter.path: "./logs/../out.jsonl" is the file sinks[0].path already writes to`}},
		{"absolute and relative",
			"brokers: [a:1]\ninputs: [{topic: a}]\nsinks:\n  - {type: jsonl, path: out.jsonl}\n  - {type: jsonl, path: '" + abs + "'}\n",
			[]string{`sinks[1].path: "` + abs + `" is the file sinks[0].path already writes to`}},
		{"three on stdout",
			"brokers: [a:1]\ninputs: [{topic: a}]\nsinks:\n  - {type: jsonl}\n  - {type: jsonl, path: '-'}\n  - {type: jsonl, path: /dev/stdout}\n",
			[]string{"sinks[1].path: writes to stdout, as sinks[0].path does", "sinks[2].path: writes to stdout, as sinks[0].path does"}},
		{"dead letter on stdout too", minimal + "dead_letter: {type: jsonl}\n",
			[]string{"dead_letter.path: writes to stdout, as sinks[0].path does"}},
		{"distinct files",
			"brokers: [a:1]\ninputs: [{topic: a}]\nsinks:\n  - {type: jsonl, path: out.jsonl}\n  - {type: jsonl, path: out/out.jsonl}\ndead_letter: {type: jsonl}\n",
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range fieldErrors(t, tc.doc) {
				if strings.Contains(e.Msg, "writes to") {
					got = append(got, e.Error())
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %d problems %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d: got %q, want %q…", i, got[i], w)
				}
			}
		})
	}
}

func TestDeadLetterRequiredAtTheLineOfLate(t *testing.T) {
	e := problemAt(t, minimal+"delay: 1s\nlate: dead-letter\n", "dead_letter: required when late is dead-letter")
	if e.Line != 8 {
		t.Fatalf("%q: line %d, want 8 (late)", e.Error(), e.Line)
	}
}

// TestStdoutDevicesAreStdout: a jsonl sink on /dev/stdout writes to stdout
// like "-": it counts as stdout for the progress display, and sync is
// refused for it.
func TestStdoutDevicesAreStdout(t *testing.T) {
	for _, path := range []string{"", "-", "/dev/stdout", "/dev/fd/1"} {
		p, err := build(t, "brokers: [h:1]\ninputs: [{topic: a}]\nsinks: [{type: jsonl, path: '"+path+"'}]\n")
		if err != nil {
			t.Fatalf("%q: %v", path, err)
		}
		if !p.WritesStdout {
			t.Errorf("%q: WritesStdout false", path)
		}
		problemAt(t, "brokers: [h:1]\ninputs: [{topic: a}]\nsinks: [{type: jsonl, path: '"+path+"', sync: true}]\n",
			"sinks[0].sync: only for a file path, not stdout")
	}
	p, err := build(t, "brokers: [h:1]\ninputs: [{topic: a}]\nsinks: [{type: jsonl, path: "+filepath.Join(t.TempDir(), "out.jsonl")+"}]\n")
	if err != nil || p.WritesStdout {
		t.Fatalf("a file sink: WritesStdout %v, err %v", p != nil && p.WritesStdout, err)
	}
}

// TestSyntaxErrorInALargeFileKeepsYAMLsLine: beyond maxLocate the faulty
// line is not searched for (each step parses a prefix), and yaml.v3's own
// line is kept in the message.
func TestSyntaxErrorInALargeFileKeepsYAMLsLine(t *testing.T) {
	doc := "brokers: [a:1]\ninputs:\n  - topic: a\n - topic: b\n" + strings.Repeat("# padding\n", maxLocate/10)
	e := problemAt(t, doc, "did not find expected key")
	if e.Line != 0 || !strings.HasPrefix(e.Msg, "line 3: ") {
		t.Fatalf("got %q (line %d), want yaml.v3's message with its line 3", e.Msg, e.Line)
	}
	if e := problemAt(t, doc[:maxLocate], "did not find expected key"); e.Line != 4 {
		t.Fatalf("got %q (line %d) at maxLocate bytes, want line 4", e.Msg, e.Line)
	}
}

// FuzzSyntaxErrorLine: the line a syntax error names is one whose addition
// makes the readable prefix before it fail with that error.
func FuzzSyntaxErrorLine(f *testing.F) {
	f.Add("brokers: [a:1]\ninputs:\n  - topic: a\n - topic: b\n")
	f.Add("a:\n  - 1\n   b: 2\n")
	f.Add("a: [1,\n 2\nb: 3\n")
	f.Add("a: 'x\n\tb: \"y\n")
	f.Add("a: 1\n---\nb: 2\n---\nc:\n  - 1\n - 2\n")
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > maxLocate || readAll([]byte(doc)) == nil {
			return
		}
		_, err := Parse([]byte(doc))
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 {
			t.Fatalf("Parse: %v", err)
		}
		e := es[0]
		if e.Line == 0 || e.Msg == "a job file holds one YAML document" {
			return // yaml.v3's line kept, or a later document's error not reached
		}
		lines := strings.SplitAfter(doc, "\n")
		if e.Line > len(lines) {
			t.Fatalf("line %d of a %d-line document", e.Line, len(lines))
		}
		failsWith := func(n int) bool {
			err := readAll([]byte(strings.Join(lines[:n], "")))
			return err != nil && yamlWhere.ReplaceAllString(err.Error(), "") == e.Msg
		}
		if !failsWith(e.Line) || failsWith(e.Line-1) {
			t.Fatalf("%q at line %d: the first %d lines fail %v, the first %d %v", e.Msg, e.Line, e.Line, failsWith(e.Line), e.Line-1, failsWith(e.Line-1))
		}
	})
}
