package release

import (
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

// TestReleaseTargetsBuild cross-builds ./cmd/signalbox for every target of
// .goreleaser.yaml with its flags, checks each binary's format and
// architecture and that it is static, and runs the host's `version`.
func TestReleaseTargetsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds the binary for every release target")
	}
	g := readGoreleaser(t)
	ran := false
	for _, tg := range g.targets() {
		bin := build(t, g, tg)
		checkFormat(t, bin, tg)
		if tg.goos == runtime.GOOS && tg.goarch == runtime.GOARCH {
			out, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s version: %v\n%s", bin, err, out)
			}
			checkVersionOutput(t, string(out))
			ran = true
		}
	}
	if !ran {
		t.Logf("no release target is %s/%s: no binary was run", runtime.GOOS, runtime.GOARCH)
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
