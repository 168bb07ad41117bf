package report

import "testing"

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
