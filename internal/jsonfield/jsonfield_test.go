package jsonfield

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"unicode/utf8"
)

func TestGet(t *testing.T) {
	for _, tc := range []struct {
		doc, path string
		kind      Kind
		raw       string // expected Raw, or the error text
		text      string // expected Text for found values
		err       error
	}{
		{doc: `{"ts":1000}`, path: "ts", kind: Number, raw: `1000`, text: "1000"},
		{doc: ` { "a" : "x" , "ts" : -1.5e3 } `, path: "ts", kind: Number, raw: `-1.5e3`, text: "-1.5e3"},
		{doc: `{"meta":{"ts":"2024-01-01T00:00:00Z"}}`, path: "meta.ts", kind: String, raw: `"2024-01-01T00:00:00Z"`, text: "2024-01-01T00:00:00Z"},
		{doc: `{"a":[1,{"ts":2}],"ts":true}`, path: "ts", kind: Bool, raw: `true`, text: "true"},
		{doc: `{"ts":null}`, path: "ts", kind: Null, raw: `null`, text: "null"},
		{doc: `{"ts":{"x":[]}}`, path: "ts", kind: Object, raw: `{"x":[]}`},
		{doc: `{"k":"caf\u00e9 \"q\" \/"}`, path: "k", kind: String, raw: `"caf\u00e9 \"q\" \/"`, text: `café "q" /`},
		{doc: `{"k":"\ud83d\ude00"}`, path: "k", kind: String, raw: `"\ud83d\ude00"`, text: "😀"},
		// Escaped keys match their unescaped text, JSON's escapes included.
		{doc: `{"t\u0073":1}`, path: "ts", kind: Number, raw: `1`},
		{doc: `{"a\/b":1}`, path: "a/b", kind: Number, raw: `1`},
		{doc: `{"\ud83d\ude00":1}`, path: "😀", kind: Number, raw: `1`},
		// The first of duplicate keys wins.
		{doc: `{"ts":1,"ts":2}`, path: "ts", kind: Number, raw: `1`},
		{doc: `{}`, path: "ts", err: ErrNotFound},
		{doc: `{"a":1}`, path: "ts", err: ErrNotFound},
		{doc: `{"meta":{}}`, path: "meta.ts", err: ErrNotFound},
		{doc: `[1]`, path: "ts", err: ErrMalformed},
		{doc: ``, path: "ts", err: ErrMalformed},
		{doc: `{"a":1`, path: "ts", err: ErrMalformed},
		{doc: `{"a":}`, path: "ts", err: ErrMalformed},
		{doc: `{"a" 1}`, path: "ts", err: ErrMalformed},
		{doc: `{"a":"x` + "\n" + `"}`, path: "ts", err: ErrMalformed},
		{doc: `{"meta":3}`, path: "meta.ts", err: ErrMalformed},
		{doc: `{"ts":1 "b":2}`, path: "b", err: ErrMalformed},
	} {
		p, err := ParsePath(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		v, err := Get([]byte(tc.doc), p)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Get(%s, %s) = %v, %v; want error %v", tc.doc, tc.path, v, err, tc.err)
			}
			continue
		}
		if err != nil || v.Kind != tc.kind || string(v.Raw) != tc.raw {
			t.Errorf("Get(%s, %s) = %d %q, %v; want %d %q", tc.doc, tc.path, v.Kind, v.Raw, err, tc.kind, tc.raw)
			continue
		}
		if tc.text == "" {
			continue
		}
		if s, err := v.Text(); err != nil || s != tc.text {
			t.Errorf("Get(%s, %s).Text() = %q, %v; want %q", tc.doc, tc.path, s, err, tc.text)
		}
	}
}

func TestParsePath(t *testing.T) {
	for _, bad := range []string{"", ".", "a.", ".a", "a..b"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
	p, err := ParsePath("a.bc.d")
	if err != nil || len(p) != 3 || string(p[1]) != "bc" {
		t.Errorf("ParsePath(a.bc.d) = %q, %v", p, err)
	}
}

// topLevel returns the members of doc, in order, as encoding/json sees them,
// and false unless doc is a valid JSON object in valid UTF-8 with distinct
// keys: the documents on which Get must agree with encoding/json.
func topLevel(doc []byte) (keys []string, vals []json.RawMessage, ok bool) {
	if !utf8.Valid(doc) || !json.Valid(doc) {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil || seen[k] {
			return nil, nil, false
		}
		seen[k] = true
		keys, vals = append(keys, k), append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, false
	}
	return keys, vals, true
}

var kindOf = map[byte]Kind{'"': String, '{': Object, '[': Array, 't': Bool, 'f': Bool, 'n': Null}

// FuzzGet checks that Get never panics and never returns bytes outside the
// document (invariants 1 and 3), and that on every document encoding/json
// accepts as an object with distinct keys, Get finds each top-level member
// with the same raw value, and Text agrees with encoding/json on strings.
//
//	go test ./internal/jsonfield -fuzz FuzzGet -fuzztime 30s
func FuzzGet(f *testing.F) {
	for _, s := range []struct{ doc, path string }{
		{`{"ts":1000,"key":"a"}`, "ts"},
		{` {"a" : [1, {"b": "}"}], "ts" : "2024-05-01T10:00:00.123Z"} `, "ts"},
		{`{"meta":{"ts":-1.5e+3}}`, "meta.ts"},
		{`{"k\u0073":"\ud83d\ude00\/\"","n":null,"t":true,"f":false}`, "ks"},
		{`{"a":{"a":{"a":[[[]]]}}}`, "a.a.a"},
		{`{"x":1,"x":2}`, "x"},
		{`{"é":"\u00e9"}`, "é"},
		{`{"a":"\ud800"}`, "a"},
		{`{"a":1`, "a"},
		{`{"a":"\`, "a"},
		{`[{"a":1}]`, "a"},
		{"{\"a\":\"\xff\"}", "a"},
		{``, "a"},
	} {
		f.Add([]byte(s.doc), s.path)
	}
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		if p, err := ParsePath(path); err == nil {
			v, err := Get(doc, p)
			if err == nil {
				if len(v.Raw) > 0 && !within(doc, v.Raw) {
					t.Fatalf("Get(%q, %q) returned bytes outside the document", doc, path)
				}
				_, _ = v.Text()
			} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(%q, %q): unexpected error %v", doc, path, err)
			}
		}
		keys, vals, ok := topLevel(doc)
		if !ok {
			return
		}
		seen := map[string]bool{}
		for i, k := range keys {
			seen[k] = true
			v, err := Get(doc, Path{[]byte(k)})
			if err != nil {
				t.Fatalf("Get(%q, %q): %v; encoding/json finds %s", doc, k, err, vals[i])
			}
			if !bytes.Equal(v.Raw, vals[i]) {
				t.Fatalf("Get(%q, %q) = %s; encoding/json finds %s", doc, k, v.Raw, vals[i])
			}
			if want, ok := kindOf[vals[i][0]]; (ok && v.Kind != want) || (!ok && v.Kind != Number) {
				t.Fatalf("Get(%q, %q): kind %d for %s", doc, k, v.Kind, vals[i])
			}
			if v.Kind != String {
				continue
			}
			var want string
			if err := json.Unmarshal(vals[i], &want); err != nil {
				t.Fatal(err)
			}
			if got, err := v.Text(); err != nil || got != want {
				t.Fatalf("Get(%q, %q).Text() = %q, %v; encoding/json: %q", doc, k, got, err, want)
			}
		}
		if !seen[path] {
			if _, err := Get(doc, Path{[]byte(path)}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(%q, %q) = %v; encoding/json finds no such member", doc, path, err)
			}
		}
	})
}

// within reports whether sub is a sub-slice of b (aliases it).
func within(b, sub []byte) bool {
	for i := range b {
		if &b[i] == &sub[0] {
			return i+len(sub) <= len(b)
		}
	}
	return false
}
