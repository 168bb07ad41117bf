package signalbox_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/signalbox/signalbox"

// cores are the pure state machines (docs/design.md, the module layout in
// README.md): they take events and a clock as inputs and do no I/O.
var cores = []string{module + "/watermark", module + "/timers", module + "/catchup"}

// coreThirdParty is the only module outside the standard library a core may
// import.
var coreThirdParty = []string{"github.com/google/btree"}

// ioStd are the standard-library packages through which a package reaches
// files, the network, processes or a log. A core importing one of them is
// doing I/O. (The wall clock, time.Now, cannot be seen in an import; the
// cores take time as an argument, which their transcripts and property tests
// hold.)
var ioStd = []string{"os", "os/exec", "os/signal", "net", "syscall", "io/ioutil", "log", "log/slog", "database/sql"}

// adapters are the folders whose packages the root package (the library)
// must not depend on, directly or through another package: the adapters
// depend on the library, never the reverse. timers/durable is the storage
// engine's adapter: the root reaches it only through the interfaces it owns
// (ParkedStore, DurableStore, ParkCopier); so are keyed/durable (a window's
// state, through keyed.Store) and tables (a table may live in pebble:
// through TableStore).
var adapters = []string{"sources", "sinks", "bench", "cmd", "config", "formats", "timers/durable", "keyed/durable", "process", "tables"}

// adapterExempt are packages under adapters that the root may import: the
// types its decoder hook names (ValueDecoder), stdlib-only.
var adapterExempt = []string{"formats/value"}

// knownViolations are the edges that break the rules today and are being
// removed. An entry that no longer matches a violation fails the test: delete
// it once its move is merged.
var knownViolations = map[string]string{}

type listedPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// listPackages runs `go list -deps -json` on the module and returns every
// package it depends on, by import path.
func listPackages(t *testing.T) map[string]*listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports,Deps", "./...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		p := new(listedPackage)
		if err := dec.Decode(p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

func inModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// isIOStd reports whether path is in ioStd or under net/.
func isIOStd(path string) bool {
	return slices.Contains(ioStd, path) || path == "net" || strings.HasPrefix(path, "net/")
}

// underAdapters reports whether the module package path lies in one of the
// adapters folders.
func underAdapters(path string) bool {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return false
	}
	if slices.Contains(adapterExempt, rel) {
		return false
	}
	return slices.ContainsFunc(adapters, func(a string) bool { return rel == a || strings.HasPrefix(rel, a+"/") })
}

// coreViolations lists the edges of the cores' import graph that break the
// purity rule. Every module package a core reaches is held to the same rule,
// so a core cannot do I/O through a helper package.
func coreViolations(pkgs map[string]*listedPackage) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(path string)
	visit = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		p := pkgs[path]
		if p == nil {
			return
		}
		for _, imp := range p.Imports {
			dep := pkgs[imp]
			switch {
			case dep != nil && dep.Standard:
				if isIOStd(imp) {
					out = append(out, path+" -> "+imp)
				}
			case inModule(imp):
				if underAdapters(imp) || imp == module {
					out = append(out, path+" -> "+imp)
					continue
				}
				visit(imp)
			case !slices.ContainsFunc(coreThirdParty, func(m string) bool { return imp == m || strings.HasPrefix(imp, m+"/") }):
				out = append(out, path+" -> "+imp)
			}
		}
	}
	for _, c := range cores {
		visit(c)
	}
	return out
}

// rootViolations lists the adapter packages the root package depends on,
// directly or not.
func rootViolations(pkgs map[string]*listedPackage) []string {
	var out []string
	for _, d := range pkgs[module].Deps {
		if underAdapters(d) {
			out = append(out, module+" -> "+d)
		}
	}
	return out
}

// TestImportGraph holds the module layout of README.md: the cores import no
// I/O package and no adapter, and the library (the root package) depends on
// nothing under sources/, sinks/, bench/, cmd/, config/, formats/ (but
// formats/value) or timers/durable/, so it links no storage engine.
func TestImportGraph(t *testing.T) {
	pkgs := listPackages(t)
	for _, c := range append(cores, module) {
		if pkgs[c] == nil {
			t.Fatalf("go list did not report %s", c)
		}
	}
	found := map[string]bool{}
	for _, v := range append(coreViolations(pkgs), rootViolations(pkgs)...) {
		found[v] = true
		if _, known := knownViolations[v]; !known {
			t.Errorf("forbidden import: %s", v)
		}
	}
	for v, issue := range knownViolations {
		if !found[v] {
			t.Errorf("knownViolations lists %q (%s), which no longer occurs: delete the entry", v, issue)
		}
	}
}

// TestImportGraphCatches proves the checks can fail: a made-up graph with a
// core importing net/http through a helper, a core importing pebble, the root
// reaching sinks/ through a helper, and the root reaching timers/durable (but
// not timersx, which only shares its prefix).
func TestImportGraphCatches(t *testing.T) {
	pkgs := map[string]*listedPackage{
		module:                    {ImportPath: module, Imports: []string{module + "/watermark"}, Deps: []string{module + "/watermark", module + "/helper", module + "/sinks/x", module + "/timers/durable", module + "/timersx"}},
		module + "/watermark":     {ImportPath: module + "/watermark", Imports: []string{"time", module + "/helper"}},
		module + "/helper":        {ImportPath: module + "/helper", Imports: []string{"net/http", module + "/sinks/x"}},
		module + "/timers":        {ImportPath: module + "/timers", Imports: []string{"github.com/google/btree", "github.com/cockroachdb/pebble/v2"}},
		module + "/catchup":       {ImportPath: module + "/catchup", Imports: []string{"sort"}},
		module + "/sinks/x":       {ImportPath: module + "/sinks/x"},
		"time":                    {ImportPath: "time", Standard: true},
		"sort":                    {ImportPath: "sort", Standard: true},
		"net/http":                {ImportPath: "net/http", Standard: true},
		"github.com/google/btree": {ImportPath: "github.com/google/btree"},
	}
	got := append(coreViolations(pkgs), rootViolations(pkgs)...)
	slices.Sort(got)
	want := []string{
		module + " -> " + module + "/sinks/x",
		module + " -> " + module + "/timers/durable",
		module + "/helper -> " + module + "/sinks/x",
		module + "/helper -> net/http",
		module + "/timers -> github.com/cockroachdb/pebble/v2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
