package process

// The environment every expression compiles against, and Compile.

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// Bounds. An expression's estimated cost (CEL's cost model, with every
// value, key and header, and every string and list in a value, at most
// MaxInputBytes long) must be at most MaxEstimatedCost, or Compile refuses
// it: the estimate multiplies, so one comprehension over a value's list
// passes and two nested ones do not. Each evaluation stops with an error
// once its actual cost passes MaxCost; a map's result may render to at
// most MaxValueBytes of JSON.
const (
	MaxInputBytes    = 4 << 20
	MaxEstimatedCost = 1e14
	MaxCost          = 10_000_000
	MaxValueBytes    = 4 << 20
)

// Kind is what an expression is for: a Filter or Where must have type
// bool; a Map's result becomes the record's value.
type Kind uint8

// The kinds.
const (
	Filter Kind = iota + 1
	Map
	Where
)

func (k Kind) String() string {
	switch k {
	case Filter:
		return "filter"
	case Map:
		return "map"
	case Where:
		return "where"
	}
	return "kind(" + fmt.Sprint(uint8(k)) + ")"
}

// The variables, in the order Activation resolves them.
var variables = []cel.EnvOption{
	cel.Variable("value", cel.DynType),
	cel.Variable("key", cel.StringType),
	cel.Variable("key_bytes", cel.BytesType),
	cel.Variable("headers", cel.MapType(cel.StringType, cel.BytesType)),
	cel.Variable("topic", cel.StringType),
	cel.Variable("partition", cel.IntType),
	cel.Variable("offset", cel.IntType),
	cel.Variable("event_time", cel.TimestampType),
	cel.Variable("kafka_timestamp", cel.TimestampType),
	cel.Variable("late", cel.BoolType),
}

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// Env returns the environment: the variables of doc.go, CEL's standard
// library, and the strings, math and encoders extensions.
func Env() (*cel.Env, error) {
	envOnce.Do(func() {
		opts := append([]cel.EnvOption{
			cel.CrossTypeNumericComparisons(true),
			ext.Strings(), ext.Math(), ext.Encoders(),
		}, variables...)
		env, envErr = cel.NewEnv(opts...)
	})
	return env, envErr
}

// CompileError is an expression that does not compile: its name (the job
// file's path to it), the line and column inside the expression (1-based),
// and CEL's message. Compile returns every error of an expression, joined.
type CompileError struct {
	Name   string
	Line   int
	Column int
	Msg    string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("%s: line %d, column %d: %s", e.Name, e.Line, e.Column, e.Msg)
}

// Expr is a compiled expression. It is safe for concurrent use.
type Expr struct {
	name string
	src  string
	kind Kind
	prg  cel.Program
	cost uint64 // the estimated maximum cost

	// The fast path (fast.go), nil when the expression is not a fast shape
	// or its estimated cost is above MaxCost (the fast path tracks no
	// cost): fast for a filter or where, render for a map.
	fast   fnode
	render frender

	release bool // it reads late or a table (NeedsRelease)

	// hints are the fast path's lookups, whose keys Hints reads ahead;
	// hinter is their tables' Hinter, nil when they have none.
	hints  []lookupHint
	hinter Hinter

	// partial renders a map that reads the release only through lookups
	// of keys that do not as a template with a hole for each of them
	// (partial.go), nil otherwise; holes are the lookups, tables theirs.
	partial prender
	holes   []phole
	tables  Tables
}

// Compile compiles src, named name (the job file's path to it, e.g.
// "process.filter"), as an expression of kind k. Its errors are
// *CompileError: a syntax error, an unknown variable or function, a type
// that does not fit the kind, or an estimated cost above MaxEstimatedCost.
//
// lookup(name, key) is available WithTables; without, it is refused (with
// NoLookup's reason, if given).
func Compile(name, src string, k Kind, opts ...Option) (*Expr, error) {
	base, err := Env()
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	e, err := lookupEnv(base, o)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(src) == "" {
		return nil, &CompileError{Name: name, Line: 1, Column: 1, Msg: "empty expression"}
	}
	ast, iss := e.Compile(src)
	if iss != nil && iss.Err() != nil {
		var errs []error
		for _, ce := range iss.Errors() {
			errs = append(errs, &CompileError{Name: name, Line: ce.Location.Line(), Column: ce.Location.Column() + 1, Msg: ce.Message})
		}
		return nil, errors.Join(errs...)
	}
	if t := ast.OutputType(); k != Map && t != types.BoolType && t != types.DynType {
		return nil, &CompileError{Name: name, Line: 1, Column: 1, Msg: fmt.Sprintf("a %s must be a bool, not %s", k, t)}
	}
	est, err := e.EstimateCost(ast, estimator{})
	if err != nil {
		return nil, &CompileError{Name: name, Line: 1, Column: 1, Msg: "cost: " + err.Error()}
	}
	if est.Max > MaxEstimatedCost {
		return nil, &CompileError{Name: name, Line: 1, Column: 1, Msg: fmt.Sprintf(
			"its cost cannot be bounded: estimated up to %d, more than %d, on values up to %d bytes (nested comprehensions?)", est.Max, uint64(MaxEstimatedCost), MaxInputBytes)}
	}
	prg, err := e.Program(ast, cel.CostLimit(MaxCost), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, &CompileError{Name: name, Line: 1, Column: 1, Msg: err.Error()}
	}
	x := &Expr{name: name, src: src, kind: k, prg: prg, cost: est.Max}
	for _, r := range ast.NativeRep().ReferenceMap() {
		if r.Name == "late" || r.Name == asOfVar { // a comprehension's variable of that name too: conservative
			x.release = true
		}
	}
	if est.Max <= MaxCost {
		c := fastCompilerOf(base)
		if o.tables != nil {
			cc := *c
			cc.tables, cc.hints = o.tables, &x.hints
			c = &cc
			x.hinter, _ = o.tables.(Hinter)
		}
		if k == Map {
			x.render = c.render(ast.NativeRep().Expr(), 0)
			if x.render != nil && x.release && o.tables != nil {
				var holes []phole
				if p := c.partial(ast.NativeRep().Expr(), 0, &holes); p != nil && len(holes) > 0 {
					x.partial, x.holes, x.tables = p, holes, o.tables
				}
			}
		} else {
			x.fast = c.node(ast.NativeRep().Expr())
		}
		if x.fast == nil && x.render == nil {
			x.hints = nil // compiled into closures that never run
		}
	}
	return x, nil
}

var (
	fastOnce sync.Once
	fastComp *fastCompiler
)

func fastCompilerOf(e *cel.Env) *fastCompiler {
	fastOnce.Do(func() { fastComp = newFastCompiler(e) })
	return fastComp
}

// NeedsRelease reports whether x reads what is only known once the record
// is released: late, or a table through lookup (the versions up to the
// record's event time are all there only then). Otherwise x computes the
// same from a decoded record before it is parked as at its release, for
// a value that is JSON as it arrives (a schema'd value is rendered into
// record.Record.DecodedValue at release): issue 36's "a filter may run
// before parking when it reads nothing that changes at release".
func (x *Expr) NeedsRelease() bool { return x.release }

// Name is the expression's name, as given to Compile.
func (x *Expr) Name() string { return x.name }

// Kind is the expression's kind.
func (x *Expr) Kind() Kind { return x.kind }

// EstimatedCost is the estimated maximum cost of one evaluation.
func (x *Expr) EstimatedCost() uint64 { return x.cost }

// eval evaluates x over the activation.
func (x *Expr) eval(a interpreter.Activation) (v any, err error) {
	out, _, err := x.prg.Eval(a)
	if err != nil {
		return nil, x.fail(err)
	}
	return out, nil
}

// Error is an evaluation that failed: the expression's name and CEL's
// message (a missing key read without has(), a type mismatch, a division
// by zero, the cost limit, a map result that is no JSON).
type Error struct {
	Expr string
	Err  error
}

func (e *Error) Error() string { return e.Expr + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func (x *Expr) fail(err error) error { return &Error{Expr: x.name, Err: err} }
