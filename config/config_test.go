package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// minimal is a valid job whose last section is inputs, so that a test can
// append an input.
const minimal = `
brokers: [localhost:9092]
sinks:
  - type: jsonl
inputs:
  - topic: a
`

// withSink is minimal with one more sink.
func withSink(spec string) string {
	return strings.Replace(minimal, "  - type: jsonl\n", "  - type: jsonl\n  - "+spec+"\n", 1)
}

// problems parses and validates doc and returns every problem, one string each.
func problems(t testing.TB, doc string) []string {
	t.Helper()
	j, err := Parse([]byte(doc))
	var out []string
	var es Errors
	if err != nil {
		if !errors.As(err, &es) {
			t.Fatalf("Parse returned %T %v, want Errors", err, err)
		}
		for _, e := range es {
			out = append(out, e.Error())
		}
	}
	if j != nil {
		if err := j.Validate(); err != nil {
			if !errors.As(err, &es) {
				t.Fatalf("Validate returned %T %v, want Errors", err, err)
			}
			for _, e := range es {
				out = append(out, e.Error())
			}
		}
	}
	return out
}

func TestMinimalIsValid(t *testing.T) {
	if p := problems(t, minimal); len(p) != 0 {
		t.Fatalf("minimal job: %q", p)
	}
}

func TestValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"no brokers", "inputs: [{topic: a}]\nsinks: [{type: jsonl}]", "brokers: at least one broker is required"},
		{"bad broker", "brokers: [nohost]\n" + rest("brokers"), `brokers[0]: "nohost" is not host:port (line 1)`},
		{"start", minimal + "start: middle", `start: "middle" is not earliest, latest, an RFC 3339 time (2026-03-01T00:00:00Z) or a duration before now (-7d, -36h) (line 7)`},
		{"isolation", minimal + "isolation: dirty", `isolation: "dirty" is not one of read_committed, read_uncommitted`},
		{"tls off with files", minimal + "tls: {ca_file: ca.pem}", "tls.enabled: TLS files or options are set but enabled is false"},
		{"tls cert without key", minimal + "tls: {enabled: true, cert_file: c.pem}", "tls.key_file: required with cert_file"},
		{"tls key without cert", minimal + "tls: {enabled: true, key_file: k.pem}", "tls.cert_file: required with key_file"},
		{"sasl mechanism", minimal + "sasl: {mechanism: MD5, user: u, password_env: P}", `sasl.mechanism: "MD5" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{"sasl user", minimal + "sasl: {mechanism: PLAIN, password_env: P}", "sasl.user: required with mechanism PLAIN"},
		{"sasl password_env", minimal + "sasl: {mechanism: PLAIN, user: u}", "sasl.password_env: required with mechanism PLAIN"},
		{"sasl secret inline", minimal + "sasl: {mechanism: PLAIN, user: u, password_env: 'hunter 2'}", "sasl.password_env: must be the NAME of an environment variable"},
		{"sasl password as name", minimal + "sasl: {mechanism: PLAIN, user: u, password_env: Tr0ub4dor}", "sasl.password_env: must be the NAME of an environment variable"},
		{"oauth no token", minimal + "sasl: {mechanism: OAUTHBEARER}", "sasl.token_file: required with mechanism OAUTHBEARER, unless token_env is set"},
		{"oauth two tokens", minimal + "sasl: {mechanism: OAUTHBEARER, token_env: T, token_file: /t}", "sasl.token_env: set token_env or token_file, not both"},
		{"oauth user", minimal + "sasl: {mechanism: OAUTHBEARER, user: u, token_file: /t}", "sasl.user: not used with mechanism OAUTHBEARER"},
		{"oauth password", minimal + "sasl: {mechanism: OAUTHBEARER, password_env: P, token_file: /t}", "sasl.password_env: not used with mechanism OAUTHBEARER"},
		{"token for scram", minimal + "sasl: {mechanism: SCRAM-SHA-256, user: u, password_env: P, token_file: /t}", "sasl.token_file: a token is for mechanism OAUTHBEARER, not SCRAM-SHA-256"},
		{"token without mechanism", minimal + "sasl: {token_env: T}", "sasl.mechanism: required when user, password or a token is set"},
		{"sasl no mechanism", minimal + "sasl: {user: u}", "sasl.mechanism: required when user, password or a token is set"},
		{"no inputs", "brokers: [h:1]\nsinks: [{type: jsonl}]", "inputs: at least one topic or topic pattern is required"},
		{"input topic", minimal + "  - time: none", "inputs[1].topic: required"},
		{"duplicate topic", minimal + "  - topic: a", `inputs[1].topic: "a" is already declared by inputs[0]`},
		{"input topic name", minimal + "  - topic: 'bad topic/with:chars'", `inputs[1].topic: "bad topic/with:chars" is not a Kafka topic name (letters, digits, '.', '_', '-'; at most 249) (line 7)`},
		{"input topic dot", minimal + "  - topic: '..'", `inputs[1].topic: ".." is not a Kafka topic name`},
		{"input topic 250", minimal + "  - topic: " + strings.Repeat("t", 250), "inputs[1].topic: \"" + strings.Repeat("t", 100) + "…\" (250 bytes) is 250 characters long: a Kafka topic name has at most 249"},
		{"input topic_pattern", minimal + "  - topic_pattern: 'a('", `inputs[1].topic_pattern: not a regular expression: missing closing ): "a("`},
		{"input topic_pattern long", minimal + "  - topic_pattern: 'a" + strings.Repeat("|a", 2048) + "'", "inputs[1].topic_pattern: 4097 bytes long: a pattern has at most 4096"},
		{"time", minimal + "  - {topic: b, time: clock}", `inputs[1].time: "clock" is not one of timestamp, field, header, none`},
		{"time_field missing", strings.Replace(minimal, "- topic: a", "- topic: a\n  - topic: b\n  - {topic: c, time: field}", 1), "inputs[2].time_field: required when time is field"},
		{"time_field path", minimal + "  - {topic: b, time: field, time_field: 'a..b'}", `inputs[1].time_field: "a..b" is not a dotted JSON path`},
		{"time_field header", minimal + "  - {topic: b, time: header}", "inputs[1].time_field: required when time is header"},
		{"time_field unused", minimal + "  - {topic: b, time_field: ts}", "inputs[1].time_field: only used when time is field or header"},
		{"time_format", minimal + "  - {topic: b, time: field, time_field: ts, time_format: iso}", `inputs[1].time_format: "iso" is not one of auto`},
		{"time_format with timestamp", minimal + "  - {topic: b, time_format: unix_s}", "inputs[1].time_format: only used when time is field or header (line 7)"},
		{"time_format unused", minimal + "  - {topic: b, time: none, time_format: unix_s}", "inputs[1].time_format: only used when time is field or header"},
		{"key", minimal + "  - {topic: b, key: value}", `inputs[1].key: "value" is not one of key, field`},
		{"key_field missing", minimal + "  - {topic: b, key: field}", "inputs[1].key_field: required when key is field"},
		{"key_field path", minimal + "  - {topic: b, key: field, key_field: '.x'}", `inputs[1].key_field: ".x" is not a dotted JSON path`},
		{"key_field unused", minimal + "  - {topic: b, key_field: id}", "inputs[1].key_field: only used when key is field"},
		{"delay syntax", minimal + "delay: soon", `delay: "soon" is not a duration`},
		{"delay negative", minimal + "delay: -1s", "delay: -1s is out of range: must be ≥ 0 and at most 720h (30 days)"},
		{"late", minimal + "late: ignore", `late: "ignore" is not one of emit, dead-letter, drop`},
		{"late dead-letter", minimal + "late: dead-letter", "dead_letter: required when late is dead-letter"},
		{"until", minimal + "until: forever", `until: "forever" is not live, end-offsets or an event time in RFC 3339`},
		{"no sinks", "brokers: [h:1]\ninputs: [{topic: a}]", "sinks: at least one sink is required"},
		{"sink type", withSink("type: foo"), `sinks[1].type: "foo" is not one of jsonl, kafka, postgres, bulk`},
		{"sink type missing", "brokers: [h:1]\ninputs: [{topic: a}]\nsinks: [{path: x}]", "sinks[0].type: required: one of jsonl, kafka, postgres, bulk"},
		{"sink buffer", "brokers: [h:1]\ninputs: [{topic: a}]\nsinks: [{type: jsonl, buffer_size: lots}]", `sinks[0].buffer_size: "lots": unknown unit`},
		{"sink buffer 0", "brokers: [h:1]\ninputs: [{topic: a}]\nsinks: [{type: jsonl, buffer_size: 0B}]", "sinks[0].buffer_size: 0B must be above 0"},
		{"sink sync stdout", "brokers: [h:1]\ninputs: [{topic: a}]\nsinks: [{type: jsonl, sync: true}]", "sinks[0].sync: only for a file path, not stdout"},
		{"field of another sink type", withSink("{type: jsonl, path: x, url: 'http://h'}"), "sinks[1].url: not a field of a jsonl sink (its fields: path, sync, buffer_size)"},
		{"bulk url", withSink("{type: bulk, index: i}"), "sinks[1].url: required for a bulk sink"},
		{"bulk url scheme", withSink("{type: bulk, index: i, url: 'ftp://h'}"), `sinks[1].url: "ftp://h" is not an http(s) URL`},
		{"bulk index", withSink("{type: bulk, url: 'http://h:9200'}"), "sinks[1].index: required for a bulk sink"},
		{"bulk path", withSink("{type: bulk, url: 'http://h', index: i, path: x}"), "sinks[1].path: not a field of a bulk sink"},
		{"bulk max_docs", withSink("{type: bulk, url: 'http://h', index: i, max_docs: -1}"), "sinks[1].max_docs: -1 is out of range: must be from 1 to 100000"},
		{"bulk max_docs 0", withSink("{type: bulk, url: 'http://h', index: i, max_docs: 0}"), "sinks[1].max_docs: 0 is out of range: must be from 1 to 100000"},
		{"dead-letter max_docs 0", minimal + "dead_letter: {type: bulk, url: 'http://h', index: i, max_docs: 0}", "dead_letter.max_docs: 0 is out of range: must be from 1 to 100000"},
		{"bulk max_bytes", withSink("{type: bulk, url: 'http://h', index: i, max_bytes: huge}"), "sinks[1].max_bytes:"},
		{"bulk max_bytes 0", withSink("{type: bulk, url: 'http://h', index: i, max_bytes: 0B}"), "sinks[1].max_bytes: 0B must be above 0"},
		{"bulk linger", withSink("{type: bulk, url: 'http://h', index: i, linger: 1 minute}"), `sinks[1].linger: "1 minute" is not a duration`},
		{"bulk doc_id", withSink("{type: bulk, url: 'http://h', index: i, doc_id: uuid}"), `sinks[1].doc_id: "uuid" is not one of key, offset`},
		{"bulk versioning", withSink("{type: bulk, url: 'http://h', index: i, versioning: wall}"), `sinks[1].versioning: "wall" is not one of event_time, offset, none`},
		{"bulk auth_env", withSink("{type: bulk, url: 'http://h', index: i, auth_env: 'Basic abc='}"), "sinks[1].auth_env: must be the NAME of an environment variable"},
		{"kafka topic", withSink("type: kafka"), "sinks[1].topic: required for a kafka sink"},
		{"kafka topic name", withSink("{type: kafka, topic: 'a b'}"), `sinks[1].topic: "a b" is not a Kafka topic name`},
		{"kafka brokers", withSink("{type: kafka, topic: o, brokers: [nohost]}"), `sinks[1].brokers[0]: "nohost" is not host:port`},
		{"kafka group alone", withSink("{type: kafka, topic: o, group: g}"), "sinks[1].group: only used with transactional_id"},
		{"kafka group missing", withSink("{type: kafka, topic: o, transactional_id: t}"), "sinks[1].group: required with transactional_id"},
		{"kafka max_buffered_records 0", withSink("{type: kafka, topic: o, max_buffered_records: 0}"), "sinks[1].max_buffered_records: 0 is out of range: must be from 1 to 1000000"},
		{"kafka field", withSink("{type: kafka, topic: o, table: t}"), "sinks[1].table: not a field of a kafka sink (its fields: brokers, topic, transactional_id, group, max_buffered_records)"},
		{"kafka dead-letter group", minimal + "dead_letter: {type: kafka, topic: dl, transactional_id: t, group: g}", "dead_letter.group: not used by a dead-letter sink"},
		{"postgres dsn_env", withSink("type: postgres"), "sinks[1].dsn_env: required for a postgres sink"},
		{"postgres dsn inline", withSink("{type: postgres, dsn_env: 'postgres://u:secret@h/db'}"), "sinks[1].dsn_env: must be the NAME of an environment variable"},
		{"postgres table", withSink("{type: postgres, dsn_env: PG, table: Records}"), `sinks[1].table: "Records" is not a lower-case table name`},
		{"postgres table long", withSink("{type: postgres, dsn_env: PG, table: ops." + strings.Repeat("t", 53) + "}"), "must be 1 to 52 bytes"},
		{"postgres value_type", withSink("{type: postgres, dsn_env: PG, value_type: xml}"), `sinks[1].value_type: "xml" is not one of jsonb, text`},
		{"postgres max_batch", withSink("{type: postgres, dsn_env: PG, max_batch: -1}"), "sinks[1].max_batch: -1 is out of range: must be from 1 to 1000000 rows"},
		{"postgres max_batch 0", withSink("{type: postgres, dsn_env: PG, max_batch: 0}"), "sinks[1].max_batch: 0 is out of range: must be from 1 to 1000000 rows"},
		{"postgres field", withSink("{type: postgres, dsn_env: PG, topic: t}"), "sinks[1].topic: not a field of a postgres sink"},
		{"two exactly-once sinks", withSink("{type: postgres, dsn_env: PG}\n  - {type: kafka, topic: o, transactional_id: t, group: g}"), "sinks[2].type: only one exactly-once sink (one that stores the checkpoint) per job, and sinks[1] is one"},
		{"dead letter type", minimal + "dead_letter: {type: nope}", `dead_letter.type: "nope" is not one of`},
		{"state memory", minimal + "state: {memory: 12 parsecs}", `state.memory: "12 parsecs": unknown unit`},
		{"state memory zero", minimal + "state: {memory: 0MiB}", "state.memory: 0MiB must be above 0"},
		{"checkpoint zero", minimal + "checkpoint_interval: 0s", "checkpoint_interval: 0s is out of range: must be above 0"},
		{"batch size", minimal + "batch_size: -5", "batch_size: -5 is out of range: must be from 1 to 65536 records"},
		{"batch size type", minimal + "batch_size: many", `batch_size: want an integer, got "many" (line 7)`},
		{"bool type", minimal + "tls: {enabled: maybe}", `tls.enabled: want true or false, got "maybe" (line 7)`},
		{"string type", minimal + "group: [a, b]", "group: want a single value (a string), got a list (line 7)"},
		{"mapping type", minimal + "tls: yes", `tls: want a mapping of keys to values, got "yes" (line 7)`},
		{"list type", "brokers: h:1\n" + rest("brokers"), `brokers: want a list, got "h:1" (line 1)`},
		{"unknown key in merge", minimal + "base: &b {tiem: none}\n", "base: unknown field (line 7)"},
		{"unknown key in a merged mapping", "x: &x {tiem: none}\n" + minimal + "  - {<<: *x, topic: b}", "tiem: unknown field (did you mean time?) (line 1)"},
		{"unknown key", minimal + "delai: 2s", `delai: unknown field (did you mean delay?) (line 7)`},
		{"unknown nested key", minimal + "  - {topic: b, tiem: none}", "inputs[1].tiem: unknown field"},
		{"not yaml", "brokers: [", "did not find expected"},
		{"two documents", minimal + "---\n" + minimal, "a job file holds one YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, tc.doc)
			for _, p := range got {
				if strings.Contains(p, tc.want) {
					return
				}
			}
			t.Fatalf("want a problem containing %q, got %q", tc.want, got)
		})
	}
}

// TestHugeValuesGiveShortErrors: a value of 900,000 characters is refused
// with a message that repeats at most 100 of them, wherever it is written.
func TestHugeValuesGiveShortErrors(t *testing.T) {
	huge := strings.Repeat("x", 900_000)
	for _, doc := range []string{
		minimal + "  - topic: " + huge,
		minimal + "  - topic_pattern: '" + huge + "'",
		minimal + "  - {topic: b, time: field, time_field: '" + huge + ".'}",
		minimal + "  - {topic: b, time: " + huge + "}",
		withSink("{type: kafka, topic: " + huge + "}"),
		minimal + "late: " + huge,
		minimal + "delay: " + huge,
	} {
		got := problems(t, doc)
		if len(got) == 0 {
			t.Errorf("%.80s...: accepted", doc)
		}
		for _, p := range got {
			if len(p) > 400 {
				t.Errorf("%d bytes of error: %.200s...", len(p), p)
			}
		}
	}
}

// rest is minimal without its top-level key k.
func rest(k string) string {
	var out []string
	skip := false
	for _, l := range strings.Split(minimal, "\n") {
		if !strings.HasPrefix(l, " ") {
			skip = strings.HasPrefix(l, k+":")
		}
		if !skip {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestEveryProblemAtOnce(t *testing.T) {
	doc := `
brokers: [nohost]
start: middle
inputs:
  - {topic: a, time: field}
  - {topic: a, key: field}
late: ignore
sinks: [{type: foo}]
batch_size: -1
`
	got := problems(t, doc)
	want := []string{"brokers[0]", "start", "inputs[0].time_field", "inputs[1].topic", "inputs[1].key_field", "late", "sinks[0].type", "batch_size"}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d: %q", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+": ") {
			t.Errorf("problem %d = %q, want it about %s", i, got[i], w)
		}
	}
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

func TestDocExampleIsValid(t *testing.T) {
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlock.FindAllSubmatch(md, -1)
	if blocks == nil {
		t.Fatal("docs/config.md has no ```yaml block")
	}
	for i, m := range blocks[1:] { // the other examples are whole jobs too
		if p := problems(t, string(m[1])); len(p) != 0 {
			t.Errorf("example %d of docs/config.md has problems:\n%s", i+2, strings.Join(p, "\n"))
		}
	}
	doc := string(blocks[0][1])
	for _, field := range []string{"brokers", "group", "client_id", "start", "isolation", "tls", "sasl", "inputs", "delay", "late", "until", "sinks", "dead_letter", "checkpoint_interval", "batch_size", "admin"} {
		if !regexp.MustCompile(`(?m)^` + field + `:`).MatchString(doc) {
			t.Errorf("the example does not show %s", field)
		}
	}
	if p := problems(t, doc); len(p) != 0 {
		t.Fatalf("the example in docs/config.md has problems:\n%s", strings.Join(p, "\n"))
	}
}

// TestBuildReadsTokenFromEnvironment: OAUTHBEARER's token_env is read by
// Build, as password_env is; token_file is passed on, to be read at every
// authentication.
func TestBuildReadsTokenFromEnvironment(t *testing.T) {
	j, err := Parse([]byte(minimal + "sasl: {mechanism: OAUTHBEARER, token_env: SIGNALBOX_TEST_TOKEN}"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SIGNALBOX_TEST_TOKEN", "")
	if _, err = j.Build(nil); err == nil || !strings.Contains(err.Error(), "sasl.token_env: environment variable SIGNALBOX_TEST_TOKEN is unset or empty") {
		t.Fatalf("Build without the variable: %v", err)
	}
	t.Setenv("SIGNALBOX_TEST_TOKEN", "eyJ.token")
	p, err := j.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Kafka.SASL; s.Token != "eyJ.token" || s.Mechanism != "OAUTHBEARER" || s.TokenFile != "" {
		t.Fatalf("sasl = %+v", s)
	}
	j, err = Parse([]byte(minimal + "sasl: {mechanism: OAUTHBEARER, token_file: /var/run/token}"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = j.Build(nil); err != nil || p.Kafka.SASL.TokenFile != "/var/run/token" || p.Kafka.SASL.Token != "" {
		t.Fatalf("Build: %+v, %v", p.Kafka.SASL, err)
	}
}

func TestBuildReadsPasswordFromEnvironment(t *testing.T) {
	j, err := Parse([]byte(minimal + "sasl: {mechanism: PLAIN, user: u, password_env: SIGNALBOX_TEST_PW}"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SIGNALBOX_TEST_PW", "")
	_, err = j.Build(nil)
	if err == nil || !strings.Contains(err.Error(), "sasl.password_env: environment variable SIGNALBOX_TEST_PW is unset or empty") {
		t.Fatalf("Build without the variable: %v", err)
	}
	t.Setenv("SIGNALBOX_TEST_PW", "s3cret-value")
	p, err := j.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kafka.SASL.Password != "s3cret-value" || p.Kafka.SASL.User != "u" || p.Kafka.SASL.Mechanism != "PLAIN" {
		t.Fatalf("SASL = %+v", p.Kafka.SASL)
	}
}

func TestBuildBulkReadsAuthFromEnvironment(t *testing.T) {
	j, err := Parse([]byte(withSink("{type: bulk, url: 'http://h:9200', index: i, auth_env: SIGNALBOX_TEST_AUTH, linger: 1s, doc_id: offset, versioning: none}")))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SIGNALBOX_TEST_AUTH", "")
	if _, err := j.Build(nil); err == nil || !strings.Contains(err.Error(), "sinks[1]: auth_env: environment variable SIGNALBOX_TEST_AUTH is unset or empty") {
		t.Fatalf("Build without the variable: %v", err)
	}
	t.Setenv("SIGNALBOX_TEST_AUTH", "Basic c2VjcmV0")
	if _, err := j.Build(nil); err != nil {
		t.Fatal(err)
	}
}

func TestBuild(t *testing.T) {
	j, err := Parse([]byte(`
brokers: [h:1, h:2]
group: g
inputs: [{topic: a}, {topic: b, time: none}]
sinks: [{type: jsonl, path: out.jsonl}, {type: jsonl}]
delay: 2s
until: end-offsets
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := j.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Kafka.Topics, ",") != "a,b" || p.Kafka.Group != "g" || len(p.Kafka.Brokers) != 2 {
		t.Fatalf("kafka config = %+v", p.Kafka)
	}
	if !p.WritesStdout {
		t.Fatal("a jsonl sink without path writes to stdout")
	}
	if _, err := p.Pipeline(); err != nil {
		t.Fatalf("Pipeline: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"4096": 4096, "64k": 64 << 10, "256MiB": 256 << 20, "1GB": 1e9, "1.5 gib": 3 << 29, "2TB": 2e12, "10b": 10,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "1.2.3k", "5 parsecs", "-1k", "1e30TB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte("brokers: [\n"))
	f.Add([]byte(minimal + "state: {memory: 1.5GiB}\ninputs: &a [*a]"))
	f.Add([]byte("sinks: [{type: jsonl, buffer_size: 1e400k}]\ndead_letter: {type: kafka}"))
	f.Add([]byte("x: &x {topic: a, time: none}\ninputs: [{<<: *x, key: field}, *x]\nbatch_size: 0x10\nsasl: ~\ntls: {enabled: yes}"))
	f.Add([]byte(minimal + "until: live\nuntil: end-offsets\n"))
	f.Add([]byte("a: &a {enabled: true}\nb: &b {<<: [*a, *a]}\ntls: {<<: [*b, *b], <<: *a}\n"))
	bombs, _ := filepath.Glob("testdata/bombs/*.yaml")
	for _, b := range bombs {
		data, err := os.ReadFile(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, nodes, err := parse(data)
		if nodes > MaxNodes { // what bounds the decoder's time and memory
			t.Fatalf("the decoder visited %d nodes, beyond MaxNodes", nodes)
		}
		if j == nil {
			if err == nil {
				t.Fatal("nil job without an error")
			}
			return
		}
		if err == nil { // the node walk agrees with yaml.v3's own strict decoding
			var want Job
			dec := yaml.NewDecoder(bytes.NewReader(data))
			dec.KnownFields(true)
			if derr := dec.Decode(&want); derr != nil && !errors.Is(derr, io.EOF) {
				t.Fatalf("Parse accepted what yaml.v3 rejects: %v", derr)
			}
			want.lines = j.lines
			if !reflect.DeepEqual(*j, want) {
				t.Fatalf("Parse = %+v\nyaml.v3 = %+v", *j, want)
			}
		}
		if err == nil && j.Validate() == nil {
			if _, err := j.Build(nil); err != nil {
				var es Errors
				if !errors.As(err, &es) {
					t.Fatalf("Build of a valid job: %v", err)
				}
			}
		}
	})
}

func TestAdminAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"off":            "",
		":0":             "",
		"0.0.0.0:9321":   "",
		"9321":           `admin.addr: "9321" is not host:port`,
		"127.0.0.1:http": `admin.addr: "127.0.0.1:http": port "http" is not a number between 0 and 65535`,
	} {
		p := problems(t, minimal+fmt.Sprintf("admin: {addr: %q}\n", addr))
		if want == "" && len(p) != 0 || want != "" && (len(p) != 1 || !strings.HasPrefix(p[0], want)) {
			t.Errorf("admin.addr %q: problems %q, want %q", addr, p, want)
		}
	}
}

func TestParseMergeAndAlias(t *testing.T) {
	j, err := Parse([]byte(`
defaults: &in {time: field, time_field: ts, key: field, key_field: id}
brokers: &b [h:1]
inputs:
  - {<<: *in, topic: a}
  - {<<: *in, topic: b, time_field: meta.ts}
sinks: [{type: kafka, topic: o, brokers: *b}]
`))
	if err == nil || !strings.Contains(err.Error(), "defaults: unknown field (line 2)") || strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("want only defaults reported unknown, got %v", err)
	}
	if in := j.Inputs[0]; in.Topic != "a" || in.Time != "field" || in.TimeField != "ts" || in.KeyField != "id" {
		t.Errorf("inputs[0] = %+v", in)
	}
	if in := j.Inputs[1]; in.Topic != "b" || in.TimeField != "meta.ts" {
		t.Errorf("inputs[1] = %+v: the mapping's own key must override the merged one", in)
	}
	if len(j.Sinks) != 1 {
		t.Errorf("sinks = %+v", j.Sinks)
	} else if k, ok := j.Sinks[0].Settings.(*KafkaSink); !ok || strings.Join(k.Brokers, ",") != "h:1" {
		t.Errorf("sinks[0] = %+v", j.Sinks[0])
	}
	if j.lines["inputs[1].time_field"] != 6 {
		t.Errorf("line of inputs[1].time_field = %d, want 6", j.lines["inputs[1].time_field"])
	}
}

// TestLoadRefusesAHugeFile: a file beyond MaxJobSize is refused before it is
// parsed, so a huge file costs neither the time nor the memory of parsing.
func TestLoadRefusesAHugeFile(t *testing.T) {
	path := t.TempDir() + "/huge.yaml"
	doc := minimal + strings.Repeat("  - {topic: t, time: none}\n", MaxJobSize/27+1)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := Load(path)
	if j != nil || err == nil || !strings.Contains(err.Error(), "a job file is at most 1048576 bytes") {
		t.Fatalf("Load of a %d-byte file = %v, %v", len(doc), j, err)
	}
}

// TestSecretLikeNamesRefused: a *_env field that holds what looks like the
// secret itself is refused, and no message repeats it (a password put in
// password_env must never be printed in the "unset" error).
func TestSecretLikeNamesRefused(t *testing.T) {
	const secret = "Tr0ub4dor"
	for field, doc := range map[string]string{
		"sasl.password_env":   minimal + "sasl: {mechanism: PLAIN, user: u, password_env: " + secret + "}",
		"sasl.token_env":      minimal + "sasl: {mechanism: OAUTHBEARER, token_env: " + secret + "}",
		"sinks[1].auth_env":   withSink("{type: bulk, url: 'http://h', index: i, auth_env: " + secret + "}"),
		"sinks[1].dsn_env":    withSink("{type: postgres, dsn_env: " + secret + "}"),
		"dead_letter.dsn_env": minimal + "dead_letter: {type: postgres, dsn_env: " + secret + "}",
	} {
		got := strings.Join(problems(t, doc), "\n")
		if !strings.Contains(got, field+": must be the NAME of an environment variable") {
			t.Errorf("%s: problems %q", field, got)
		}
		if strings.Contains(got, secret) {
			t.Errorf("%s: a problem repeats the value: %q", field, got)
		}
	}
}

// TestBombsRefused: an alias or merge-key bomb is refused before it is
// expanded, quickly and in little memory, naming the line of the alias that
// expands it. Expanded, merge7.yaml alone took 25 s and 1.78 GB.
func TestBombsRefused(t *testing.T) {
	files, _ := filepath.Glob("testdata/bombs/*.yaml")
	if len(files) < 3 {
		t.Fatalf("bombs: %q", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			done := make(chan struct{})
			var j *Job
			go func() { defer close(done); j, err = Load(f) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load still expanding the bomb after 10s")
			}
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if j != nil || err == nil {
				t.Fatalf("Load = %v, %v; want the bomb refused", j, err)
			}
			// The error names an alias that alone expands beyond the
			// bound, and its line.
			var alias string
			var line int
			if _, serr := fmt.Sscanf(err.Error(), "alias *%s expands the job file beyond 100000 YAML nodes", &alias); serr != nil {
				t.Fatalf("error %q: %v", err, serr)
			}
			if i := strings.LastIndex(err.Error(), "(line "); i < 0 {
				t.Fatalf("error %q names no line", err)
			} else if _, serr := fmt.Sscanf(err.Error()[i:], "(line %d)", &line); serr != nil {
				t.Fatalf("error %q: %v", err, serr)
			}
			if lines := strings.Split(string(data), "\n"); line < 1 || !strings.Contains(lines[line-1], "*"+alias) {
				t.Errorf("error %q: line %d does not hold *%s", err, line, alias)
			}
			if took > time.Second {
				t.Errorf("refusing took %v, want < 1s", took)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
				t.Errorf("refusing allocated %d bytes, want < 100 MB", alloc)
			}
		})
	}
}

// TestExpansionBounds: the bounds hold at their edges, and a cycle or a deep
// nest is refused with the line to blame.
func TestExpansionBounds(t *testing.T) {
	// A list of n aliases to one small mapping: about 1+n*5 nodes.
	aliases := func(n int) string {
		return minimal + "x: &x {topic: t, time: none}\nsasl: {user: [" + strings.Repeat("*x, ", n) + "]}\n"
	}
	for _, c := range []struct {
		name, doc, want string
	}{
		{"cycle", minimal + "tls: &t {<<: *t}\n", "alias *t refers to a node that contains it (line 7)"},
		{"cycle in a list", minimal + "x: &l [a, *l]\n", "alias *l refers to a node that contains it (line 7)"},
		{"too many nodes", aliases(MaxNodes / 5), "what starts here takes the job file beyond 100000 YAML nodes (the most a job file may hold) once every alias and merge key is expanded (line 8)"},
		{"too deep", minimal + "x: " + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + "\n",
			"what starts here takes the job file beyond 64 levels deep"},
	} {
		j, err := Parse([]byte(c.doc))
		if j != nil || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse = %v, %v; want %q", c.name, j, err, c.want)
		}
	}
	// Below the bounds the decoder runs, and reports the wrong kinds.
	j, nodes, err := parse([]byte(aliases(MaxNodes/5 - 100)))
	if j == nil || !strings.Contains(fmt.Sprint(err), "sasl.user: want a single value") || nodes > MaxNodes {
		t.Errorf("below the bound: Parse = %v, %v (%d nodes)", j, err, nodes)
	}
	deep := minimal + "x: " + strings.Repeat("[", MaxDepth-3) + strings.Repeat("]", MaxDepth-3) + "\n"
	if j, err := Parse([]byte(deep)); j == nil || !strings.Contains(fmt.Sprint(err), "x: unknown field") {
		t.Errorf("%d levels: Parse = %v, %v", MaxDepth-1, j, err)
	}
}

// TestDuplicateKeys: a key set twice in one mapping is an error naming both
// lines, wherever the mapping is; a mapping's own key overriding a merged
// one is not (YAML 1.1 merge keys), and of merged mappings the first wins.
func TestDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"top level", minimal + "until: end-offsets\nuntil: live\n", "until: set twice in one mapping, at lines 7 and 8 (line 8)"},
		{"in a sink", withSink("{type: jsonl, path: a, path: b}"), "sinks[1].path: set twice in one mapping, at lines 5 and 5 (line 5)"},
		{"in a merged mapping", "x: &x {time: none, time: kafka}\n" + minimal + "  - {<<: *x, topic: b}\n",
			"inputs[1].time: set twice in one mapping, at lines 1 and 1 (line 1)"},
		{"two merge keys", "x: &x {time: none}\n" + minimal + "  - {<<: *x, <<: *x, topic: b}\n",
			"inputs[1].<<: set twice in one mapping, at lines 8 and 8 (line 8)"},
	} {
		got := strings.Join(problems(t, c.doc), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want %q", c.name, got, c.want)
		}
	}
	j, err := Parse([]byte(`
a: &a {topic: a, time: none, key: field, key_field: id}
b: &b {topic: b, time: kafka, time_field: ts}
c: &c {<<: [*a, *b], key_field: own}
inputs:
  - {<<: [*a, *b], topic: own}
  - {<<: *c, <<: *c}
`))
	if !strings.Contains(fmt.Sprint(err), "inputs[1].<<: set twice") || strings.Contains(fmt.Sprint(err), "inputs[0]") {
		t.Fatalf("Parse: %v", err)
	}
	in := j.Inputs[0]
	if in.Topic != "own" || in.Time != "none" || in.KeyField != "id" || in.TimeField != "ts" {
		t.Errorf("inputs[0] = %+v; want its own topic, then a's keys over b's", in)
	}
	if j.lines["inputs[0].time"] != 2 || j.lines["inputs[0].time_field"] != 3 {
		t.Errorf("lines of merged keys: %v", j.lines)
	}
}
