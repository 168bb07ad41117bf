package envelope

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"

	"github.com/signalbox/signalbox/internal/jsonfield"
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
		want := utf8.Valid(b) && json.Valid(b)
		if got := IsJSON(b); got != want {
			t.Fatalf("IsJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
		got := AppendValue(nil, b)
		switch {
		case !want:
			if !bytes.Equal(got, AppendBytes(nil, b)) {
				t.Fatalf("AppendValue(%q) = %q, want it as a string", b, got)
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

func TestAppendScannedUsesTheScan(t *testing.T) {
	v := []byte("{\"ts\": 1,\n \"a\": [1, 2]}")
	d := jsonfield.Scan(v, jsonfield.Path{[]byte("ts")})
	if string(d.Field.Raw) != "1" {
		t.Fatalf("Scan: %+v", d)
	}
	if got := string(AppendScanned(nil, v, &d)); got != `{"ts":1,"a":[1,2]}` {
		t.Errorf("AppendScanned with the scan = %s", got)
	}
	// The verdict passed in decides: a document said to be invalid is
	// written as a string, one said to be on one line verbatim.
	if got := string(AppendScanned(nil, v, &jsonfield.Doc{})); got != `"{\"ts\": 1,\n \"a\": [1, 2]}"` {
		t.Errorf("AppendScanned with an invalid verdict = %s", got)
	}
	if got := string(AppendScanned(nil, []byte(`[1, 2]`), &jsonfield.Doc{Valid: true})); got != `[1, 2]` {
		t.Errorf("AppendScanned with a one-line verdict = %s", got)
	}
}

// oldIsJSON is IsJSON before jsonfield.Scan, the baseline of the benchmark.
func oldIsJSON(v []byte) bool {
	return utf8.Valid(v) && segjson.Valid(v)
}

// BenchmarkIsJSON compares IsJSON with its predecessor (utf8.Valid and
// segmentio's Valid) and with encoding/json's Valid (plus the UTF-8 check)
// on a 100-byte value like the scaling benchmark's:
//
//	go test -run '^$' -bench IsJSON -benchmem ./sinks/envelope
func BenchmarkIsJSON(b *testing.B) {
	doc := []byte(`{"item":"i-042","ts":1764456000123,"kind":"sold","pad":"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstu"}`)
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{
		{"IsJSON", IsJSON},
		{"segmentio-before", oldIsJSON},
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
