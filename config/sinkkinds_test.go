package config

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestSinkKeysAreDocumented: the keys of each sink type, read from its
// settings struct, are those its table in docs/config.md documents.
func TestSinkKeysAreDocumented(t *testing.T) {
	doc := docDefaults(t)
	for _, kind := range sinkKinds {
		var documented []string
		for field := range doc {
			if key, ok := strings.CutPrefix(field, kind.name+"."); ok {
				documented = append(documented, key)
			}
		}
		slices.Sort(documented)
		keys := slices.Sorted(slices.Values(kind.fields))
		if !slices.Equal(keys, documented) {
			t.Errorf("type %s: keys %v, documented %v", kind.name, keys, documented)
		}
	}
	if len(sinkKinds) != len(sinkTypes) {
		t.Errorf("%d sink kinds, %d sink types in messages", len(sinkKinds), len(sinkTypes))
	}
	for _, name := range sinkTypes {
		if sinkKindOf(name) == nil {
			t.Errorf("sink type %s has no settings struct", name)
		}
	}
}

// TestSinkSettingsDecodedByType: a sink's keys go to the settings struct of
// its type, merge keys included; a key of another type is refused only when
// set to something other than its zero value; an unknown type has no
// settings; yaml.v3 decodes a job to the same sinks.
func TestSinkSettingsDecodedByType(t *testing.T) {
	doc := withSink(`{<<: *pg, table: ops.b, max_batch: 7, url: '', sync: false}
  - {type: bulk, url: 'http://h:9200', index: i, linger: 1s}
  - {type: jsonl, path: out.jsonl, topic: t}
  - {type: nosuch, path: p}`)
	doc = strings.Replace(doc, "sinks:", "x: &pg {type: postgres, dsn_env: PG, table: a}\nsinks:", 1)
	j, err := Parse([]byte(doc))
	if err == nil || !strings.Contains(err.Error(), "x: unknown field") || strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("Parse: %v, want only x reported unknown", err)
	}
	want := []SinkSettings{
		nil, // minimal's own sink, checked by type below
		&PostgresSink{DSNEnv: "PG", Table: "ops.b", MaxBatch: 7},
		&BulkSink{URL: "http://h:9200", Index: "i", Linger: "1s"},
		&JSONLSink{Path: "out.jsonl"},
		nil,
	}
	if len(j.Sinks) != len(want) {
		t.Fatalf("%d sinks, want %d", len(j.Sinks), len(want))
	}
	if reflect.TypeOf(j.Sinks[0].Settings) != reflect.TypeOf(sinkKindOf(j.Sinks[0].Type).new()) {
		t.Errorf("sinks[0] (%s): settings %T", j.Sinks[0].Type, j.Sinks[0].Settings)
	}
	for i := 1; i < len(want); i++ {
		if !reflect.DeepEqual(j.Sinks[i].Settings, want[i]) {
			t.Errorf("sinks[%d].Settings = %#v, want %#v", i, j.Sinks[i].Settings, want[i])
		}
	}
	p := problems(t, doc)
	for _, w := range []string{
		"sinks[3].topic: not a field of a jsonl sink (its fields: path, sync, buffer_size)",
		`sinks[4].type: "nosuch" is not one of jsonl, kafka, postgres, bulk`,
	} {
		if !slices.ContainsFunc(p, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("problems %q: none is %q", p, w)
		}
	}
	if len(p) != 3 { // x, topic and nosuch: url '' and sync false are zero values
		t.Errorf("problems %q, want 3", p)
	}

	var yj Job
	if err := yaml.NewDecoder(bytes.NewReader([]byte(doc))).Decode(&yj); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(yj.Sinks, j.Sinks) {
		t.Errorf("yaml.v3 decodes sinks %+v, Parse %+v", yj.Sinks, j.Sinks)
	}
}

// TestSinkSettingsOfAnotherType: a Sink made in Go whose settings are not
// its type's is refused, not built as the wrong sink.
func TestSinkSettingsOfAnotherType(t *testing.T) {
	j, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	j.Sinks = []Sink{{Type: "bulk", Settings: &JSONLSink{Path: "x"}}}
	err = j.Validate()
	if err == nil || !strings.Contains(err.Error(), "sinks[0].type: bulk, but the settings are a *config.JSONLSink") {
		t.Fatalf("Validate: %v", err)
	}
}
