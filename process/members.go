package process

// The fast path's reads of the value's top-level members (invariant 6 of
// doc.go): one scan per record, shared by every field the filter and the
// map read, that goes no further into the value than the last member
// read so far needs.

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/signalbox/signalbox/internal/jsonfield"
)

// memberScan reads the members of a JSON object on demand: find scans on
// from where the last find stopped, keeping every member it passed, so
// that the members are scanned at most once per record whatever the
// number of reads. find(k) is exactly jsonfield.Get(doc, Path{k}): the
// same kind, bytes at the same address and error, for every input
// (TestMemberScanIsGet, FuzzMemberScan): members before the key are
// checked as strictly as Get checks them, and a malformed member stops the
// scan.
type memberScan struct {
	doc  []byte
	pos  int      // where the next member (or the closing brace) starts
	done bool     // the scan reached the end of the object, or a malformed member
	bad  bool     // ... a malformed one
	ms   []member // the members scanned so far (or another scan's: prefill)
	own  []member // the buffer ms is when the scan is this one's
}

// member is a scanned member: its quoted key and its value, as offsets
// into the doc (no pointers: appending one needs no write barrier), as
// jsonfield.ScanMembers records them (activation.prefill).
type member = jsonfield.Span

func (s *memberScan) value(m *member) jsonfield.Value {
	return jsonfield.Value{Kind: m.Kind, Raw: s.doc[m.ValueStart:m.ValueEnd:m.ValueEnd]}
}

// reset starts a scan of doc, which must begin (after whitespace) with '{'
// for find to find anything, and be shorter than 4 GiB.
func (s *memberScan) reset(doc []byte) {
	*s = memberScan{doc: doc, ms: s.own[:0], own: s.own}
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' || uint64(len(doc)) > math.MaxUint32 {
		s.done, s.bad = true, true
		return
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		s.done = true
		return
	}
	s.pos = i
}

// find is the first member whose unescaped key is key, as jsonfield.Get
// finds it.
func (s *memberScan) find(key string) (jsonfield.Value, error) {
	// keyIs, by hand (too big to inline), over the members and document
	// in locals: the loop reloads nothing
	ms, doc, n := s.ms, s.doc, uint32(len(key)+2)
	for i := range ms {
		m := &ms[i]
		if m.Escaped {
			if s.escapedKeyIs(m, key) {
				return s.value(m), nil
			}
		} else if m.KeyEnd-m.KeyStart == n && string(doc[m.KeyStart+1:m.KeyEnd-1]) == key {
			return s.value(m), nil
		}
	}
	for !s.done {
		m, ok := s.next()
		if !ok {
			break
		}
		if s.keyIs(m, key) {
			return s.value(m), nil
		}
	}
	if s.bad {
		return jsonfield.Value{}, jsonfield.ErrMalformed
	}
	return jsonfield.Value{}, jsonfield.ErrNotFound
}

// next scans the member at pos; ok is false at the end of the object, or
// when the member is malformed (then bad is set). Compact JSON (no
// whitespace between tokens, short keys, strings and numbers as values)
// takes the shortest way; the checks are skipString's and skipJSON's.
func (s *memberScan) next() (m *member, ok bool) {
	doc, i := s.doc, s.pos
	if i < len(doc) && doc[i] != '"' {
		i = skipSpace(doc, i)
	}
	if i >= len(doc) || doc[i] != '"' {
		return s.fail()
	}
	ks := i
	ke, escaped, ok := skipString(doc, i)
	if !ok {
		return s.fail()
	}
	if i = ke; i < len(doc) && doc[i] != ':' {
		i = skipSpace(doc, i)
	}
	if i >= len(doc) || doc[i] != ':' {
		return s.fail()
	}
	if i++; i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i = skipSpace(doc, i)
	}
	vs, kind, ve := i, jsonfield.Invalid, 0
	switch {
	case i >= len(doc):
		return s.fail()
	case doc[i] == '"':
		kind = jsonfield.String
		ve, _, ok = skipString(doc, i)
	case doc[i] == '-' || doc[i]-'0' < 10:
		kind, ve, ok = jsonfield.Number, skipNumber(doc, i), true
	default:
		kind, ve, ok = skipJSON(doc, i, 0)
	}
	if !ok {
		return s.fail()
	}
	// written field by field into the slice: a member built on the stack
	// and copied is read back before its stores are done (a stall)
	n := len(s.ms)
	if n == cap(s.ms) {
		s.ms = append(s.ms, member{})
		s.own = s.ms[:0]
	}
	s.ms = s.ms[:n+1]
	m = &s.ms[n]
	m.KeyStart, m.KeyEnd, m.ValueStart, m.ValueEnd, m.Kind, m.Escaped = uint32(ks), uint32(ke), uint32(vs), uint32(ve), kind, escaped
	next, closed, ok := after(doc, ve, '}')
	// !ok: Get would have returned this member had it been the key; a
	// read of any later key is malformed
	s.pos, s.done, s.bad = next, closed || !ok, !ok
	return m, true
}

func (s *memberScan) fail() (*member, bool) {
	s.done, s.bad = true, true
	return nil, false
}

// keyIs reports whether m's key, unescaped, is key.
func (s *memberScan) keyIs(m *member, key string) bool {
	if m.Escaped {
		return s.escapedKeyIs(m, key)
	}
	return int(m.KeyEnd-m.KeyStart) == len(key)+2 && string(s.doc[m.KeyStart+1:m.KeyEnd-1]) == key
}

func (s *memberScan) escapedKeyIs(m *member, key string) bool {
	k, err := jsonfield.Value{Kind: jsonfield.String, Raw: s.doc[m.KeyStart:m.KeyEnd]}.Text()
	return err == nil && k == key
}

// maxScanDepth is jsonfield.Get's limit on the nesting of a member's value.
const maxScanDepth = 512

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SWAR constants: one in every byte, the high bit of every byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// skipString scans the string whose opening quote is at i and returns the
// index after its closing quote: a control byte in it is malformed, an
// escape skips the byte after the backslash (what Get checks). Eight bytes
// at a time while none of them can be '"', '\\' or a control byte.
func skipString(b []byte, i int) (end int, escaped, ok bool) {
	for i++; i < len(b); {
		if i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			t := ((x ^ ones*'"') - ones) | ((x ^ ones*'\\') - ones) | (x - ones*0x20)
			if t = t &^ x & highs; t == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(t) / 8 // the first byte flagged is one: borrows run upwards only
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, true
		case c == '\\':
			escaped = true
			i += 2
		case c < 0x20:
			return 0, false, false
		default:
			i++
		}
	}
	return 0, false, false
}

// skipJSON scans the value at i as jsonfield.Get skips a member's value:
// a string as skipString, a number as a run of number bytes after '-' or
// a digit, true, false, null, and objects and arrays member by member,
// nested at most maxScanDepth levels.
func skipJSON(b []byte, i, depth int) (jsonfield.Kind, int, bool) {
	if i >= len(b) || depth > maxScanDepth {
		return jsonfield.Invalid, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		e, _, ok := skipString(b, i)
		return jsonfield.String, e, ok
	case c == '-' || (c >= '0' && c <= '9'):
		return jsonfield.Number, skipNumber(b, i), true
	case c == '{' || c == '[':
		return skipContainer(b, i, depth)
	case word(b, i, "true"):
		return jsonfield.Bool, i + 4, true
	case word(b, i, "false"):
		return jsonfield.Bool, i + 5, true
	case word(b, i, "null"):
		return jsonfield.Null, i + 4, true
	}
	return jsonfield.Invalid, 0, false
}

// skipContainer scans the object or array opening at i.
func skipContainer(b []byte, i, depth int) (jsonfield.Kind, int, bool) {
	kind, closer := jsonfield.Object, byte('}')
	if b[i] == '[' {
		kind, closer = jsonfield.Array, ']'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closer {
		return kind, i + 1, true
	}
	for {
		if kind == jsonfield.Object {
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != '"' {
				return jsonfield.Invalid, 0, false
			}
			e, _, ok := skipString(b, i)
			if i = skipSpace(b, e); !ok || i >= len(b) || b[i] != ':' {
				return jsonfield.Invalid, 0, false
			}
			i++
		}
		_, e, ok := skipJSON(b, skipSpace(b, i), depth+1)
		var closed bool
		if ok {
			i, closed, ok = after(b, e, closer)
		}
		switch {
		case !ok:
			return jsonfield.Invalid, 0, false
		case closed:
			return kind, i, true
		}
	}
}

// after reads what follows a value that ends at i inside a container that
// closer closes: the index after a ',' (closed false) or after closer
// (closed true); ok is false for anything else.
func after(b []byte, i int, closer byte) (next int, closed, ok bool) {
	if i < len(b) && b[i] != ',' && b[i] != closer {
		i = skipSpace(b, i)
	}
	switch {
	case i < len(b) && b[i] == ',':
		return i + 1, false, true
	case i < len(b) && b[i] == closer:
		return i + 1, true, true
	}
	return i, false, false
}

// skipNumber returns the end of the run of number bytes after b[i] ('-'
// or a digit), as Get skips a number: digits eight at a time.
func skipNumber(b []byte, i int) int {
	for i++; i+8 <= len(b); i += 8 {
		if t := jsonfield.NonDigits(binary.LittleEndian.Uint64(b[i:])); t != 0 {
			i += bits.TrailingZeros64(t) >> 3
			break
		}
	}
	for i < len(b) && numByte(b[i]) {
		i++
	}
	return i
}

func numByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

func word(b []byte, i int, w string) bool {
	return len(b)-i >= len(w) && string(b[i:i+len(w)]) == w
}
