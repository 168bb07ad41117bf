package release

import (
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// versionSymbols are the -X flags internal/version reads.
var versionSymbols = []string{
	"github.com/signalbox/signalbox/internal/version.commit",
	"github.com/signalbox/signalbox/internal/version.version",
}

var xFlag = regexp.MustCompile(`-X[ =]([^ =]+)=`)

// xSymbols lists the symbols ldflags sets with -X, sorted.
func xSymbols(ldflags string) []string {
	var syms []string
	for _, m := range xFlag.FindAllStringSubmatch(ldflags, -1) {
		syms = append(syms, m[1])
	}
	slices.Sort(syms)
	return syms
}

// TestGoreleaserConfig checks .goreleaser.yaml has what a release needs:
// linux and darwin on amd64 and arm64, static trimmed builds stamped with
// the version, archives carrying files that exist, sha256 checksums and an
// SBOM.
func TestGoreleaserConfig(t *testing.T) {
	g := readGoreleaser(t)
	if g.Version != 2 {
		t.Errorf("version: %d, want 2 (goreleaser v2's format)", g.Version)
	}
	b := g.Builds[0]
	if b.Main != "./cmd/signalbox" || b.Binary != "signalbox" {
		t.Errorf("builds[0]: main %q binary %q, want ./cmd/signalbox and signalbox", b.Main, b.Binary)
	}
	var got []string
	for _, tg := range g.targets() {
		got = append(got, tg.String())
	}
	slices.Sort(got)
	if want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}; !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("builds[0].env %v lacks CGO_ENABLED=0: the binary must be static for the scratch-based image", b.Env)
	}
	if !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("builds[0].flags %v lacks -trimpath", b.Flags)
	}
	if syms := xSymbols(g.ldflags(t)); !slices.Equal(syms, versionSymbols) {
		t.Errorf("builds[0].ldflags set %v with -X, want %v", syms, versionSymbols)
	}
	if len(g.Archives) == 0 {
		t.Fatal("no archives")
	}
	for _, f := range g.Archives[0].Files {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("archives[0].files: %v", err)
		}
	}
	if g.Checksum.NameTemplate == "" || g.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v, want a name and sha256", g.Checksum)
	}
	if len(g.Sboms) == 0 || g.Sboms[0].Artifacts != "archive" {
		t.Errorf("sboms %+v, want one for the archives", g.Sboms)
	}
}

// allTargetsEnv, set to 1, makes TestReleaseTargetsBuild build every
// release target instead of the host's and one other.
const allTargetsEnv = "SIGNALBOX_RELEASE_ALL_TARGETS"

// TestReleaseTargetsBuild checks every target of .goreleaser.yaml is a
// GOOS/GOARCH pair the Go toolchain supports (`go tool dist list`;
// TestDependencyLicences also lists each one's build graph), then builds
// ./cmd/signalbox with the release's env, flags and ldflags for the
// host's target and one cross-compiled target (builtTargets; every target
// with SIGNALBOX_RELEASE_ALL_TARGETS=1): one cross build proves the flags
// cross-compile, and each more costs a full compile of the module for
// nothing in CI. It checks each binary's format and architecture, that it
// is static, and its build settings (the target, CGO_ENABLED=0, -trimpath,
// no race detector), and runs the host's `version`.
func TestReleaseTargetsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds the binary for two release targets")
	}
	g := readGoreleaser(t)
	out, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		t.Fatalf("go tool dist list: %v", err)
	}
	supported := strings.Fields(string(out))
	for _, tg := range g.targets() {
		if !slices.Contains(supported, tg.String()) {
			t.Errorf(".goreleaser.yaml: %s is not a GOOS/GOARCH pair of go tool dist list", tg)
		}
	}
	host := target{runtime.GOOS, runtime.GOARCH}
	ran := false
	for _, tg := range builtTargets(g.targets(), host, os.Getenv(allTargetsEnv) == "1") {
		bin := build(t, g, tg)
		checkFormat(t, bin, tg)
		checkBuildSettings(t, bin, tg)
		if tg == host {
			out, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s version: %v\n%s", bin, err, out)
			}
			checkVersionOutput(t, string(out))
			ran = true
		}
	}
	if !ran {
		t.Logf("no release target is %s: no binary was run", host)
	}
}

// builtTargets are the targets TestReleaseTargetsBuild builds: all of
// them, or host (when it is one) and one other, the first that differs
// from host in both GOOS and GOARCH if any does (from linux/amd64,
// darwin/arm64), else the first that differs at all.
func builtTargets(targets []target, host target, all bool) []target {
	if all {
		return targets
	}
	var out []target
	if slices.Contains(targets, host) {
		out = append(out, host)
	}
	other := -1
	for i, tg := range targets {
		switch {
		case tg.goos != host.goos && tg.goarch != host.goarch:
			return append(out, tg)
		case tg != host && other < 0:
			other = i
		}
	}
	if other >= 0 {
		out = append(out, targets[other])
	}
	return out
}

// checkBuildSettings checks the build settings recorded in bin: built for
// tg, without cgo, with -trimpath, without the race detector.
func checkBuildSettings(t *testing.T, bin string, tg target) {
	t.Helper()
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("%s: %v", tg, err)
	}
	got := map[string]string{}
	for _, s := range info.Settings {
		got[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": tg.goos, "GOARCH": tg.goarch, "CGO_ENABLED": "0", "-trimpath": "true", "-race": ""} {
		if got[k] != want {
			t.Errorf("%s: build setting %s=%q, want %q", tg, k, got[k], want)
		}
	}
}

// checkVersionOutput checks `signalbox version` printed the version and
// commit the build was stamped with.
func checkVersionOutput(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{"signalbox " + testVersion + "\n", "commit: " + testCommit + "\n", "go: go"} {
		if !strings.Contains(out, want) {
			t.Errorf("signalbox version printed %q, missing %q", out, want)
		}
	}
}

func checkFormat(t *testing.T, bin string, tg target) {
	t.Helper()
	switch tg.goos {
	case "linux":
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: %v", tg, err)
		}
		defer f.Close()
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[tg.goarch]
		if f.Machine != want {
			t.Errorf("%s: ELF machine %v, want %v", tg, f.Machine, want)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked (has an interpreter); a scratch image cannot run it", tg)
			}
		}
	case "darwin":
		f, err := macho.Open(bin)
		if err != nil {
			t.Fatalf("%s: %v", tg, err)
		}
		defer f.Close()
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[tg.goarch]
		if f.Cpu != want {
			t.Errorf("%s: Mach-O CPU %v, want %v", tg, f.Cpu, want)
		}
	default:
		t.Errorf("%s: no format check for %s", tg, tg.goos)
	}
}

// TestBuiltTargets: by default the release test builds the host's target
// and one cross-compiled target that differs from it in both GOOS and
// GOARCH when one does; with SIGNALBOX_RELEASE_ALL_TARGETS=1 every target.
func TestBuiltTargets(t *testing.T) {
	la, ld := target{"linux", "amd64"}, target{"linux", "arm64"}
	da, dd := target{"darwin", "amd64"}, target{"darwin", "arm64"}
	all := []target{la, ld, da, dd}
	for _, c := range []struct {
		name    string
		targets []target
		host    target
		all     bool
		want    []target
	}{
		{"linux/amd64 host", all, la, false, []target{la, dd}},
		{"darwin/arm64 host", all, dd, false, []target{dd, la}},
		{"every target", all, la, true, all},
		{"host not a target", all, target{"windows", "amd64"}, false, []target{ld}},
		{"only the OS differs", []target{la, da}, la, false, []target{la, da}},
		{"only the host", []target{la}, la, false, []target{la}},
	} {
		if got := builtTargets(c.targets, c.host, c.all); !slices.Equal(got, c.want) {
			t.Errorf("%s: builtTargets = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestBuildEnvDropsRace: a release build does not inherit -race from a
// GOFLAGS in the test's environment, keeps GOFLAGS' other flags and the
// rest of the environment, and gets the release's own variables after it.
func TestBuildEnvDropsRace(t *testing.T) {
	got := buildEnv([]string{"HOME=/h", "GOFLAGS=-race -mod=mod --race=true -trimpath", "GOCACHE=/c"}, "CGO_ENABLED=0", "GOOS=darwin")
	want := []string{"HOME=/h", "GOFLAGS=-mod=mod -trimpath", "GOCACHE=/c", "CGO_ENABLED=0", "GOOS=darwin"}
	if !slices.Equal(got, want) {
		t.Errorf("buildEnv = %q, want %q", got, want)
	}
	if got := buildEnv([]string{"GOFLAGS=-racer"}); !slices.Equal(got, []string{"GOFLAGS=-racer"}) {
		t.Errorf("buildEnv dropped a flag that is not -race: %q", got)
	}
}
