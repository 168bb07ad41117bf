package jsonfield

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// Errors returned by Get.
var (
	ErrMalformed = errors.New("malformed JSON")
	ErrNotFound  = errors.New("field not found")
)

// Kind is the JSON type of a value.
type Kind uint8

// The JSON kinds.
const (
	Invalid Kind = iota
	String
	Number
	Bool
	Null
	Object
	Array
)

// Value is a raw JSON value.
type Value struct {
	Kind Kind
	Raw  []byte // the value's bytes; for strings, including the quotes
}

// Path is a parsed dotted field path such as "meta.ts".
type Path [][]byte

// ParsePath splits a dotted path. An empty path or an empty segment is an
// error.
func ParsePath(s string) (Path, error) {
	var p Path
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if i == start {
				return nil, errors.New("empty segment in field path " + strconv.Quote(s))
			}
			p = append(p, []byte(s[start:i]))
			start = i + 1
		}
	}
	return p, nil
}

// Get returns the value at path in the JSON object doc.
func Get(doc []byte, path Path) (Value, error) {
	v := Value{Raw: doc}
	for _, seg := range path {
		i := skipWS(doc, 0)
		if i >= len(doc) || doc[i] != '{' {
			return Value{}, ErrMalformed
		}
		var err error
		v, err = member(doc, i+1, seg)
		if err != nil {
			return Value{}, err
		}
		doc = v.Raw
	}
	return v, nil
}

// member scans an object body starting after '{' for key.
func member(doc []byte, i int, key []byte) (Value, error) {
	i = skipWS(doc, i)
	if i < len(doc) && doc[i] == '}' {
		return Value{}, ErrNotFound
	}
	for {
		i = skipWS(doc, i)
		if i >= len(doc) || doc[i] != '"' {
			return Value{}, ErrMalformed
		}
		ks := i
		ke, escaped, ok := scanString(doc, i)
		if !ok {
			return Value{}, ErrMalformed
		}
		i = skipWS(doc, ke)
		if i >= len(doc) || doc[i] != ':' {
			return Value{}, ErrMalformed
		}
		i = skipWS(doc, i+1)
		vs := i
		kind, ve, ok := skipValue(doc, i, 0)
		if !ok {
			return Value{}, ErrMalformed
		}
		if keyEquals(doc[ks:ke], escaped, key) {
			return Value{Kind: kind, Raw: doc[vs:ve]}, nil
		}
		i = skipWS(doc, ve)
		if i >= len(doc) {
			return Value{}, ErrMalformed
		}
		switch doc[i] {
		case ',':
			i++
		case '}':
			return Value{}, ErrNotFound
		default:
			return Value{}, ErrMalformed
		}
	}
}

func keyEquals(quoted []byte, escaped bool, key []byte) bool {
	if !escaped {
		return string(quoted[1:len(quoted)-1]) == string(key)
	}
	// JSON escapes, not Go's: \/ and surrogate pairs are valid keys.
	s, err := Value{Kind: String, Raw: quoted}.Text()
	return err == nil && s == string(key)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString scans a string starting at the opening quote and returns the
// index after the closing quote.
func scanString(b []byte, i int) (end int, escaped, ok bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, true
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			return 0, false, false
		}
	}
	return 0, false, false
}

const maxDepth = 512

func skipValue(b []byte, i, depth int) (Kind, int, bool) {
	if i >= len(b) || depth > maxDepth {
		return Invalid, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		e, _, ok := scanString(b, i)
		return String, e, ok
	case c == '{' || c == '[':
		return skipContainer(b, i, depth)
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && isNumByte(b[j]) {
			j++
		}
		return Number, j, true
	case hasWord(b, i, "true"):
		return Bool, i + 4, true
	case hasWord(b, i, "false"):
		return Bool, i + 5, true
	case hasWord(b, i, "null"):
		return Null, i + 4, true
	}
	return Invalid, 0, false
}

func skipContainer(b []byte, i, depth int) (Kind, int, bool) {
	open := b[i]
	kind, closer := Object, byte('}')
	if open == '[' {
		kind, closer = Array, ']'
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == closer {
		return kind, i + 1, true
	}
	for {
		i = skipWS(b, i)
		if kind == Object {
			if i >= len(b) || b[i] != '"' {
				return Invalid, 0, false
			}
			e, _, ok := scanString(b, i)
			if !ok {
				return Invalid, 0, false
			}
			i = skipWS(b, e)
			if i >= len(b) || b[i] != ':' {
				return Invalid, 0, false
			}
			i = skipWS(b, i+1)
		}
		_, e, ok := skipValue(b, i, depth+1)
		if !ok {
			return Invalid, 0, false
		}
		i = skipWS(b, e)
		if i >= len(b) {
			return Invalid, 0, false
		}
		switch b[i] {
		case ',':
			i++
		case closer:
			return kind, i + 1, true
		default:
			return Invalid, 0, false
		}
	}
}

func isNumByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

func hasWord(b []byte, i int, w string) bool {
	return len(b)-i >= len(w) && string(b[i:i+len(w)]) == w
}

// Text returns a string value's text (unescaped) or, for other kinds, the raw
// bytes as text.
func (v Value) Text() (string, error) {
	if v.Kind != String {
		return string(v.Raw), nil
	}
	inner := v.Raw[1 : len(v.Raw)-1]
	needs := false
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			needs = true
			break
		}
	}
	if !needs {
		return string(inner), nil
	}
	s, err := strconv.Unquote(string(v.Raw))
	if err != nil {
		// strconv does not accept every JSON escape (e.g. \/); fall back.
		return jsonUnquote(inner)
	}
	return s, nil
}
