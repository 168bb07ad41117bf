package envelope

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// IsJSON validates with github.com/segmentio/encoding/json, about 3× faster
// than encoding/json on the benchmark's 100-byte values (it was 14% of a
// replay's CPU). FuzzIsJSON holds it to encoding/json's verdict.
func FuzzIsJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,2,3]`, `"x"`, `1e5`, `-0.5`, `{"a":"\ud800"}`, `{"a":1,}`, `{"a":01}`,
		"{\"a\":\"\x01\"}", `nul`, `true`, ` {"a" : [ {} , [] ] } `, `{"a":"\u00e9"}`, "\xff", `{"a":1}x`, `1.`, `.5`, `"\q"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := utf8.Valid(b) && json.Valid(b)
		if got := IsJSON(b); got != want {
			t.Fatalf("IsJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
		if segjson.Valid(b) != json.Valid(b) {
			t.Fatalf("segmentio Valid(%q) = %v, encoding/json says %v", b, segjson.Valid(b), json.Valid(b))
		}
	})
}

// BenchmarkIsJSON compares IsJSON with encoding/json's Valid (plus the
// UTF-8 check IsJSON also makes) on a 100-byte value like the scaling
// benchmark's: go test -run '^$' -bench IsJSON ./sinks/envelope
func BenchmarkIsJSON(b *testing.B) {
	doc := []byte(`{"id":"k123","ts":1764456000123,"kind":"stock","pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{
		{"IsJSON", IsJSON},
		{"encoding-json", func(v []byte) bool { return utf8.Valid(v) && json.Valid(v) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if !c.valid(doc) {
					b.Fatal("not JSON")
				}
			}
		})
	}
}
