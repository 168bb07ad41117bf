package jsonfield

// Member is one member of an object: its key as written (quoted, with its
// escapes) and its value.
type Member struct {
	Key     []byte
	Escaped bool // Key has escapes
	Value   Value
}

// Members appends the members of the JSON object doc to dst, in order,
// repeated keys included, scanning doc once (invariant 5 of doc.go).
func Members(dst []Member, doc []byte) ([]Member, error) {
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return dst, ErrMalformed
	}
	i = skipWS(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return dst, nil
	}
	for {
		i = skipWS(doc, i)
		if i >= len(doc) || doc[i] != '"' {
			return dst, ErrMalformed
		}
		ks := i
		ke, escaped, ok := scanString(doc, i)
		if !ok {
			return dst, ErrMalformed
		}
		i = skipWS(doc, ke)
		if i >= len(doc) || doc[i] != ':' {
			return dst, ErrMalformed
		}
		i = skipWS(doc, i+1)
		vs := i
		kind, ve, ok := skipValue(doc, i, 0)
		if !ok {
			return dst, ErrMalformed
		}
		dst = append(dst, Member{Key: doc[ks:ke], Escaped: escaped, Value: Value{Kind: kind, Raw: doc[vs:ve]}})
		i = skipWS(doc, ve)
		if i >= len(doc) {
			return dst, ErrMalformed
		}
		switch doc[i] {
		case ',':
			i++
		case '}':
			return dst, nil
		default:
			return dst, ErrMalformed
		}
	}
}

// Find is the value of the first of ms whose unescaped key is key, or
// ErrNotFound.
func Find(ms []Member, key []byte) (Value, error) {
	for i := range ms {
		if keyEquals(ms[i].Key, ms[i].Escaped, key) {
			return ms[i].Value, nil
		}
	}
	return Value{}, ErrNotFound
}
