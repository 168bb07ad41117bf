package jsonfield

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// checkScan compares Scan(doc, path) with its references: utf8.Valid and
// encoding/json.Valid for the verdict, bytes.ContainsAny for Multiline, and
// Get for Field and Err (same kind, same bytes at the same address, same
// error) on valid documents.
func checkScan(t *testing.T, doc []byte, path Path) Doc {
	t.Helper()
	d := Scan(doc, path)
	want := utf8.Valid(doc) && json.Valid(doc)
	if d.Valid != want {
		t.Fatalf("Scan(%.200q).Valid = %v; utf8.Valid && json.Valid = %v", doc, d.Valid, want)
	}
	if !want {
		return d
	}
	if ml := bytes.ContainsAny(doc, "\r\n"); d.Multiline != ml {
		t.Fatalf("Scan(%.200q).Multiline = %v, want %v", doc, d.Multiline, ml)
	}
	v, err := Get(doc, path)
	if d.Err != err {
		t.Fatalf("Scan(%.200q, %q).Err = %v; Get: %v", doc, path, d.Err, err)
	}
	if d.Field.Kind != v.Kind || len(d.Field.Raw) != len(v.Raw) || cap(d.Field.Raw) != cap(v.Raw) ||
		unsafe.SliceData(d.Field.Raw) != unsafe.SliceData(v.Raw) {
		t.Fatalf("Scan(%.200q, %q).Field = %d %q; Get: %d %q", doc, path, d.Field.Kind, d.Field.Raw, v.Kind, v.Raw)
	}
	checkSpans(t, doc, path, d)
	return d
}

// checkSpans holds ScanMembers of a valid doc to invariant 6: Scan's Doc,
// the spans it was given kept, and, when ok, the spans of Members'
// members after them.
func checkSpans(t *testing.T, doc []byte, path Path, d Doc) {
	t.Helper()
	prior := []Span{{KeyStart: 7}}
	md, spans, ok := ScanMembers(doc, path, prior)
	if md.Valid != d.Valid || md.Multiline != d.Multiline || md.Err != d.Err || md.Field.Kind != d.Field.Kind ||
		len(md.Field.Raw) != len(d.Field.Raw) || unsafe.SliceData(md.Field.Raw) != unsafe.SliceData(d.Field.Raw) {
		t.Fatalf("ScanMembers(%.200q, %q) = %+v; Scan: %+v", doc, path, md, d)
	}
	if len(spans) == 0 || spans[0] != prior[0] {
		t.Fatalf("ScanMembers(%.200q) lost the spans it was given", doc)
	}
	object := bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{"))
	if want := d.Valid && object && depthOf(doc) <= 256; ok != want {
		t.Fatalf("ScanMembers(%.200q): ok %v, want %v", doc, ok, want)
	}
	if !ok {
		return
	}
	spans = spans[1:]
	ms, err := Members(nil, doc)
	if err != nil {
		t.Fatalf("ScanMembers(%.200q) ok, Members: %v", doc, err)
	}
	if len(spans) != len(ms) {
		t.Fatalf("ScanMembers(%.200q): %d spans, Members: %d", doc, len(spans), len(ms))
	}
	at := func(b []byte) uint32 {
		return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(doc))))
	}
	for i, m := range ms {
		want := Span{at(m.Key), at(m.Key) + uint32(len(m.Key)), at(m.Value.Raw), at(m.Value.Raw) + uint32(len(m.Value.Raw)), m.Value.Kind, m.Escaped}
		if spans[i] != want {
			t.Fatalf("ScanMembers(%.200q): span %d %+v, Members: %+v (%q)", doc, i, spans[i], want, m.Key)
		}
	}
}

// depthOf is the deepest nesting of arrays and objects in a valid doc.
func depthOf(doc []byte) int {
	dec := json.NewDecoder(bytes.NewReader(doc))
	depth, most := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return most
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			most = max(most, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

func TestScan(t *testing.T) {
	var cases []struct {
		doc, path string
		valid     bool
		raw       string
		err       error
	}
	for _, tc := range []struct {
		doc, path string
		valid     bool
		raw       string // the field's bytes when valid and found
		err       error
	}{
		{doc: `{"ts":1000}`, path: "ts", valid: true, raw: `1000`},
		{doc: " {\n \"a\" : \"x\" ,\r\n \"ts\" : -1.5e3 } ", path: "ts", valid: true, raw: `-1.5e3`},
		{doc: `{"meta":{"ts":"2024"},"ts":1}`, path: "meta.ts", valid: true, raw: `"2024"`},
		{doc: `{"a":[1,{"ts":2}],"ts":true}`, path: "ts", valid: true, raw: `true`},
		{doc: `{"t\u0073":1}`, path: "ts", valid: true, raw: `1`},
		{doc: `{"\ud83d\ude00":[]}`, path: "😀", valid: true, raw: `[]`},
		{doc: `{"\ud800":1,"\ufffd":2}`, path: "\ufffd", valid: true, raw: `1`},
		{doc: `{"ts":1,"ts":2}`, path: "ts", valid: true, raw: `1`},
		{doc: `{"a":{"b":1},"a":{"c":2}}`, path: "a.c", valid: true, err: ErrNotFound},
		{doc: `{"a":3}`, path: "a.b", valid: true, err: ErrMalformed},
		{doc: `[{"ts":1}]`, path: "ts", valid: true, err: ErrMalformed},
		{doc: `"ts"`, path: "ts", valid: true, err: ErrMalformed},
		{doc: `{}`, path: "ts", valid: true, err: ErrNotFound},
		{doc: `{"ts":1}`, path: "", valid: true},
		{doc: `-0.0e+5`, valid: true},
		{doc: `"é\u00e9\/\b"`, valid: true},
		{doc: ``},
		{doc: ` `},
		{doc: `-`},
		{doc: `01`},
		{doc: `1.`},
		{doc: `1e`},
		{doc: `.5`},
		{doc: `{"a":1}x`},
		{doc: `{"a":1,}`},
		{doc: `[1,]`},
		{doc: `{"a" 1}`},
		{doc: `{1:1}`},
		{doc: `nul`},
		{doc: `"\q"`},
		{doc: `"\u12g4"`},
		{doc: "\"\x01\""},
		{doc: "\"a\nb\""},
		{doc: "\"\xff\""},
		{doc: "\"\xed\xa0\x80\""}, // a surrogate in UTF-8
		{doc: "1 \xff"},
		{doc: "\xef\xbb\xbf{}"}, // BOM
		{doc: `{"a":[}`},
		{doc: `[1}`},
	} {
		cases = append(cases, tc)
	}
	// Long strings: runs of plain bytes (spaces and '!' included), then
	// each kind of special byte at each offset within a word.
	for off := 0; off < 48; off++ {
		run := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 2)[:off]
		if off >= 24 {
			run = strings.Repeat("a !b", 6)[:off-24]
		}
		for _, sp := range []struct {
			s     string
			valid bool
		}{{``, true}, {`\"`, true}, {`\u00e9`, true}, {`\q`, false}, {"\x01", false}, {"é€😀", true}, {"\xe9", false}, {"\n", false}} {
			cases = append(cases, struct {
				doc, path string
				valid     bool
				raw       string
				err       error
			}{doc: `{"k":"` + run + sp.s + run + `","ts":1}`, path: "ts", valid: sp.valid, raw: `1`})
		}
	}
	for _, tc := range cases {
		var p Path
		if tc.path != "" {
			var err error
			if p, err = ParsePath(tc.path); err != nil {
				t.Fatal(err)
			}
		}
		d := checkScan(t, []byte(tc.doc), p)
		if d.Valid != tc.valid {
			t.Errorf("Scan(%q).Valid = %v, want %v", tc.doc, d.Valid, tc.valid)
		}
		if !tc.valid || p == nil {
			continue
		}
		if d.Err != tc.err || tc.err == nil && string(d.Field.Raw) != tc.raw {
			t.Errorf("Scan(%q, %q) = %q, %v; want %q, %v", tc.doc, tc.path, d.Field.Raw, d.Err, tc.raw, tc.err)
		}
	}
}

// nested returns `{"a":` + value nested in depth arrays + `,"b":1}`.
func nested(depth int, inner string) string {
	return `{"a":` + strings.Repeat("[", depth) + inner + strings.Repeat("]", depth) + `,"b":1}`
}

// TestScanNesting checks the depth limits: encoding/json's 10000 open
// containers (past 256, Scan takes its deep path), and Get's 512 levels
// below a member of the top object, which make Get report ErrMalformed.
func TestScanNesting(t *testing.T) {
	b := Path{[]byte("b")}
	for _, tc := range []struct {
		doc   string
		path  Path
		valid bool
		err   error
	}{
		{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), nil, true, nil},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), nil, false, nil},
		{strings.Repeat("[", 9999) + "{}" + strings.Repeat("]", 9999), nil, true, nil},
		{strings.Repeat("[", 10000) + "{}" + strings.Repeat("]", 10000), nil, false, nil},
		{strings.Repeat("[", 10000) + "1" + strings.Repeat("]", 10000), nil, true, nil},
		{strings.Repeat("[", 300) + "1" + strings.Repeat("]", 299), nil, false, nil},
		{nested(512, "1"), b, true, nil},
		{nested(513, ""), b, true, nil},
		{nested(513, "1"), b, true, ErrMalformed},
		{nested(514, ""), b, true, ErrMalformed},
		{nested(9999, ""), b, true, ErrMalformed},
		{nested(10000, ""), b, false, nil},
		// Get stops at the field: deep nesting after it does not matter.
		{`{"b":1,"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, b, true, nil},
		// but it skips the whole value of path[0], deeper levels included.
		{`{"b":{"c":1,"d":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`, Path{[]byte("b"), []byte("c")}, true, ErrMalformed},
		{`{"b":{"d":` + strings.Repeat("[", 512) + strings.Repeat("]", 512) + `,"c":1}}`, Path{[]byte("b"), []byte("c")}, true, nil},
		{`{"b":{"d":` + strings.Repeat("[", 513) + strings.Repeat("]", 513) + `,"c":1}}`, Path{[]byte("b"), []byte("c")}, true, ErrMalformed},
	} {
		d := checkScan(t, []byte(tc.doc), tc.path)
		if d.Valid != tc.valid || tc.valid && d.Err != tc.err {
			t.Errorf("Scan(%.40q… (%d bytes), %q) = valid %v, %v; want %v, %v", tc.doc, len(tc.doc), tc.path, d.Valid, d.Err, tc.valid, tc.err)
		}
	}
}

func TestScanDoesNotAllocate(t *testing.T) {
	for _, c := range []struct{ doc, path string }{
		{benchValue, "ts"},
		{benchObject, "meta.ts"},
		{`{"t\u0073":1}`, "ts"},
		{nested(400, "1"), "b"},
	} {
		doc := []byte(c.doc)
		p, _ := ParsePath(c.path)
		if n := testing.AllocsPerRun(50, func() { _ = Scan(doc, p) }); n != 0 {
			t.Errorf("Scan(%.40q, %s) allocates %.1f times", c.doc, c.path, n)
		}
	}
}

// FuzzScan holds Scan to its references (see checkScan) with the fuzzed
// path and with none, and keyMatches to encoding/json's decoding of a
// string.
//
//	go test ./internal/jsonfield -fuzz FuzzScan -fuzztime 60s
func FuzzScan(f *testing.F) {
	for _, s := range []struct{ doc, path string }{
		{benchValue, "ts"},
		{benchObject, "meta.ts"},
		{benchObject, "tags"},
		{`{"meta":{"ts":-1.5e+3}}`, "meta.ts"},
		{`{"meta":{"ts":1},"meta":{"x":2}}`, "meta.x"},
		{`{"meta":7}`, "meta.ts"},
		{`{"t\u0073":1,"ts":2}`, "ts"},
		{`{"a\/b":1}`, "a/b"},
		{`{"\ud83d\ude00":1}`, "😀"},
		{`{"\ud800\u0041":1}`, "\ufffdA"},
		{`{"\udc00\ud800":1}`, "\ufffd\ufffd"},
		{`"\ud800"`, "\ufffd"},
		{`"\u00e9\n\t\"\\"`, "é\n\t\"\\"},
		{"{\"a\":\"\xff\"}", "a"},
		{"\"\xc3\"", ""},
		{"{\"\xe2\x82\xac\":1}", "€"},
		{`-`, ""}, {`01`, ""}, {`1.`, ""}, {`1e`, ""}, {`-0.0e+5`, ""}, {`1E-07`, ""}, {`-01`, ""},
		{`{"a":1}x`, "a"}, {`{"a":1} `, "a"}, {" \t\r\n{\"a\":\n1}\r\n", "a"},
		{"\xef\xbb\xbf{\"a\":1}", "a"},
		{``, ""}, {` `, ""}, {`[]`, ""}, {`[[],{},""]`, ""}, {`{"a":[}`, "a"},
		{`true`, ""}, {`fals`, ""}, {`nulll`, ""},
		{nested(513, ""), "b"},
		{nested(514, ""), "b"},
		{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), ""},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), ""},
	} {
		f.Add([]byte(s.doc), s.path)
	}
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		p, err := ParsePath(path)
		if err != nil {
			p = nil
		}
		d := checkScan(t, doc, p)
		if nd := checkScan(t, doc, nil); nd.Valid != d.Valid {
			t.Fatalf("Scan(%q) valid %v with path %q, %v without", doc, d.Valid, path, nd.Valid)
		}
		body := bytes.TrimSpace(doc)
		if !d.Valid || len(body) < 2 || body[0] != '"' {
			return
		}
		var s string
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatal(err)
		}
		inner := body[1 : len(body)-1]
		if !keyMatches(inner, []byte(s)) || keyMatches(inner, []byte(s+"x")) || keyMatches(inner, []byte(path)) != (s == path) {
			t.Fatalf("keyMatches(%q) disagrees with encoding/json's %q (path %q)", inner, s, path)
		}
		if len(s) > 0 && keyMatches(inner, []byte(s[:len(s)-1])) {
			t.Fatalf("keyMatches(%q) accepts a prefix of %q", inner, s)
		}
	})
}

// TestScanKeysLikeGet is the deterministic part of FuzzScan's key check:
// escaped keys compare as encoding/json decodes them.
func TestScanKeysLikeGet(t *testing.T) {
	for _, k := range []string{`t\u0073`, `a\/b`, `\ud83d\ude00`, `\ud800`, `\ud800\u0041`, `\udc00\ud800`, `\ud800\ud800`,
		`\"\\\b\f\n\r\t`, `\u00e9x`, `é`} {
		var want string
		if err := json.Unmarshal([]byte(`"`+k+`"`), &want); err != nil {
			t.Fatal(err)
		}
		doc := []byte(`{"x":0,"` + k + `":1}`)
		d := checkScan(t, doc, Path{[]byte(want)})
		if d.Err != nil || string(d.Field.Raw) != "1" {
			t.Errorf("Scan(%s, %q) = %q, %v", doc, want, d.Field.Raw, d.Err)
		}
		if !errors.Is(checkScan(t, doc, Path{[]byte(want + "!")}).Err, ErrNotFound) {
			t.Errorf("Scan(%s, %q) found a longer key", doc, want+"!")
		}
	}
}
