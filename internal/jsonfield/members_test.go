package jsonfield

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzMembers checks invariant 5: when Members scans doc without an error,
// Find gives exactly Get's result for the fuzzed key and for every key of
// the document (same kind, same bytes at the same address, same error).
//
//	go test ./internal/jsonfield -fuzz FuzzMembers -fuzztime 30s
func FuzzMembers(f *testing.F) {
	for _, s := range []struct{ doc, key string }{
		{`{"ts":1000,"key":"a"}`, "ts"},
		{` {"a" : [1, {"b": "}"}], "ts" : "x"} `, "b"},
		{`{"k\u0073":"v","ks":2}`, "ks"},
		{`{"x":1,"x":2}`, "x"},
		{`{}`, "a"},
		{`{"a":1`, "a"},
		{`{"a":1}garbage`, "a"},
		{`[{"a":1}]`, "a"},
	} {
		f.Add([]byte(s.doc), s.key)
	}
	f.Fuzz(func(t *testing.T, doc []byte, key string) {
		ms, err := Members(nil, doc)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Members(%q): unexpected error %v", doc, err)
			}
			return
		}
		keys := [][]byte{[]byte(key)}
		for _, m := range ms {
			if !within(doc, m.Key) || !within(doc, m.Value.Raw) {
				t.Fatalf("Members(%q) returned bytes outside the document", doc)
			}
			if s, err := (Value{Kind: String, Raw: m.Key}).Text(); err == nil {
				keys = append(keys, []byte(s))
			}
		}
		for _, k := range keys {
			got, gerr := Find(ms, k)
			want, werr := Get(doc, Path{k})
			if gerr != werr || got.Kind != want.Kind || !bytes.Equal(got.Raw, want.Raw) ||
				(len(got.Raw) > 0 && &got.Raw[0] != &want.Raw[0]) {
				t.Fatalf("doc %q key %q: Find %v %q %v, Get %v %q %v", doc, k, got.Kind, got.Raw, gerr, want.Kind, want.Raw, werr)
			}
		}
	})
}
