package engine

// The engine's boundary, held by its import graph and its syntax.

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// forbidden are the packages the engine may not depend on, directly or
// not: the network, a context (the engine never waits for one), the Kafka
// client, the storage engine, the logger implementation, a database.
var forbidden = []string{"net", "context", "database/sql", "github.com/twmb/franz-go", "github.com/cockroachdb/pebble", "go.uber.org/zap", "github.com/jackc/pgx"}

// noDirect are the standard packages no package of this module that the
// engine reaches may import itself: files, processes, signals, the log. (os
// is in every program through fmt; what counts is that no code of ours
// reaches for it.)
var noDirect = []string{"os", "os/exec", "os/signal", "syscall", "io/ioutil", "log", "log/slog"}

type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// violations lists what of pkgs (go list -deps, root first) breaks the
// rules above.
func violations(pkgs []listed) []string {
	var out []string
	under := func(p, pre string) bool { return p == pre || strings.HasPrefix(p, pre+"/") }
	root := pkgs[0]
	for _, d := range root.Deps {
		if slices.ContainsFunc(forbidden, func(f string) bool { return under(d, f) }) {
			out = append(out, root.ImportPath+" depends on "+d)
		}
	}
	for _, p := range pkgs {
		if p.Standard || !strings.HasPrefix(p.ImportPath, "github.com/signalbox/signalbox") {
			continue
		}
		for _, imp := range p.Imports {
			if slices.Contains(noDirect, imp) {
				out = append(out, p.ImportPath+" imports "+imp)
			}
		}
	}
	return out
}

// TestEngineImports: go list -deps of the engine shows no network, no
// context, no Kafka client, no pebble, no zap, and no package of ours it
// reaches opens a file or logs.
func TestEngineImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports,Deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	// go list -deps prints dependencies first: the engine is last.
	slices.Reverse(pkgs)
	if !strings.HasSuffix(pkgs[0].ImportPath, "/internal/engine") {
		t.Fatalf("go list printed %s last, not the engine", pkgs[0].ImportPath)
	}
	if v := violations(pkgs); len(v) > 0 {
		t.Errorf("the engine's import graph:\n%s", strings.Join(v, "\n"))
	}
}

// TestEngineImportsCatches proves the check can fail.
func TestEngineImportsCatches(t *testing.T) {
	m := "github.com/signalbox/signalbox"
	got := violations([]listed{
		{ImportPath: m + "/internal/engine", Imports: []string{m + "/helper"}, Deps: []string{"context", "fmt", "os", m + "/helper", "github.com/cockroachdb/pebble/v2", "go.uber.org/zap/zapcore"}},
		{ImportPath: m + "/helper", Imports: []string{"os", "fmt"}},
		{ImportPath: "fmt", Standard: true, Imports: []string{"os"}},
	})
	want := []string{
		m + "/internal/engine depends on context",
		m + "/internal/engine depends on github.com/cockroachdb/pebble/v2",
		m + "/internal/engine depends on go.uber.org/zap/zapcore",
		m + "/helper imports os",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// engineFuncs are the functions and methods of the package's non-test
// files.
func engineFuncs(t *testing.T, fset *token.FileSet) []*ast.FuncDecl {
	t.Helper()
	files, _ := filepath.Glob("*.go")
	var fns []*ast.FuncDecl
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				fns = append(fns, fn)
			}
		}
	}
	return fns
}

// TestStepsDoNotBlock (S1): no code of the engine sends, receives or
// selects on a channel, starts a goroutine or reads the wall clock: its
// time is its steps' argument. What it cannot reach (a source, a sink, a
// context) its imports already keep out.
func TestStepsDoNotBlock(t *testing.T) {
	fset := token.NewFileSet()
	fns := engineFuncs(t, fset)
	for _, fn := range fns {
		bad := func(n ast.Node, what string) { t.Errorf("%s: %s %s", fset.Position(n.Pos()), fn.Name.Name, what) }
		ast.Inspect(fn, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SendStmt:
				bad(n, "sends on a channel")
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					bad(n, "receives from a channel")
				}
			case *ast.ChanType:
				bad(n, "names a channel type")
			case *ast.SelectStmt:
				bad(n, "selects")
			case *ast.GoStmt:
				bad(n, "starts a goroutine")
			case *ast.CallExpr:
				if c := types.ExprString(n.Fun); c == "time.Now" || c == "time.Since" || c == "time.Until" || c == "time.Sleep" {
					bad(n, "reads the wall clock")
				}
			}
			return true
		})
	}
	if len(fns) < 60 {
		t.Fatalf("found %d functions in the engine; did it move? (update this test)", len(fns))
	}
}

// TestStepsOnlyWriteEffects (S5): the steps write their effects into fx
// and never read it: a use of c.fx is the left side of an assignment, or
// append's first argument when the append is assigned back to the same
// field. So no step decides on what an earlier one asked for, and writing
// into fx is the same as returning effects. Ready and Advance, the
// driver's side, are exempt.
func TestStepsOnlyWriteEffects(t *testing.T) {
	fset := token.NewFileSet()
	writes := 0
	for _, fn := range engineFuncs(t, fset) {
		if fn.Recv == nil || len(fn.Recv.List[0].Names) == 0 || fn.Name.Name == "Ready" || fn.Name.Name == "Advance" || fn.Name.Name == "Pending" {
			continue
		}
		fx := fn.Recv.List[0].Names[0].Name + ".fx"
		isFx := func(e ast.Expr) bool {
			s := types.ExprString(e)
			return s == fx || strings.HasPrefix(s, fx+".")
		}
		allowed := map[ast.Expr]bool{}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for i, lhs := range as.Lhs {
				if !isFx(lhs) {
					continue
				}
				allowed[lhs] = true
				writes++
				if i >= len(as.Rhs) || len(as.Lhs) != len(as.Rhs) {
					continue
				}
				if call, ok := as.Rhs[i].(*ast.CallExpr); ok && types.ExprString(call.Fun) == "append" &&
					len(call.Args) > 0 && types.ExprString(call.Args[0]) == types.ExprString(lhs) {
					allowed[call.Args[0]] = true
				}
			}
			return true
		})
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			e, ok := n.(*ast.SelectorExpr)
			if !ok || !isFx(e) {
				return true
			}
			if !allowed[e] {
				t.Errorf("%s: %s reads %s: the steps only write their effects", fset.Position(e.Pos()), fn.Name.Name, types.ExprString(e))
			}
			return false
		})
	}
	if writes < 10 {
		t.Fatalf("found %d writes to the effects; did fx move? (update this test)", writes)
	}
}
