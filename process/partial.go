package process

// A map that reads the release only through lookups of keys that do not,
// rendered in two parts (invariant 13 of doc.go, docs/design.md K12):
// as the record is decoded, everything but the lookups, with a hole for
// each lookup and its key (a template); at release, the lookups into the
// holes.

import (
	"encoding/binary"
	"slices"
	"unsafe"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"

	"github.com/signalbox/signalbox/record"
)

// templateMark starts a template, which Early keeps in DecodedValue: not
// a byte a JSON value starts with, nor one of Early's other marks.
const templateMark = 0xEC

// A template, after its mark: literal bytes and holes in turn, each
// literal as its length (a uvarint) and its bytes, each hole as its index
// in Expr.holes plus one (a uvarint) and its key's length and bytes; a 0
// in a hole's place ends it.

// phole is a lookup a template leaves a hole for: its table, and the
// depth its value is rendered at (appendFval).
type phole struct {
	table string
	depth int
}

// ptemplate is a template being made: blob up to the last hole, lit the
// literal bytes since.
type ptemplate struct {
	blob, lit []byte
}

// prender adds to t what it renders of a map's result, holes included;
// false when the fast path gives up.
type prender func(t *ptemplate, a *activation) bool

func (t *ptemplate) start() {
	t.blob, t.lit = append(t.blob[:0], templateMark), t.lit[:0]
}

// flush moves the literal bytes into the blob.
func (t *ptemplate) flush() {
	t.blob = binary.AppendUvarint(t.blob, uint64(len(t.lit)))
	t.blob = append(t.blob, t.lit...)
	t.lit = t.lit[:0]
}

// hole adds hole h, the lookup of key.
func (t *ptemplate) hole(h int, key string) {
	t.flush()
	t.blob = binary.AppendUvarint(t.blob, uint64(h+1))
	t.blob = binary.AppendUvarint(t.blob, uint64(len(key)))
	t.blob = append(t.blob, key...)
}

// end is the finished template.
func (t *ptemplate) end() []byte {
	t.flush()
	t.blob = append(t.blob, 0)
	return t.blob
}

// readsRelease reports whether e reads what is only known at release:
// late, or the as-of time every lookup reads (a comprehension is counted
// as reading it, conservatively).
func readsRelease(e ast.Expr) bool {
	switch e.Kind() {
	case ast.LiteralKind:
		return false
	case ast.IdentKind:
		return e.AsIdent() == "late" || e.AsIdent() == asOfVar
	case ast.SelectKind:
		return readsRelease(e.AsSelect().Operand())
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() && readsRelease(c.Target()) {
			return true
		}
		return slices.ContainsFunc(c.Args(), readsRelease)
	case ast.ListKind:
		return slices.ContainsFunc(e.AsList().Elements(), readsRelease)
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if en.Kind() != ast.MapEntryKind {
				return true
			}
			if me := en.AsMapEntry(); readsRelease(me.Key()) || readsRelease(me.Value()) {
				return true
			}
		}
		return false
	}
	return true
}

// partial compiles e, a map's result, into a template's renderer, its
// lookups' holes added to holes; nil when e is not a fast shape of one:
// an expression that reads nothing of the release (rendered as render
// renders it), a lookup with a literal table name whose key reads nothing
// of it (a hole, or null for a null key, as the lookup renders), or a map
// literal of distinct constant string keys whose values are either.
func (c *fastCompiler) partial(e ast.Expr, depth int, holes *[]phole) prender {
	if depth > maxDepth {
		return nil
	}
	if !readsRelease(e) {
		r := c.render(e, depth)
		if r == nil {
			return nil
		}
		return func(t *ptemplate, a *activation) (ok bool) {
			t.lit, ok = r(t.lit, a)
			return ok
		}
	}
	if e.Kind() == ast.CallKind {
		return c.partialLookup(e.AsCall(), depth, holes)
	}
	if e.Kind() != ast.MapKind {
		return nil
	}
	entries, ok := mapEntries(e, func(v ast.Expr) (prender, bool) {
		p := c.partial(v, depth+1, holes)
		return p, p != nil
	})
	if !ok {
		return nil
	}
	return func(t *ptemplate, a *activation) bool {
		t.lit = append(t.lit, '{')
		for i, en := range entries {
			if i > 0 {
				t.lit = append(t.lit, ',')
			}
			t.lit = append(append(t.lit, en.key...), ':')
			if !en.val(t, a) {
				return false
			}
		}
		t.lit = append(t.lit, '}')
		return true
	}
}

// partialLookup is partial of a lookup: the hole of __lookup(name, key,
// __as_of) for a literal name and a key that reads nothing of the release.
func (c *fastCompiler) partialLookup(call ast.CallExpr, depth int, holes *[]phole) prender {
	args := call.Args()
	if call.FunctionName() != lookupFunc || c.tables == nil || len(args) != 3 || args[0].Kind() != ast.LiteralKind ||
		readsRelease(args[1]) || args[2].Kind() != ast.IdentKind || args[2].AsIdent() != asOfVar {
		return nil
	}
	name, ok := args[0].AsLiteral().(types.String)
	if !ok {
		return nil
	}
	key := c.node(args[1])
	if key == nil {
		return nil
	}
	h := len(*holes)
	*holes = append(*holes, phole{table: string(name), depth: depth})
	return func(t *ptemplate, a *activation) bool {
		kv, ok := key(a)
		if !ok {
			return false
		}
		k, null, ok := fastKey(kv)
		switch {
		case null:
			t.lit = append(t.lit, "null"...) // no version of a null key
			return true
		case !ok:
			return false
		}
		t.hole(h, k)
		return true
	}
}

// template renders x's template over a (Expr.partial), in a's memory;
// nil when the fast path gives up.
func (x *Expr) template(a *activation) []byte {
	if !a.bounded() {
		return nil
	}
	t := &a.tmpl
	t.start()
	if !x.partial(t, a) {
		return nil
	}
	return t.end()
}

// tmplReader reads a template (as template made it) part by part.
type tmplReader struct{ d []byte }

// next is the template's next literal bytes, then the hole after them:
// its index in Expr.holes plus one, and its key; h 0 ends the template.
func (t *tmplReader) next() (lit []byte, h uint64, key []byte) {
	n, k := binary.Uvarint(t.d)
	lit, t.d = t.d[k:k+int(n)], t.d[k+int(n):]
	h, k = binary.Uvarint(t.d)
	if t.d = t.d[k:]; h == 0 {
		return lit, 0, nil
	}
	n, k = binary.Uvarint(t.d)
	key, t.d = t.d[k:k+int(n)], t.d[k+int(n):]
	return lit, h, key
}

// fill appends the result of x's template d for r: its literal bytes, and
// each hole's lookup as the fast path renders it; ok is false when the
// fast path gives up on a lookup, or the result is longer than
// MaxValueBytes (then x must be evaluated anew, as apply would).
func (x *Expr) fill(dst, d []byte, r *record.Record) ([]byte, bool) {
	t := tmplReader{d[1:]} // after the mark
	for {
		lit, h, key := t.next()
		dst = append(dst, lit...)
		switch {
		case h == 0:
			return dst, len(dst) <= MaxValueBytes
		case h > uint64(len(x.holes)):
			return dst, false // another map's template: x runs anew
		}
		ph := &x.holes[h-1]
		v, ok := lookupVal(x.tables, ph.table, unsafe.String(unsafe.SliceData(key), len(key)), r)
		if !ok {
			return dst, false
		}
		if dst, ok = appendFval(dst, v, ph.depth); !ok {
			return dst, false
		}
	}
}

// templateKeys calls fn with each hole's table and key of x's template d.
func (x *Expr) templateKeys(d []byte, fn func(table, key string)) {
	t := tmplReader{d[1:]}
	for {
		_, h, key := t.next()
		if h == 0 || h > uint64(len(x.holes)) {
			return // the end, or another map's template: its keys go unhinted
		}
		fn(x.holes[h-1].table, unsafe.String(unsafe.SliceData(key), len(key)))
	}
}

// isTemplate reports whether d is a template.
func isTemplate(d []byte) bool { return len(d) > 0 && d[0] == templateMark }
