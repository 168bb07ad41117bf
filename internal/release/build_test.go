package release

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// The values the tests give goreleaser's templates and the Dockerfile's
// build arguments: a build must print them back.
const (
	testVersion = "9.8.7-test"
	testCommit  = "0123456789abcdef"
)

// root is the repository's top directory.
const root = "../.."

// goreleaser is the part of .goreleaser.yaml the tests read.
type goreleaser struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		Formats []string `yaml:"formats"`
		Files   []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Sboms []struct {
		Artifacts string `yaml:"artifacts"`
	} `yaml:"sboms"`
}

func readGoreleaser(t *testing.T) goreleaser {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var g goreleaser
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(g.Builds) != 1 {
		t.Fatalf(".goreleaser.yaml: %d builds, want the one of ./cmd/signalbox", len(g.Builds))
	}
	return g
}

// target is one GOOS/GOARCH of the release.
type target struct{ goos, goarch string }

func (tg target) String() string { return tg.goos + "/" + tg.goarch }

func (g goreleaser) targets() []target {
	var ts []target
	for _, os := range g.Builds[0].Goos {
		for _, arch := range g.Builds[0].Goarch {
			ts = append(ts, target{os, arch})
		}
	}
	return ts
}

// ldflags expands the build's ldflags templates with testVersion and
// testCommit; any other template field fails the test, so a field added
// to .goreleaser.yaml must be added here too.
func (g goreleaser) ldflags(t *testing.T) string {
	t.Helper()
	var out []string
	for _, f := range g.Builds[0].Ldflags {
		tpl, err := template.New("ldflags").Option("missingkey=error").Parse(f)
		if err != nil {
			t.Fatalf(".goreleaser.yaml ldflags %q: %v", f, err)
		}
		var b bytes.Buffer
		if err := tpl.Execute(&b, map[string]string{"Version": testVersion, "Commit": testCommit}); err != nil {
			t.Fatalf(".goreleaser.yaml ldflags %q: %v", f, err)
		}
		out = append(out, b.String())
	}
	return strings.Join(out, " ")
}

// builds caches one binary per target for the test binary's lifetime: the
// release test and the image test share the host's linux build.
var builds struct {
	sync.Mutex
	dir  string
	done map[target]string
	errs map[target]error
}

// build cross-builds the release binary for tg exactly as .goreleaser.yaml
// says (its env, flags and ldflags), once per test run.
func build(t *testing.T, g goreleaser, tg target) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	if p, ok := builds.done[tg]; ok {
		return p
	}
	if err, ok := builds.errs[tg]; ok {
		t.Fatal(err)
	}
	if builds.dir == "" {
		d, err := os.MkdirTemp("", "signalbox-release-")
		if err != nil {
			t.Fatal(err)
		}
		builds.dir, builds.done, builds.errs = d, map[target]string{}, map[target]error{}
	}
	b := g.Builds[0]
	out := filepath.Join(builds.dir, tg.goos+"_"+tg.goarch, b.Binary)
	args := append([]string{"build"}, b.Flags...)
	args = append(args, "-ldflags="+g.ldflags(t), "-o", out, b.Main)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = buildEnv(os.Environ(), append(b.Env, "GOOS="+tg.goos, "GOARCH="+tg.goarch)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		builds.errs[tg] = fmt.Errorf("GOOS=%s GOARCH=%s go %s: %v\n%s", tg.goos, tg.goarch, strings.Join(args, " "), err, msg)
		t.Fatal(builds.errs[tg])
	}
	builds.done[tg] = out
	return out
}

// buildEnv is the environment of a release build: environ (the test's
// own, so the module cache, GOCACHE and GOPROXY carry over) with -race
// dropped from GOFLAGS, then extra. `go test -race` does not pass -race to
// the processes a test starts (their environment holds no GOFLAGS of its
// making), but a GOFLAGS=-race in the environment would: the release is
// built without the race detector. Each build is a compile of the module
// and the standard library from scratch in a fresh clone (-trimpath,
// CGO_ENABLED=0 and the target share no cache with the tests' builds),
// which is why the tests build two targets, not all.
func buildEnv(environ []string, extra ...string) []string {
	env := make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			kv = "GOFLAGS=" + strings.Join(slices.DeleteFunc(strings.Fields(v), isRaceFlag), " ")
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// isRaceFlag reports whether a go command flag is -race (or --race, with
// a value or none).
func isRaceFlag(f string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
	return strings.HasPrefix(f, "-") && name == "race"
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}
