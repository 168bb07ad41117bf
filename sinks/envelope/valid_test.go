package envelope

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/signalbox/signalbox/record"
)

// IsJSON is jsonfield.Scan's verdict (it was utf8.Valid plus
// github.com/segmentio/encoding/json's Valid, 14% of a replay's CPU).
// FuzzIsJSON holds it to encoding/json's verdict, and AppendValue to the
// multi-line rule of invariant 2.
func FuzzIsJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,2,3]`, `"x"`, `1e5`, `-0.5`, `{"a":"\ud800"}`, `{"a":1,}`, `{"a":01}`,
		"{\"a\":\"\x01\"}", `nul`, `true`, ` {"a" : [ {} , [] ] } `, `{"a":"\u00e9"}`, "\xff", `{"a":1}x`, `1.`, `.5`, `"\q"`,
		"{\n\"a\":\r\n1}", "\"a\nb\"", "[1,\n2]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append([]byte{}, b...) // a payload, never a tombstone
		want := utf8.Valid(b) && json.Valid(b)
		if got := IsJSON(b); got != want {
			t.Fatalf("IsJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
		got, ok := AppendValue(nil, b)
		switch {
		case !want:
			if ok != utf8.Valid(b) || ok && !bytes.Equal(got, AppendBytes(nil, b)) || !ok && len(got) != 0 {
				t.Fatalf("AppendValue(%q) = %q, %v: want it as a string if valid UTF-8, else nothing", b, got, ok)
			}
		case !bytes.ContainsAny(b, "\r\n"):
			if !bytes.Equal(got, b) {
				t.Fatalf("AppendValue(%q) = %q, want it verbatim", b, got)
			}
		default:
			var c bytes.Buffer
			if json.Compact(&c, b) != nil || !bytes.Equal(got, c.Bytes()) || bytes.ContainsAny(got, "\r\n") {
				t.Fatalf("AppendValue(%q) = %q, want it compacted", b, got)
			}
		}
	})
}

// TestAppendTrustsValueJSON: a record whose decoder marked its value as
// one line of valid JSON (record.Record.ValueJSON) has it embedded as is;
// without the mark the value is validated (and compacted or quoted).
func TestAppendTrustsValueJSON(t *testing.T) {
	multi := []byte("{\"ts\": 1,\n \"a\": [1, 2]}")
	r := record.Record{Topic: "t", Value: multi, Timeless: true}
	if got := string(Append(nil, &r)); !strings.Contains(got, `"value":{"ts":1,"a":[1,2]}`) {
		t.Errorf("unmarked multi-line value: %s", got)
	}
	// The mark decides, whatever the bytes: proof that the sink skipped
	// its own scan (a decoder sets it only on a valid one-line value).
	r.Value, r.ValueJSON = []byte(`{"a":1,}`), true
	if got := string(Append(nil, &r)); !strings.Contains(got, `"value":{"a":1,}`) {
		t.Errorf("marked value, not scanned again: %s", got)
	}
	r.Value, r.ValueJSON = []byte(`not json`), false
	if got := string(Append(nil, &r)); !strings.Contains(got, `"value":"not json"`) {
		t.Errorf("unmarked invalid value: %s", got)
	}
}

// BenchmarkIsJSON compares IsJSON with encoding/json's Valid (plus the
// UTF-8 check) on a 100-byte value like the scaling benchmark's. (IsJSON's
// predecessor used github.com/segmentio/encoding/json's Valid, about 3×
// faster than encoding/json's; it was dropped with the dependency.)
//
//	go test -run '^$' -bench IsJSON -benchmem ./sinks/envelope
func BenchmarkIsJSON(b *testing.B) {
	doc := []byte(`{"item":"i-042","ts":1764456000123,"kind":"sold","pad":"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstu"}`)
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{
		{"IsJSON", IsJSON},
		{"encoding-json", func(v []byte) bool { return utf8.Valid(v) && json.Valid(v) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if !c.valid(doc) {
					b.Fatal("not JSON")
				}
			}
		})
	}
}
