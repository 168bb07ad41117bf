package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v0.2.0-rc.1"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	devel := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}}
	for _, c := range []struct {
		name                string
		linkVer, linkCommit string
		bi                  *debug.BuildInfo
		want                Info
	}{
		{"build info only", "", "", bi, Info{"0.2.0-rc.1", "abc123+dirty", "go1.99.1"}},
		{"linker wins", "v1.2.3", "def456", bi, Info{"1.2.3", "def456", "go1.99.1"}},
		{"linker version, vcs commit", "1.2.3", "", bi, Info{"1.2.3", "abc123+dirty", "go1.99.1"}},
		{"nothing known", "", "", devel, Info{"devel", "unknown", "go1.99.1"}},
	} {
		if got := resolve(c.linkVer, c.linkCommit, c.bi); got != c.want {
			t.Errorf("%s: resolve = %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := resolve("", "", nil); got.Version != "devel" || got.Commit != "unknown" || !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("without build info: %+v", got)
	}
}

func TestGetNeverEmpty(t *testing.T) {
	in := Get()
	if in.Version == "" || in.Commit == "" || in.GoVersion == "" {
		t.Fatalf("Get() = %+v: a field is empty", in)
	}
	s := in.String()
	for _, want := range []string{"signalbox " + in.Version, "commit: " + in.Commit, "go: " + in.GoVersion} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, missing %q", s, want)
		}
	}
}
