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

	"github.com/signalbox/signalbox/internal/prefetch"
	"github.com/signalbox/signalbox/record"
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
	hinted := 0
	if c.hints != nil {
		hinted = len(*c.hints)
	}
	key := c.node(args[1])
	if key == nil {
		return nil
	}
	// a key that looks a table up itself is not hinted: reading it would
	// be a lookup, counted (tables.Table.Beyond)
	if c.hints != nil && len(*c.hints) == hinted {
		*c.hints = append(*c.hints, lookupHint{table: string(name), key: key})
	}
	t := c.tables
	return func(a *activation) (fval, bool) {
		kv, ok := key(a)
		if !ok {
			return fval{}, false
		}
		k, null, ok := fastKey(kv)
		switch {
		case null:
			return fval{k: fNull}, true
		case !ok:
			return fval{}, false
		}
		return lookupVal(t, string(name), k, a.rec)
	}
}

// lookupVal is the fast path's value of key k in table name as of r's
// event time; ok is false when it gives up.
func lookupVal(t Tables, name, k string, r *record.Record) (fval, bool) {
	asOf := r.EventTime
	if r.Timeless {
		asOf = math.MaxInt64
	}
	v, found, err := t.Lookup(name, k, asOf)
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

// fastKey is the fast path's lookup key of kv, as lookupKey reads it;
// null says it is null (no version); ok false: the fast path gives up.
func fastKey(kv fval) (k string, null, ok bool) {
	switch kv.k {
	case fNull:
		return "", true, false
	case fString:
		return kv.s, false, true
	case fInt:
		return strconv.FormatInt(kv.i, 10), false, true
	case fDouble:
		if kv.f != math.Trunc(kv.f) || math.Abs(kv.f) >= 1<<53 {
			return "", false, false
		}
		return strconv.FormatInt(int64(kv.f), 10), false, true
	}
	return "", false, false
}

// Hinter is what a Tables may also do (package tables' Set does): ask
// the CPU for the memory a Lookup of key in table will read, in two
// steps (tables.Table.HintKey, then HintValue with its hash), so that
// the lookups of many records wait for memory together. Hints change
// nothing; they run while no version is put.
type Hinter interface {
	HintKey(table, key string) (h uint64)
	HintValue(table string, h uint64)
}

// lookupHint is a lookup the fast path compiled: its table and its key.
type lookupHint struct {
	table string
	key   fnode
}

// maxHinted is how many lookups one call of a Hints function hints at
// (those after are not).
const maxHinted = 256

// Hints returns what asks, for a block of records the steps are about to
// run on, for the memory of their lookups (Hinter): it evaluates each
// lookup's key on each record, as given, and hints at its table's slot,
// then, once all are asked for, at the keys' bytes. So the lookups' cache
// misses come together, ahead of the evaluation, rather than one after
// the other in it. A key that cannot be read is skipped; nothing is
// changed. It is safe to call from several goroutines at once, and nil
// when the steps look nothing up on the fast path of a Hinter.
func Hints(steps ...Steps) func(recs []*record.Record) {
	var xs []*Expr
	for _, s := range steps {
		for _, x := range []*Expr{s.Filter, s.Map} {
			if x != nil && len(x.hints) > 0 && x.hinter != nil {
				xs = append(xs, x)
			}
		}
	}
	if len(xs) == 0 {
		return nil
	}
	// tx is the map whose templates (invariant 13) the records may hold,
	// when exactly one of the steps makes them: their keys are read there
	// (with more, a template's keys go unhinted)
	var tx *Expr
	for _, x := range xs {
		if x.partial != nil && tx != nil {
			tx = nil
			break
		}
		if x.partial != nil {
			tx = x
		}
	}
	return func(recs []*record.Record) {
		var hs [maxHinted]struct {
			hinter Hinter
			table  string
			h      uint64
		}
		for _, r := range recs { // the records and their values too, together
			prefetch.Record(r)
		}
		for _, r := range recs {
			prefetch.Bytes(Doc(r))
		}
		n := 0
		hint := func(hinter Hinter, table, k string) {
			if n < maxHinted {
				hs[n].hinter, hs[n].table, hs[n].h = hinter, table, hinter.HintKey(table, k)
				n++
			}
		}
		a := pool.Get().(*activation) // cleared
		for _, r := range recs {
			if tx != nil && isTemplate(r.DecodedValue) {
				tx.templateKeys(r.DecodedValue, func(table, k string) { hint(tx.hinter, table, k) })
				continue
			}
			a.start(r)
			for _, x := range xs {
				for _, l := range x.hints {
					kv, ok := l.key(a)
					if !ok {
						continue
					}
					if k, _, ok := fastKey(kv); ok {
						hint(x.hinter, l.table, k)
					}
				}
			}
			a.clear()
		}
		pool.Put(a)
		for _, h := range hs[:n] {
			h.hinter.HintValue(h.table, h.h)
		}
	}
}
