package process

// The fast path (invariant 7 of doc.go): the common shapes of an
// expression compiled to Go closures over the checked AST, so that
// issue 36's filter and map do not go through cel-go's interpreter.
//
// A closure computes only results it is sure of, with the operations
// cel-go itself runs (the standard library's bindings, types.Equal) or
// their exact native equivalent; everything else (an error of any kind, a
// value the closures do not model) makes it give up (ok == false), and the
// expression is then evaluated by cel-go, which gives the result or the
// error it always gave. A result is never made up on the fast path.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/internal/jsonstr"
)

// fkind is what an fval holds.
type fkind uint8

const (
	fNull fkind = iota + 1
	fBool
	fInt
	fDouble
	fString
	fObject // a JSON object of the record's value: s is its raw bytes
	fRef    // any other CEL value: ref
)

// fval is a value on the fast path, unboxed: most evaluations allocate
// nothing.
type fval struct {
	k   fkind
	i   int64 // fInt; fBool: 1 for true
	f   float64
	s   string // fString: the text; fObject: the raw JSON
	ref ref.Val
}

// fnode evaluates a sub-expression; ok is false when the fast path gives up.
type fnode func(a *activation) (v fval, ok bool)

// frender appends a map's result as JSON (AppendJSON), or gives up.
type frender func(dst []byte, a *activation) ([]byte, bool)

func fbool(b bool) fval {
	if b {
		return fval{k: fBool, i: 1}
	}
	return fval{k: fBool}
}

// val is v as cel-go's value.
func (v fval) val() ref.Val {
	if v.ref != nil { // a literal's, boxed once
		return v.ref
	}
	switch v.k {
	case fNull:
		return types.NullValue
	case fBool:
		return types.Bool(v.i != 0)
	case fInt:
		return types.Int(v.i)
	case fDouble:
		return types.Double(v.f)
	case fString:
		return types.String(v.s)
	case fObject:
		return &jsonObject{raw: unsafe.Slice(unsafe.StringData(v.s), len(v.s))}
	}
	return v.ref
}

// fromVal is cel-go's value v on the fast path; ok is false for an error
// or unknown.
func fromVal(v ref.Val) (fval, bool) {
	switch v := v.(type) {
	case types.Null:
		return fval{k: fNull}, true
	case types.Bool:
		return fbool(bool(v)), true
	case types.Int:
		return fval{k: fInt, i: int64(v)}, true
	case types.Double:
		return fval{k: fDouble, f: float64(v)}, true
	case types.String:
		return fval{k: fString, s: string(v)}, true
	case *types.Err, *types.Unknown:
		return fval{}, false
	}
	return fval{k: fRef, ref: v}, true
}

// appendFval appends v as AppendJSON appends v.val() at depth.
func appendFval(dst []byte, v fval, depth int) ([]byte, bool) {
	var err error
	switch v.k {
	case fNull:
		return append(dst, "null"...), true
	case fBool:
		return strconv.AppendBool(dst, v.i != 0), true
	case fInt:
		return strconv.AppendInt(dst, v.i, 10), true
	case fDouble:
		dst, err = appendFloat(dst, v.f)
	case fString:
		dst, _ = jsonstr.Append(dst, v.s)
	case fObject:
		dst, err = appendRaw(dst, unsafe.Slice(unsafe.StringData(v.s), len(v.s)))
	default:
		dst, err = appendJSON(dst, v.ref, depth)
	}
	return dst, err == nil
}

// fastCompiler compiles a checked AST's shapes to closures; bindings are
// the standard library's implementations of the operators.
type fastCompiler struct {
	bindings map[string]*functions.Overload
	tables   Tables        // lookup's, nil without (lookup.go)
	hints    *[]lookupHint // the lookups compiled, for Expr.hints (with tables)
}

func newFastCompiler(e *cel.Env) *fastCompiler {
	c := &fastCompiler{bindings: map[string]*functions.Overload{}}
	fns := e.Functions()
	for _, op := range []string{operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals,
		operators.Add, operators.Subtract, operators.Multiply, operators.Divide, operators.Modulo, operators.Negate} {
		bs, err := fns[op].Bindings()
		if err != nil {
			continue
		}
		for _, b := range bs {
			if b.Operator == op { // the function's own binding: what every overload of it runs
				c.bindings[op] = b
			}
		}
	}
	return c
}

// render compiles e as a map's result: a map literal of distinct constant
// string keys rendered entry by entry, keys sorted once here, or any node;
// nil when e is not a fast shape.
func (c *fastCompiler) render(e ast.Expr, depth int) frender {
	if depth > maxDepth {
		return nil
	}
	if path := valuePath(e); path != nil {
		return fieldRender(path, depth)
	}
	if e.Kind() != ast.MapKind {
		n := c.node(e)
		if n == nil {
			return nil
		}
		return func(dst []byte, a *activation) ([]byte, bool) {
			v, ok := n(a)
			if !ok {
				return dst, false
			}
			return appendFval(dst, v, depth)
		}
	}
	entries, ok := mapEntries(e, func(v ast.Expr) (frender, bool) {
		r := c.render(v, depth+1)
		return r, r != nil
	})
	if !ok {
		return nil
	}
	return func(dst []byte, a *activation) ([]byte, bool) {
		dst = append(dst, '{')
		for i, en := range entries {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(append(dst, en.key...), ':')
			var ok bool
			if dst, ok = en.val(dst, a); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
}

// mapEntry is an entry of a map literal that a map's result renders: its
// key, quoted and as it is, and its value compiled.
type mapEntry[R any] struct {
	key string // quoted
	k   string
	val R
}

// mapEntries compiles the entries of the map literal e with val, sorted by
// key once here; ok is false when an entry is optional, a key is not a
// constant string or is repeated (cel-go's error), or val gives up on a
// value.
func mapEntries[R any](e ast.Expr, val func(ast.Expr) (R, bool)) ([]mapEntry[R], bool) {
	var entries []mapEntry[R]
	for _, en := range e.AsMap().Entries() {
		if en.Kind() != ast.MapEntryKind || en.AsMapEntry().IsOptional() {
			return nil, false
		}
		me := en.AsMapEntry()
		if me.Key().Kind() != ast.LiteralKind {
			return nil, false
		}
		k, ok := me.Key().AsLiteral().(types.String)
		if !ok {
			return nil, false
		}
		v, ok := val(me.Value())
		if !ok {
			return nil, false
		}
		q, _ := jsonstr.Append(nil, string(k))
		entries = append(entries, mapEntry[R]{string(q), string(k), v})
	}
	slices.SortFunc(entries, func(a, b mapEntry[R]) int { return cmp.Compare(a.k, b.k) })
	for i := 1; i < len(entries); i++ {
		if entries[i].k == entries[i-1].k {
			return nil, false
		}
	}
	return entries, true
}

// node compiles e, or returns nil when e is not a fast shape. The bare
// `value` is not one: the interpreter reads it as one shared object whose
// rendering changes once it is measured or compared, which a closure
// would not reproduce; its fields are.
func (c *fastCompiler) node(e ast.Expr) fnode {
	g := c.generic(e)
	if g == nil {
		return nil
	}
	if sp := c.special(e, g); sp != nil {
		return sp
	}
	return g
}

// generic compiles e to closures over fvals, or returns nil.
func (c *fastCompiler) generic(e ast.Expr) fnode {
	switch e.Kind() {
	case ast.LiteralKind:
		v, ok := fromVal(e.AsLiteral())
		if !ok || v.k == fRef {
			return nil
		}
		v.ref = e.AsLiteral()
		return func(*activation) (fval, bool) { return v, true }
	case ast.IdentKind:
		return identNode(e.AsIdent())
	case ast.SelectKind:
		if path := valuePath(e); path != nil {
			return fieldNode(path)
		}
		return nil
	case ast.CallKind:
		return c.call(e.AsCall())
	}
	return nil
}

// valuePath is the path of e when e is value.<path> (no has()), else nil.
func valuePath(e ast.Expr) jsonfield.Path {
	var path jsonfield.Path
	for e.Kind() == ast.SelectKind {
		s := e.AsSelect()
		if s.IsTestOnly() {
			return nil
		}
		path = append(jsonfield.Path{[]byte(s.FieldName())}, path...)
		e = s.Operand()
	}
	if path == nil || e.Kind() != ast.IdentKind || e.AsIdent() != "value" {
		return nil
	}
	return path
}

func identNode(name string) fnode {
	switch name {
	case "topic":
		return func(a *activation) (fval, bool) { return fval{k: fString, s: a.rec.Topic}, true }
	case "partition":
		return func(a *activation) (fval, bool) { return fval{k: fInt, i: int64(a.rec.Partition)}, true }
	case "offset":
		return func(a *activation) (fval, bool) { return fval{k: fInt, i: a.rec.Offset}, true }
	case "late":
		return func(a *activation) (fval, bool) { return fbool(a.rec.Late), true }
	case "key":
		return func(a *activation) (fval, bool) {
			k, ok := keyText(a.rec)
			return fval{k: fString, s: k}, ok
		}
	}
	return nil
}

// fieldNode reads value.<path>: what jsonObject.Find reads, field by
// field; the top-level field from the members scanned once per record.
func fieldNode(path jsonfield.Path) fnode {
	raw := fieldRaw(path)
	return func(a *activation) (fval, bool) {
		v, ok := raw(a)
		if !ok {
			return fval{}, false
		}
		return rawFval(v)
	}
}

// fieldRaw reads value.<path> unconverted; ok is false when it is missing
// or the value is no object (the interpreter's error, or has()).
func fieldRaw(path jsonfield.Path) func(a *activation) (jsonfield.Value, bool) {
	key, rest := string(path[0]), path[1:]
	return func(a *activation) (jsonfield.Value, bool) {
		v, err := a.member(key)
		if err == nil && len(rest) > 0 {
			v, err = jsonfield.Get(v.Raw, rest)
		}
		return v, err == nil
	}
}

// rawFval converts a field as fieldValue does, or gives up.
func rawFval(v jsonfield.Value) (fval, bool) {
	switch v.Kind {
	case jsonfield.String:
		inner := v.Raw[1 : len(v.Raw)-1]
		if !plainASCII(inner) && (bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner)) {
			return fval{}, false // Text unescapes or replaces
		}
		return fval{k: fString, s: unsafe.String(unsafe.SliceData(inner), len(inner))}, true
	case jsonfield.Number:
		f, ok := parseNumber(v.Raw)
		return fval{k: fDouble, f: f}, ok
	case jsonfield.Bool:
		return fbool(v.Raw[0] == 't'), true
	case jsonfield.Null:
		return fval{k: fNull}, true
	case jsonfield.Object:
		return fval{k: fObject, s: unsafe.String(unsafe.SliceData(v.Raw), len(v.Raw))}, true
	}
	return fval{}, false // an array is converted whole: the interpreter's
}

// fieldRender renders value.<path> in a map's result: a string of plain
// ASCII (no escape in it, none needed: what jsonstr.Append copies as it is)
// is copied from the value with its quotes, and a plain integer (plainInt)
// as it is, without converting them.
func fieldRender(path jsonfield.Path, depth int) frender {
	raw := fieldRaw(path)
	return func(dst []byte, a *activation) ([]byte, bool) {
		v, ok := raw(a)
		if !ok {
			return dst, false
		}
		if v.Kind == jsonfield.String && plainASCII(v.Raw[1:len(v.Raw)-1]) ||
			v.Kind == jsonfield.Number && plainInt(v.Raw) {
			return append(dst, v.Raw...), true
		}
		fv, ok := rawFval(v)
		if !ok {
			return dst, false
		}
		return appendFval(dst, fv, depth)
	}
}

// plainInt reports whether a JSON number is -?(0|[1-9]d*) of at most
// maxExactDigits digits: it reads as a double that appendFloat writes as
// those same bytes (-0 as -0).
func plainInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > maxExactDigits || b[0] == '0' && len(b) > 1 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainASCII reports whether the body of a JSON string (with no control
// byte and no unescaped quote: a scanned one) is all ASCII without a
// backslash: then it reads as itself, and jsonstr.Append writes it back
// unchanged.
func plainASCII(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (((x^ones*'\\')-ones)|x)&highs != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf || b[i] == '\\' {
			return false
		}
	}
	return true
}

func (c *fastCompiler) args(call ast.CallExpr, n int) []fnode {
	if call.IsMemberFunction() || len(call.Args()) != n {
		return nil
	}
	ns := make([]fnode, n)
	for i, a := range call.Args() {
		if ns[i] = c.node(a); ns[i] == nil {
			return nil
		}
	}
	return ns
}

func (c *fastCompiler) call(call ast.CallExpr) fnode {
	fn := call.FunctionName()
	switch fn {
	case lookupFunc:
		return c.lookup(call)
	case operators.LogicalNot:
		x := c.args(call, 1)
		if x == nil {
			return nil
		}
		return func(a *activation) (fval, bool) {
			v, ok := x[0](a)
			return fbool(v.i == 0), ok && v.k == fBool
		}
	case operators.LogicalAnd, operators.LogicalOr:
		x := c.args(call, 2)
		if x == nil {
			return nil
		}
		short := int64(0) // && stops at false, || at true
		if fn == operators.LogicalOr {
			short = 1
		}
		return func(a *activation) (fval, bool) {
			l, ok := x[0](a)
			if !ok || l.k != fBool {
				return fval{}, false
			}
			if l.i == short {
				return l, true
			}
			r, ok := x[1](a)
			return r, ok && r.k == fBool
		}
	case operators.Conditional:
		x := c.args(call, 3)
		if x == nil {
			return nil
		}
		return func(a *activation) (fval, bool) {
			cond, ok := x[0](a)
			if !ok || cond.k != fBool {
				return fval{}, false
			}
			if cond.i != 0 {
				return x[1](a)
			}
			return x[2](a)
		}
	case operators.Equals, operators.NotEquals:
		x := c.args(call, 2)
		if x == nil {
			return nil
		}
		ne := fn == operators.NotEquals
		return func(a *activation) (fval, bool) {
			l, r, ok := both(x, a)
			if !ok {
				return fval{}, false
			}
			eq, ok := equal(l, r)
			return fbool(eq != ne), ok
		}
	case operators.Negate:
		x := c.args(call, 1)
		b := c.bindings[fn]
		if x == nil || b == nil || b.Unary == nil {
			return nil
		}
		return func(a *activation) (fval, bool) {
			v, ok := x[0](a)
			if !ok {
				return fval{}, false
			}
			if v.k == fDouble {
				return fval{k: fDouble, f: -v.f}, true
			}
			lv := v.val()
			if b.OperandTrait != 0 && !lv.Type().HasTrait(b.OperandTrait) {
				return fval{}, false
			}
			return fromVal(b.Unary(lv))
		}
	}
	b := c.bindings[fn]
	if b == nil || b.Binary == nil {
		return nil
	}
	x := c.args(call, 2)
	if x == nil {
		return nil
	}
	native := nativeBinary(fn)
	return func(a *activation) (fval, bool) {
		l, r, ok := both(x, a)
		if !ok {
			return fval{}, false
		}
		if native != nil {
			if v, done := native(l, r); done {
				return v, true
			}
		}
		if l.k == fObject || r.k == fObject {
			return fval{}, false // as in equal
		}
		lv, rv := l.val(), r.val()
		if b.OperandTrait != 0 && !lv.Type().HasTrait(b.OperandTrait) {
			return fval{}, false
		}
		return fromVal(b.Binary(lv, rv))
	}
}

// both evaluates a binary operator's operands, left first.
func both(x []fnode, a *activation) (l, r fval, ok bool) {
	if l, ok = x[0](a); ok {
		r, ok = x[1](a)
	}
	return l, r, ok
}

// equal is types.Equal(l.val(), r.val()), natively for two values of one
// scalar kind. An object gives up: cel-go's cost tracker measures an
// operand of == (converting an object whole, which may fail).
func equal(l, r fval) (eq, ok bool) {
	if l.k == fObject || r.k == fObject {
		return false, false
	}
	if l.k == r.k {
		switch l.k {
		case fNull:
			return true, true
		case fBool, fInt:
			return l.i == r.i, true
		case fDouble:
			return l.f == r.f, true // NaN equals nothing, as Double.Equal
		case fString:
			return l.s == r.s, true
		}
	}
	b, ok := types.Equal(l.val(), r.val()).(types.Bool)
	return bool(b), ok
}

// doubleArith is the standard library's binding of the arithmetic
// operator op for two doubles (IEEE, no error), nil for another op.
func doubleArith(op string) func(x, y float64) float64 {
	switch op {
	case operators.Add:
		return func(x, y float64) float64 { return x + y }
	case operators.Subtract:
		return func(x, y float64) float64 { return x - y }
	case operators.Multiply:
		return func(x, y float64) float64 { return x * y }
	case operators.Divide:
		return func(x, y float64) float64 { return x / y }
	}
	return nil
}

// nativeBinary is the standard library's binding of op for two doubles,
// two ints (comparisons only) or two strings (comparisons only), done
// natively; done is false for any other operands.
func nativeBinary(op string) func(l, r fval) (v fval, done bool) {
	arith := doubleArith(op)
	var rel func(c int) bool
	switch op {
	case operators.Add, operators.Subtract, operators.Multiply, operators.Divide:
	case operators.Less:
		rel = func(c int) bool { return c < 0 }
	case operators.LessEquals:
		rel = func(c int) bool { return c <= 0 }
	case operators.Greater:
		rel = func(c int) bool { return c > 0 }
	case operators.GreaterEquals:
		rel = func(c int) bool { return c >= 0 }
	default:
		return nil
	}
	return func(l, r fval) (fval, bool) {
		if l.k != r.k {
			return fval{}, false
		}
		if arith != nil {
			if l.k != fDouble {
				return fval{}, false
			}
			return fval{k: fDouble, f: arith(l.f, r.f)}, true
		}
		switch l.k {
		case fDouble:
			if l.f != l.f || r.f != r.f {
				return fbool(false), true // the relations' binding: NaN is false
			}
			return fbool(rel(cmp.Compare(l.f, r.f))), true
		case fInt:
			return fbool(rel(cmp.Compare(l.i, r.i))), true
		case fString:
			return fbool(rel(cmp.Compare(l.s, r.s))), true
		}
		return fval{}, false
	}
}

// special compiles the commonest shapes of e more directly than generic
// (g): arithmetic and comparisons of doubles read from the value's
// numbers (fnum), and a field compared with a string literal on its raw
// bytes. Each computes only what g would compute, and calls g for
// anything else (a field of another type, a string with escapes), so
// that g decides; nil when e is none of these shapes.
func (c *fastCompiler) special(e ast.Expr, g fnode) fnode {
	if e.Kind() != ast.CallKind {
		return nil
	}
	call := e.AsCall()
	if n := c.num(e); n != nil {
		return func(a *activation) (fval, bool) {
			if f, ok := n(a); ok {
				return fval{k: fDouble, f: f}, true
			}
			return g(a)
		}
	}
	args := call.Args()
	if call.IsMemberFunction() || len(args) != 2 {
		return nil
	}
	fn := call.FunctionName()
	if l, r, rel := c.num(args[0]), c.num(args[1]), relation(fn); l != nil && r != nil && rel != nil {
		return func(a *activation) (fval, bool) {
			if x, ok := l(a); ok {
				if y, ok := r(a); ok {
					return fbool(rel(x, y)), true
				}
			}
			return g(a)
		}
	}
	if fn != operators.Equals && fn != operators.NotEquals {
		return nil
	}
	lit, path := args[1], valuePath(args[0])
	if path == nil {
		lit, path = args[0], valuePath(args[1])
	}
	ls, ok := literalString(lit)
	if path == nil || !ok {
		return nil
	}
	raw, ne := fieldRaw(path), fn == operators.NotEquals
	plain := !strings.Contains(ls, `\`) // then bytes equal to ls read as ls
	return func(a *activation) (fval, bool) {
		if v, ok := raw(a); ok && v.Kind == jsonfield.String {
			inner := v.Raw[1 : len(v.Raw)-1]
			if plain && string(inner) == ls { // ls is valid UTF-8, so is inner, and it has no escape
				return fbool(!ne), true
			}
			if plainASCII(inner) {
				return fbool(ne), true // it reads as itself, and is not ls
			}
		}
		return g(a)
	}
}

// literalString is e's value when e is a string literal.
func literalString(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// relation is the standard library's relation op on two doubles that are
// not NaN; with a NaN every relation is false, as its binding returns.
func relation(op string) func(x, y float64) bool {
	switch op {
	case operators.Less:
		return func(x, y float64) bool { return x < y }
	case operators.LessEquals:
		return func(x, y float64) bool { return x <= y }
	case operators.Greater:
		return func(x, y float64) bool { return x > y }
	case operators.GreaterEquals:
		return func(x, y float64) bool { return x >= y }
	case operators.Equals:
		return func(x, y float64) bool { return x == y }
	case operators.NotEquals:
		return func(x, y float64) bool { return x != y }
	}
	return nil
}

// fnum evaluates a sub-expression whose value is a double; ok is false
// when it is not one (then the generic node decides).
type fnum func(a *activation) (float64, bool)

// num compiles e as a double: a double literal, a field of the value
// that is a JSON number, or + - * / of two of these (the standard
// library's double arithmetic: IEEE, no error); nil for any other shape.
// An int literal is not one: int and double do not mix in arithmetic.
func (c *fastCompiler) num(e ast.Expr) fnum {
	switch e.Kind() {
	case ast.LiteralKind:
		d, ok := e.AsLiteral().(types.Double)
		if !ok {
			return nil
		}
		return func(*activation) (float64, bool) { return float64(d), true }
	case ast.SelectKind:
		path := valuePath(e)
		if path == nil {
			return nil
		}
		raw := fieldRaw(path)
		return func(a *activation) (float64, bool) {
			v, ok := raw(a)
			if !ok || v.Kind != jsonfield.Number {
				return 0, false
			}
			return parseNumber(v.Raw)
		}
	case ast.CallKind:
		call := e.AsCall()
		args := call.Args()
		if call.IsMemberFunction() || len(args) != 2 {
			return nil
		}
		op := doubleArith(call.FunctionName())
		l, r := c.num(args[0]), c.num(args[1])
		if op == nil || l == nil || r == nil {
			return nil
		}
		return func(a *activation) (float64, bool) {
			x, ok := l(a)
			if !ok {
				return 0, false
			}
			y, ok := r(a)
			return op(x, y), ok
		}
	}
	return nil
}
