package jsonfield

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// Doc is what one validating pass (Scan) learns about a document.
type Doc struct {
	// Valid reports that the document is exactly one JSON value (RFC 8259,
	// surrounded by optional whitespace) in valid UTF-8: the verdict of
	// utf8.Valid(doc) && encoding/json.Valid(doc), nesting limit included.
	Valid bool
	// Multiline reports, when Valid, that the document contains '\n' or
	// '\r' (then only as whitespace between tokens). Unspecified when not
	// Valid.
	Multiline bool
	// Field is, when Valid, the value at the path exactly as Get(doc, path)
	// returns it (aliasing doc). Unspecified when not Valid: call Get.
	Field Value
	// Err is, when Valid, exactly Get(doc, path)'s error: nil, ErrNotFound
	// or ErrMalformed. Unspecified when not Valid: call Get.
	Err error
}

// maxNesting is encoding/json's limit on open arrays and objects.
const maxNesting = 10000

// Scan validates doc in one pass and, when path is not empty, finds the
// value at path on the way (see Doc). It never allocates and does not
// recurse on the document's nesting; it runs in time linear in len(doc).
//
// Get reads only up to the field and reports ErrMalformed for a member value
// nested more than 512 levels deep; Scan reports the same Field and Err for
// every valid document, and validates the rest of it.
//
// Scan is small enough to be inlined, so that the caller's Doc is written
// in place rather than copied (Doc is too large to stay in registers).
func Scan(doc []byte, path Path) (d Doc) {
	var stack [4]uint64 // 256 levels; deeper documents take scanDeep
	scan(&d, doc, path, stack[:], nil)
	return d
}

// Span is where one member of a document's top-level object is, as byte
// offsets into the document: its key, quoted as written (with its
// escapes), at [KeyStart, KeyEnd), and its value at [ValueStart,
// ValueEnd).
type Span struct {
	KeyStart, KeyEnd, ValueStart, ValueEnd uint32
	Kind                                   Kind
	Escaped                                bool // the key has escapes
}

// ScanMembers is Scan that also appends to spans a Span for each member of
// the document's top-level object, in order, repeated keys included. ok
// reports that those are exactly the members Members finds (invariant 6):
// the document is Valid, its value an object, nested at most 256 levels
// deep and shorter than 4 GiB. When ok is false, what it appended is
// unspecified. It allocates only to grow spans.
func ScanMembers(doc []byte, path Path, spans []Span) (d Doc, out []Span, ok bool) {
	var stack [4]uint64
	if uint64(len(doc)) > math.MaxUint32 {
		scan(&d, doc, path, stack[:], nil)
		return d, spans, false
	}
	rec := recording{spans: spans, base: len(spans)}
	scan(&d, doc, path, stack[:], &rec)
	i := 0
	for i < len(doc) && doc[i] <= ' ' {
		i++
	}
	return d, rec.spans, d.Valid && !rec.deep && i < len(doc) && doc[i] == '{'
}

// recording is where scan records the top-level members (ScanMembers).
type recording struct {
	spans []Span
	base  int  // len(spans) before the scan
	deep  bool // the document took scanDeep, which records nothing
}

// scanDeep rescans into *d a document nested more than 256 levels deep,
// with a stack for encoding/json's whole nesting limit (so the scan it runs
// never hands the document on again). It is a separate frame so that the
// common case does not zero 1.25 KiB of stack.
//
//go:noinline
func scanDeep(d *Doc, doc []byte, path Path, rec *recording) {
	var stack [(maxNesting + 63) / 64]uint64
	*d = Doc{}
	if rec != nil {
		rec.spans, rec.deep = rec.spans[:rec.base], true
	}
	scan(d, doc, path, stack[:], nil)
}

// search is scan's state for finding the field.
type search struct {
	path     Path
	stack    []uint64 // kinds of the open containers, bit set: object
	state    int
	keyDepth int  // depth of the object whose keys are compared with path[lvl]
	watch    int  // depth at which the next value end matters to the search
	lvl      int  // the path segment searched for
	hit      bool // the key just read is path[lvl]; lim is then -1
	hitLim   int  // lim before the hit
	vs       int  // where the field's value starts
	ks       int  // where the key being scanned starts
	esc      bool // the key being scanned has escapes

	// The top-level object's members, when recorded (ScanMembers; nil:
	// not recording), and the member under way (open): its key.
	rec      *recording
	mks, mke int
	mesc     bool
	open     bool
}

// The states of the path search.
const (
	searching = iota // comparing the keys of the object at keyDepth with path[lvl]
	inField          // inside the field's value, which ends at the next value end at depth watch
	settled          // Field and Err are final (unless Get's depth limit overrides them)
)

// scan is Scan into *d, which must be zero, with a caller-provided stack of
// container kinds (bit set: object), one bit per open container. A document
// nesting deeper than the stack holds is handed to scanDeep.
//
// It is one function with gotos rather than calls on purpose: Go's calling
// convention has no callee-saved registers, so every call in the loop (one
// per string) would spill and reload the scanner's state.
func scan(d *Doc, doc []byte, path Path, stack []uint64, rec *recording) {
	// The search's state lives in memory (the struct's address is taken),
	// so that the registers go to the scanning loop's own variables.
	s := &search{path: path, stack: stack, state: settled, keyDepth: -1, watch: -1, rec: rec}
	var (
		n      = len(doc)
		i      int
		depth  int // open containers enclosing position i
		ml     bool
		nl     bool
		inKey  bool // the string being scanned is a key
		closer byte // the innermost open container's closing bracket
		x, t   uint64
		k      int
		c      byte
		// A value starting at depth > lim needs a look: past Get's depth
		// limit while Get would still be reading, past encoding/json's one
		// for a container otherwise; -1 after a key hit.
		lim = maxNesting - 1
	)
	if i, ml = space(doc, 0); i >= n {
		return
	}
	if len(s.path) > 0 {
		if doc[i] != '{' {
			d.Err = ErrMalformed
		} else {
			// Get skips each member value of the top object up to the
			// first match of path[0], that match's value included, with
			// its depth limit; deeper levels are inside that value.
			s.state, s.keyDepth, s.watch, lim = searching, 1, 0, maxDepth+1
		}
	}

value: // doc[i] (i < n) starts a value enclosed by depth containers
	if depth > lim { // one test for the depth limits and a key hit
		if s.hit {
			lim = s.hitLim
		}
		if depth > lim && lim == maxDepth+1 { // Get fails here
			d.Field, d.Err = Value{}, ErrMalformed
			s.state, s.keyDepth, s.watch, s.hit, lim = settled, -1, -1, false, maxNesting-1
		}
		if depth > lim && (doc[i] == '{' || doc[i] == '[') {
			return
		}
		if s.hit { // the key was path[lvl]
			s.hit = false
			switch {
			case s.lvl == len(s.path)-1:
				s.state, s.vs, s.watch, s.keyDepth = inField, i, depth, -1
			case doc[i] == '{':
				s.lvl, s.keyDepth, s.watch = s.lvl+1, depth+1, depth
			default:
				d.Err = ErrMalformed
				s.state, s.keyDepth, s.watch, lim = settled, -1, -1, maxNesting-1
			}
		}
	}
	if doc[i] == '"' {
		i++
		inKey = false
		goto str
	}
	if c = doc[i]; c-'0' < 10 || c == '-' {
		goto number
	}
	switch c {
	case '{', '[':
		c = doc[i] + 2 // '}' or ']'
		if i, nl = space(doc, i+1); i >= n {
			return
		}
		ml = ml || nl
		if doc[i] == c {
			i++
			goto end
		}
		if depth>>6 >= len(s.stack) {
			scanDeep(d, doc, path, s.rec)
			return
		}
		closer = c
		if depth++; c == '}' {
			s.stack[(depth-1)>>6] |= 1 << ((depth - 1) & 63)
			goto key
		}
		s.stack[(depth-1)>>6] &^= 1 << ((depth - 1) & 63)
		goto value
	case 't':
		if n-i < 4 || binary.LittleEndian.Uint32(doc[i:]) != wordTrue {
			return
		}
		i += 4
	case 'f':
		if n-i < 5 || binary.LittleEndian.Uint32(doc[i+1:]) != wordAlse {
			return
		}
		i += 5
	case 'n':
		if n-i < 4 || binary.LittleEndian.Uint32(doc[i:]) != wordNull {
			return
		}
		i += 4
	default:
		return
	}
	goto end

number: // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
	if c == '-' {
		if i++; i >= n {
			return
		}
		c = doc[i]
	}
	if i++; c-'1' < 9 && i < n && doc[i]-'0' < 10 {
		// More digits: runs go 8 at a time (event times have 13).
		for ; i+8 <= n; i += 8 {
			if t = NonDigits(binary.LittleEndian.Uint64(doc[i:])); t != 0 {
				i += bits.TrailingZeros64(t) >> 3
				goto frac
			}
		}
		for ; i < n && doc[i]-'0' < 10; i++ {
		}
	} else if c-'0' >= 10 {
		return
	}
frac:
	if i < n && (doc[i] == '.' || doc[i]|0x20 == 'e') {
		if doc[i] == '.' {
			if i++; i >= n || doc[i]-'0' >= 10 {
				return
			}
			for i++; i < n && doc[i]-'0' < 10; i++ {
			}
		}
		if i < n && doc[i]|0x20 == 'e' {
			if i++; i < n && (doc[i] == '+' || doc[i] == '-') {
				i++
			}
			if i >= n || doc[i]-'0' >= 10 {
				return
			}
			for i++; i < n && doc[i]-'0' < 10; i++ {
			}
		}
	}

end: // a value ends at i
	if depth == s.watch {
		switch s.state {
		case inField:
			d.Field = Value{Kind: kindAt(doc[s.vs]), Raw: doc[s.vs:i]}
		case searching:
			d.Err = ErrNotFound
		}
		s.state, s.keyDepth, s.watch = settled, -1, 1
		if depth <= 1 { // the value of the top object's member path[0] ends
			s.watch, lim = -1, maxNesting-1
		}
	}
	if i < n && doc[i] <= ' ' {
		i, nl = space(doc, i)
		ml = ml || nl
	}
	if depth == 0 {
		if i != n {
			return
		}
		d.Valid, d.Multiline = true, ml
		if len(s.path) == 0 {
			d.Field.Raw = doc // as Get(doc, nil) returns it
		}
		return
	}
	if i >= n {
		return
	}
	if c = doc[i]; c == ',' {
		if i, nl = space(doc, i+1); i >= n {
			return
		}
		ml = ml || nl
		if closer == '}' {
			goto key
		}
		goto value
	}
	if c != closer {
		return
	}
	if depth == 1 && s.open { // the top-level object's last member ends (ScanMembers)
		s.member(doc, i)
	}
	i++
	if depth--; depth > 0 && s.stack[(depth-1)>>6]>>((depth-1)&63)&1 == 0 {
		closer = ']'
	} else {
		closer = '}' // or none, at depth 0
	}
	goto end

key: // doc[i] (i < n) should open a member's key
	if doc[i] != '"' {
		return
	}
	s.ks = i
	i++
	inKey, s.esc = true, false
	// fall through to str

str: // doc[i:] is a string's body; runs of plain ASCII go 8 bytes at a time
	if i+8 <= n {
		// Most strings end within a word: that case stays in this frame,
		// longer runs go to plainRun, whose loop keeps its registers.
		x = binary.LittleEndian.Uint64(doc[i:])
		for t = special(x); t == 0; t = special(x) {
			if i = plainRun(doc, i+8); i+8 > n {
				break
			}
			x = binary.LittleEndian.Uint64(doc[i:])
		}
		if t != 0 {
			k = bits.TrailingZeros64(t) // 8*(byte index)+7
			i, c = i+k>>3, byte(x>>(k-7))
			goto look
		}
	}
	if n < 8 {
		for i < n && plain[doc[i]] {
			i++
		}
		if i >= n {
			return
		}
		c = doc[i]
	} else {
		if i >= n {
			return
		}
		// The last n-i < 8 bytes, shifted down from the document's last
		// word: the zero bytes shifted in count as special.
		x = binary.LittleEndian.Uint64(doc[n-8:]) >> (uint(8-(n-i)) * 8)
		k = bits.TrailingZeros64(special(x))
		if i += k >> 3; i >= n {
			return
		}
		c = byte(x >> (k - 7))
	}
look: // c = doc[i] is not plain
	switch {
	case c == '"':
		i++
		if inKey {
			goto member
		}
		goto end
	case c == '\\':
		s.esc = true
		if i+1 >= n {
			return
		}
		if doc[i+1] == 'u' {
			if i+6 > n || hexVal[doc[i+2]]|hexVal[doc[i+3]]|hexVal[doc[i+4]]|hexVal[doc[i+5]] == 0xff {
				return
			}
			i += 6
		} else if escaped[doc[i+1]] {
			i += 2
		} else {
			return
		}
	case c < 0x20:
		return
	case c < 0xc2 || c > 0xf4: // a continuation byte, an overlong lead or not UTF-8
		return
	case c < 0xe0:
		if i+1 >= n || doc[i+1]&0xc0 != 0x80 {
			return
		}
		i += 2
	default: // 3 or 4 bytes: the second byte's range depends on the first
		lo, hi := byte(0x80), byte(0xbf)
		switch c {
		case 0xe0:
			lo = 0xa0
		case 0xed:
			hi = 0x9f // no surrogates
		case 0xf0:
			lo = 0x90
		case 0xf4:
			hi = 0x8f // nothing past U+10FFFF
		}
		size := 3
		if c >= 0xf0 {
			size = 4
		}
		if i+size > n || doc[i+1] < lo || doc[i+1] > hi || doc[i+2]&0xc0 != 0x80 ||
			size == 4 && doc[i+3]&0xc0 != 0x80 {
			return
		}
		i += size
	}
	goto str

member: // a key ends at i
	if depth == 1 && s.rec != nil { // a member of the top-level object (ScanMembers)
		if s.open { // the one before it ends
			s.member(doc, s.ks)
		}
		s.mks, s.mke, s.mesc, s.open = s.ks, i, s.esc, true
	}
	if depth == s.keyDepth {
		// Without escapes the key is its bytes (and the comparison of
		// different lengths costs no call).
		if s.esc && keyMatches(doc[s.ks+1:i-1], s.path[s.lvl]) || !s.esc && string(doc[s.ks+1:i-1]) == string(s.path[s.lvl]) {
			s.hit, s.hitLim, lim = true, lim, -1
		}
	}
	if i < n && doc[i] <= ' ' {
		i, nl = space(doc, i)
		ml = ml || nl
	}
	if i >= n || doc[i] != ':' {
		return
	}
	if i, nl = space(doc, i+1); i >= n {
		return
	}
	ml = ml || nl
	goto value
}

// member records the member under way, whose key ends at mke and whose
// value ends before j: the next key's quote, or the object's closing
// brace, with whitespace and a comma between. The document is valid up
// to j.
func (s *search) member(doc []byte, j int) {
	vs := s.mke
	for doc[vs] != ':' {
		vs++
	}
	for vs++; doc[vs] <= ' '; vs++ {
	}
	for j--; doc[j] <= ' '; j-- {
	}
	if doc[j] == ',' {
		for j--; doc[j] <= ' '; j-- {
		}
	}
	// written field by field in place: a Span built on the stack and
	// copied is read back before its stores are done (a stall)
	sp := s.rec.spans
	n := len(sp)
	if n == cap(sp) {
		sp = append(sp, Span{})
	}
	sp = sp[:n+1]
	m := &sp[n]
	m.KeyStart, m.KeyEnd, m.ValueStart, m.ValueEnd, m.Kind, m.Escaped = uint32(s.mks), uint32(s.mke), uint32(vs), uint32(j+1), kindAt(doc[vs]), s.mesc
	s.rec.spans, s.open = sp, false
}

// The literals, read as little-endian words ("false" without its 'f').
var (
	wordTrue = binary.LittleEndian.Uint32([]byte("true"))
	wordAlse = binary.LittleEndian.Uint32([]byte("alse"))
	wordNull = binary.LittleEndian.Uint32([]byte("null"))
)

// kindAt is the kind of a valid value starting with byte c.
func kindAt(c byte) Kind {
	switch c {
	case '"':
		return String
	case '{':
		return Object
	case '[':
		return Array
	case 't', 'f':
		return Bool
	case 'n':
		return Null
	}
	return Number
}

// space skips JSON whitespace from i and reports whether it saw CR or LF.
func space(b []byte, i int) (int, bool) {
	nl := false
	for ; i < len(b) && b[i] <= ' '; i++ {
		switch b[i] {
		case ' ', '\t':
		case '\n', '\r':
			nl = true
		default:
			return i, nl
		}
	}
	return i, nl
}

// NonDigits has bits set in (and only in) the bytes of the little-endian
// word x that are not ASCII digits, or above the first such byte: the
// lowest set bit is exact, and NonDigits(x) == 0 exactly when all eight
// bytes are digits. Scan reads numbers with it, the engine event times.
func NonDigits(x uint64) uint64 {
	return (x&(ones*0xf0) ^ ones*0x30) | ((x+ones*6)&(ones*0xf0) ^ ones*0x30)
}

// plainRun returns the index of the first word from i (in steps of 8) that
// may hold a special byte, or the first index past len(b)-8. Its test is
// cheaper than special's and also stops at ' ' and '!' (bytes below 0x23).
func plainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		s := x ^ (ones * '\\')
		if ((x-ones*0x23)|(s-ones)|x)&highs != 0 {
			return i
		}
	}
	return i
}

// SWAR constants: one in every byte, the high bit of every byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain[c] is true for the bytes a string holds as themselves: printable
// ASCII other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escaped[c] is true for the bytes that may follow '\\' other than 'u'.
var escaped = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// hexVal[c] is c's value as a hex digit, or 0xff.
var hexVal = func() (t [256]byte) {
	for c := range t {
		t[c] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

// special has the high bit of each byte of x set that a string cannot hold
// as itself: '"' or '\\' (its q or s is 0), < 0x20, or >= 0x80 (then x's own
// high bit is set, whatever the subtractions leave there); a byte below 0x80
// that is none of these leaves it clear. Borrows only run upwards from such
// a byte, so the lowest set bit marks the first byte to look at.
func special(x uint64) uint64 {
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	return ((q - ones) | (s - ones) | (x - ones*0x20) | x) & highs
}

// keyMatches reports whether the body s of a valid JSON string decodes, as
// encoding/json decodes it (a lone surrogate becomes U+FFFD), to key. It is
// Get's key comparison without allocating.
func keyMatches(s, key []byte) bool {
	var buf [utf8.UTFMax]byte
	j := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			if j >= len(key) || key[j] != c {
				return false
			}
			i, j = i+1, j+1
			continue
		}
		if i+1 >= len(s) {
			return false
		}
		var r rune
		switch e := s[i+1]; e {
		case 'u':
			if r = hex4(s[i+2:]); r < 0 {
				return false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2 = hex4(s[i+2:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
		case 'b':
			r, i = '\b', i+2
		case 'f':
			r, i = '\f', i+2
		case 'n':
			r, i = '\n', i+2
		case 'r':
			r, i = '\r', i+2
		case 't':
			r, i = '\t', i+2
		default:
			r, i = rune(e), i+2
		}
		m := utf8.EncodeRune(buf[:], r)
		if len(key)-j < m || string(key[j:j+m]) != string(buf[:m]) {
			return false
		}
		j += m
	}
	return j == len(key)
}

// hex4 decodes the 4 hex digits at the start of b, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	v := rune(0)
	for _, c := range b[:4] {
		h := hexVal[c]
		if h == 0xff {
			return -1
		}
		v = v<<4 | rune(h)
	}
	return v
}
