package process

// lookup(name, key): the version of a table's key as of the record's
// event time (doc.go invariant 8).

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Tables is what lookup reads: package tables' Set implements it. Lookup
// returns the JSON value of key in the table named table as of asOf
// (milliseconds since the epoch): found is false when there is no version
// at or before asOf, or a tombstone there; an unknown table is an error.
// Names are the tables' names, to check a literal name at compile time.
type Tables interface {
	Lookup(table, key string, asOf int64) (value []byte, found bool, err error)
	Names() []string
}

// Option is an option of Compile.
type Option func(*options)

type options struct {
	tables   Tables
	noLookup string // why lookup is refused, when tables is nil
}

// WithTables lets the expression call lookup(name, key) on t.
func WithTables(t Tables) Option { return func(o *options) { o.tables = t } }

// NoLookup says why lookup is refused in this expression (e.g. it runs
// before the gate, at ingest), for the compile error.
func NoLookup(why string) Option { return func(o *options) { o.noLookup = why } }

// The hidden names lookup expands to: lookup(n, k) is
// lookupFunc(n, k, asOfVar), asOfVar the record's event time in ms
// (math.MaxInt64 for a `time: none` record: the latest version).
const (
	lookupFunc = "__lookup"
	asOfVar    = "__as_of"
)

// lookupEnv is e with lookup: the macro, and, with tables, the hidden
// variable and the function bound to them.
func lookupEnv(e *cel.Env, o options) (*cel.Env, error) {
	if o.tables == nil {
		why := o.noLookup
		if why == "" {
			why = "no tables are declared (tables:)"
		}
		return e.Extend(cel.Macros(cel.GlobalMacro("lookup", 2,
			func(eh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *common.Error) {
				return nil, eh.NewError(args[0].ID(), "lookup: "+why)
			})))
	}
	t := o.tables
	names := t.Names()
	return e.Extend(
		cel.Variable(asOfVar, cel.IntType),
		cel.Macros(cel.GlobalMacro("lookup", 2,
			func(eh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *common.Error) {
				if args[0].Kind() == ast.LiteralKind {
					if s, ok := args[0].AsLiteral().(types.String); ok && !slices.Contains(names, string(s)) {
						return nil, eh.NewError(args[0].ID(), "lookup: no table "+strconv.Quote(string(s))+" (tables: "+strings.Join(names, ", ")+")")
					}
				}
				return eh.NewCall(lookupFunc, args[0], args[1], eh.NewIdent(asOfVar)), nil
			})),
		cel.Function(lookupFunc, cel.Overload("__lookup_string_dyn_int",
			[]*cel.Type{cel.StringType, cel.DynType, cel.IntType}, cel.DynType,
			cel.FunctionBinding(func(args ...ref.Val) ref.Val {
				name, _ := args[0].(types.String)
				if args[1] == types.NullValue {
					return types.NullValue // no version of a null key
				}
				key, err := lookupKey(args[1])
				if err != nil {
					return types.NewErr("lookup(%q): %v", string(name), err)
				}
				v, found, err := t.Lookup(string(name), key, int64(args[2].(types.Int)))
				if err != nil {
					return types.NewErr("%v", err)
				}
				if !found {
					return types.NullValue
				}
				return jsonValue(v)
			}))),
	)
}

// lookupKey is a lookup's key as the table keys it: a string as is, an
// integral number in decimal (a JSON number reads as a double); null
// finds nothing.
func lookupKey(v ref.Val) (string, error) {
	switch k := v.(type) {
	case types.String:
		return string(k), nil
	case types.Int:
		return strconv.FormatInt(int64(k), 10), nil
	case types.Uint:
		return strconv.FormatUint(uint64(k), 10), nil
	case types.Double:
		f := float64(k)
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return strconv.FormatInt(int64(f), 10), nil
		}
		return "", errBadKey(v)
	}
	return "", errBadKey(v)
}

type badKeyError struct{ t string }

func (e badKeyError) Error() string {
	return "the key must be a string or an integral number, not " + e.t
}

func errBadKey(v ref.Val) error {
	return badKeyError{v.Type().TypeName()}
}

// lookup compiles __lookup(name, key, __as_of) for the fast path (doc.go
// invariant 7): a literal name and a fast key; the value as
// jsonValue(value) is on the interpreter's path. It gives up where the
// interpreter would fail (a key of another type, an unknown table) or
// would convert a value the fast path does not hold.
func (c *fastCompiler) lookup(call ast.CallExpr) fnode {
	args := call.Args()
	if c.tables == nil || len(args) != 3 || args[0].Kind() != ast.LiteralKind {
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
	t := c.tables
	return func(a *activation) (fval, bool) {
		kv, ok := key(a)
		if !ok {
			return fval{}, false
		}
		var k string
		switch kv.k {
		case fNull:
			return fval{k: fNull}, true
		case fString:
			k = kv.s
		case fInt:
			k = strconv.FormatInt(kv.i, 10)
		case fDouble:
			if kv.f != math.Trunc(kv.f) || math.Abs(kv.f) >= 1<<53 {
				return fval{}, false
			}
			k = strconv.FormatInt(int64(kv.f), 10)
		default:
			return fval{}, false
		}
		asOf := a.rec.EventTime
		if a.rec.Timeless {
			asOf = math.MaxInt64
		}
		v, found, err := t.Lookup(string(name), k, asOf)
		switch {
		case err != nil:
			return fval{}, false
		case !found:
			return fval{k: fNull}, true
		case isObject(v):
			return fval{k: fObject, s: unsafe.String(unsafe.SliceData(v), len(v))}, true
		}
		return fromVal(convertDoc(v))
	}
}
