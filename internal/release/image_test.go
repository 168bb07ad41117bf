package release

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// dockerfile is what the image test reads from the Dockerfile: the final
// stage's base, labels, user, entrypoint, command and copied binary, and
// the build stage's go build command.
type dockerfile struct {
	from       string
	args       map[string]string // the final stage's ARG defaults
	labels     map[string]string // as written, ${VAR} unexpanded
	user       string
	entrypoint []string
	cmd        []string
	binary     string // COPY --from=build's destination in the image
	goBuild    string // the RUN line that runs go build
}

var labelPair = regexp.MustCompile(`([^\s=]+)=("(?:[^"\\]|\\.)*"|\S+)`)

func parseDockerfile(t *testing.T, text string) dockerfile {
	t.Helper()
	var d dockerfile
	var lines []string
	var cont string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if cont == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cont += s + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			base, _, _ := strings.Cut(rest, " ")
			d = dockerfile{from: base, args: map[string]string{}, labels: map[string]string{}, goBuild: d.goBuild}
		case "ARG":
			k, v, _ := strings.Cut(rest, "=")
			d.args[k] = v
		case "LABEL":
			for _, m := range labelPair.FindAllStringSubmatch(rest, -1) {
				v := m[2]
				if strings.HasPrefix(v, `"`) {
					var err error
					if v, err = strconv.Unquote(v); err != nil {
						t.Fatalf("Dockerfile LABEL %s: %v", m[0], err)
					}
				}
				d.labels[m[1]] = v
			}
		case "USER":
			d.user = rest
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				t.Fatalf("Dockerfile %s %s: not the exec (JSON) form: %v", instr, rest, err)
			}
			if strings.ToUpper(instr) == "CMD" {
				d.cmd = v
			} else {
				d.entrypoint = v
			}
		case "COPY":
			if f := strings.Fields(rest); len(f) == 3 && strings.HasPrefix(f[0], "--from=") {
				d.binary = f[2]
			}
		case "RUN":
			if strings.Contains(rest, "go build") {
				d.goBuild = rest
			}
		}
	}
	return d
}

// expand substitutes the build arguments into a final-stage value, as
// `docker build --build-arg` would; an undeclared variable fails the test.
func (d dockerfile) expand(t *testing.T, s string, buildArgs map[string]string) string {
	t.Helper()
	return os.Expand(s, func(k string) string {
		if v, ok := buildArgs[k]; ok {
			if _, declared := d.args[k]; declared {
				return v
			}
		}
		v, ok := d.args[k]
		if !ok {
			t.Errorf("Dockerfile uses $%s, which the final stage does not declare with ARG", k)
		}
		return v
	})
}

// TestDockerfile checks the Dockerfile's recipe without building it: a
// static trimmed build stamped with the version, a distroless or scratch
// base, a numeric non-root user, an exec-form entrypoint that is the binary,
// and the version as an OCI label.
func TestDockerfile(t *testing.T) {
	d := readDockerfile(t)
	if !strings.HasPrefix(d.from, "gcr.io/distroless/static") && d.from != "scratch" {
		t.Errorf("final stage FROM %s: want scratch or gcr.io/distroless/static", d.from)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/signalbox"} {
		if !strings.Contains(d.goBuild, want) {
			t.Errorf("the go build line %q lacks %s", d.goBuild, want)
		}
	}
	if syms := xSymbols(d.goBuild); !slices.Equal(syms, versionSymbols) {
		t.Errorf("the go build line sets %v with -X, want %v", syms, versionSymbols)
	}
	if uid, err := nonRootUID(d.user); err != nil {
		t.Error(err)
	} else if uid == 0 {
		t.Errorf("USER %q is root", d.user)
	}
	if len(d.entrypoint) == 0 || d.entrypoint[0] != d.binary {
		t.Errorf("ENTRYPOINT %q does not run the copied binary %q", d.entrypoint, d.binary)
	}
	if got := d.expand(t, d.labels["org.opencontainers.image.version"], map[string]string{"VERSION": testVersion}); got != testVersion {
		t.Errorf("label org.opencontainers.image.version = %q with VERSION=%s", got, testVersion)
	}
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return parseDockerfile(t, string(b))
}

// nonRootUID parses USER's uid; a name is refused: a scratch image has no
// /etc/passwd, and Kubernetes' runAsNonRoot can only verify a number.
func nonRootUID(user string) (int, error) {
	u, _, _ := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		return 0, fmt.Errorf("USER %q: want a numeric uid (uid:gid)", user)
	}
	return uid, nil
}

// TestImage builds the image the Dockerfile describes without a Docker
// daemon: the release binary for linux on this machine's architecture, in
// one layer on an empty (scratch) base, with the Dockerfile's entrypoint,
// command, user and labels; writes it as an OCI layout; then reads the
// layout back, checks the configuration, extracts the entrypoint from the
// layers and runs its `version`.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	d := readDockerfile(t)
	g := readGoreleaser(t)
	bin := build(t, g, target{"linux", runtime.GOARCH})
	args := map[string]string{"VERSION": testVersion, "COMMIT": testCommit}

	dir := t.TempDir()
	writeImage(t, dir, d, bin, args)

	img := readImage(t, dir)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(c.Entrypoint, d.entrypoint) || !slices.Equal(c.Cmd, d.cmd) {
		t.Errorf("entrypoint %q cmd %q, want %q %q", c.Entrypoint, c.Cmd, d.entrypoint, d.cmd)
	}
	if uid, err := nonRootUID(c.User); err != nil || uid == 0 {
		t.Errorf("image user %q: want a non-root numeric uid (%v)", c.User, err)
	}
	if v := c.Labels["org.opencontainers.image.version"]; v != testVersion {
		t.Errorf("label org.opencontainers.image.version = %q, want %q", v, testVersion)
	}
	if v := c.Labels["org.opencontainers.image.revision"]; v != testCommit {
		t.Errorf("label org.opencontainers.image.revision = %q, want %q", v, testCommit)
	}

	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		t.Fatalf("image layers: %d, %v", len(layers), err)
	}
	for _, l := range layers {
		if mt, err := l.MediaType(); err != nil || mt != types.OCILayer {
			t.Errorf("layer media type %q (%v), want %q", mt, err, types.OCILayer)
		}
	}

	exe := extract(t, img, c.Entrypoint[0])
	if runtime.GOOS != "linux" {
		t.Skipf("the image's binary is for linux; this is %s", runtime.GOOS)
	}
	out, err := exec.Command(exe, append(c.Entrypoint[1:], "version")...).CombinedOutput()
	if err != nil {
		t.Fatalf("the image's entrypoint `version`: %v\n%s", err, out)
	}
	checkVersionOutput(t, string(out))
}

// writeImage writes the image of d with bin at d.binary to an OCI layout
// in dir.
func writeImage(t *testing.T, dir string, d dockerfile, bin string, buildArgs map[string]string) {
	t.Helper()
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	parts := strings.Split(strings.Trim(d.binary, "/"), "/")
	for i := 1; i < len(parts); i++ {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(parts[:i], "/") + "/", Mode: 0o755}) //nolint:errcheck // checked by Close
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.Join(parts, "/"), Mode: 0o755, Size: int64(len(exe))}) //nolint:errcheck // checked by Close
	tw.Write(exe)                                                                                                          //nolint:errcheck // checked by Close
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.User = d.entrypoint, d.cmd, d.user
	cf.Config.Labels = map[string]string{}
	for k, v := range d.labels {
		cf.Config.Labels[k] = d.expand(t, v, buildArgs)
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(mutate.ConfigMediaType(img, types.OCIConfigJSON)); err != nil {
		t.Fatal(err)
	}
}

// readImage reads the one image of the OCI layout in dir.
func readImage(t *testing.T, dir string) v1.Image {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].MediaType != types.OCIManifestSchema1 {
		t.Fatalf("the layout's index holds %+v, want one OCI image manifest", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// extract writes the file at name in img's flattened layers to a temporary
// file and returns its path; the file must be executable in the image.
func extract(t *testing.T, img v1.Image, name string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	want := strings.TrimPrefix(path.Clean(name), "/")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("the image has no %s", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(path.Clean(h.Name), "/") != want {
			continue
		}
		if h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
			t.Fatalf("%s in the image: type %c mode %o, want an executable file", name, h.Typeflag, h.Mode)
		}
		out := filepath.Join(t.TempDir(), path.Base(want))
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
}
