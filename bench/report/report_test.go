package report

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestSplice(t *testing.T) {
	const b, e = "<!-- x:begin -->", "<!-- x:end -->"
	doc := "# T\n\nnotes before\n" + b + "\nold\n" + e + "\nnotes after\n"
	got := Splice(doc, b, e, "new\n")
	if want := "# T\n\nnotes before\n" + b + "\nnew\n" + e + "\nnotes after\n"; got != want {
		t.Fatalf("replace:\n%s\nwant:\n%s", got, want)
	}
	if got, want := Splice("# T", b, e, "s\n"), "# T\n\n"+b+"\ns\n"+e+"\n"; got != want {
		t.Fatalf("append:\n%q\nwant:\n%q", got, want)
	}
	if got, want := Splice("", b, e, "s\n"), "# Benchmarks\n\n"+b+"\ns\n"+e+"\n"; got != want {
		t.Fatalf("new doc:\n%q\nwant:\n%q", got, want)
	}
}

func TestMiB(t *testing.T) {
	for b, want := range map[int64]string{0: "n/a", 2048: "2 KiB", 3 << 20: "3 MiB"} {
		if got := MiB(b); got != want {
			t.Errorf("MiB(%d) = %q, want %q", b, got, want)
		}
	}
}

// TestResultsAndChart: results written are read back, their chart sits
// beside them, and CheckChart fails once the chart or the data change.
func TestResultsAndChart(t *testing.T) {
	type res struct{ N int }
	draw := func(r res) []byte { return []byte(fmt.Sprintf("<svg>%d</svg>\n", r.N)) }
	path := filepath.Join(t.TempDir(), "x.json")
	if err := WriteResults(path, res{N: 3}, draw); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadResults[res](path); err != nil || r.N != 3 {
		t.Fatalf("read back %+v, %v", r, err)
	}
	if err := CheckChart(path, draw); err != nil {
		t.Fatalf("a chart just drawn: %v", err)
	}
	if err := os.WriteFile(SVGPath(path), []byte("<svg>4</svg>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckChart(path, draw); err == nil {
		t.Fatal("a chart edited by hand passes CheckChart")
	}
	if err := Replot(path, draw); err != nil || CheckChart(path, draw) != nil {
		t.Fatalf("Replot did not redraw the chart: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"N": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckChart(path, draw); err == nil {
		t.Fatal("a chart whose data changed passes CheckChart")
	}
}
