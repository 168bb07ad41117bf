package deploy

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitFile = "systemd/signalbox@.service"

// unitKeys reads a systemd unit file: section → key → every value, in
// order (a key may repeat).
func unitKeys(t *testing.T, b []byte) map[string]map[string][]string {
	t.Helper()
	out, section := map[string]map[string][]string{}, ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value in a section: %q", unitFile, n, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

// TestSystemdUnit checks the keys that a clean stop, the restart policy,
// the state directory and the hardening rest on; then, where systemd's
// tools are installed, `systemd-analyze verify` must print nothing and
// `systemd-analyze security` must rate the exposure 2.0 or below.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	svc := unitKeys(t, b)["Service"]
	for key, want := range map[string]string{
		"KillSignal":               "SIGTERM", // signalbox's graceful stop
		"KillMode":                 "mixed",   // SIGTERM to signalbox alone, SIGKILL to all at the timeout
		"Restart":                  "on-failure",
		"RestartPreventExitStatus": "2", // a configuration error: a restart cannot fix it
		"StateDirectory":           "signalbox/%i",
		"DynamicUser":              "yes",
		"NoNewPrivileges":          "yes",
		"ProtectSystem":            "strict",
		"ProtectHome":              "yes",
		"PrivateTmp":               "yes",
		"CapabilityBoundingSet":    "",
		"RestrictAddressFamilies":  "AF_INET AF_INET6 AF_UNIX",
		"SystemCallArchitectures":  "native",
		"MemoryDenyWriteExecute":   "yes",
		"EnvironmentFile":          "-/etc/signalbox/%i.env",
	} {
		if got := svc[key]; len(got) != 1 || got[0] != want {
			t.Errorf("[Service] %s = %q, want %q", key, got, want)
		}
	}
	exec0 := svc["ExecStart"]
	if len(exec0) != 1 || !strings.Contains(exec0[0], " run -c /etc/signalbox/%i.yaml") {
		t.Fatalf("ExecStart %q: want signalbox run -c /etc/signalbox/%%i.yaml", exec0)
	}
	if got := svc["TimeoutStopSec"]; len(got) != 1 || got[0] == "infinity" || got[0] == "0" {
		t.Errorf("TimeoutStopSec %q: want a bound on the graceful stop", got)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not found: the unit's keys were checked, not verified by systemd")
	}
	// verify wants the command to exist: the test binary stands in.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, _, _ := strings.Cut(exec0[0], " ")
	unit := filepath.Join(t.TempDir(), "signalbox@test.service")
	if err := os.WriteFile(unit, bytes.Replace(b, []byte("ExecStart="+bin), []byte("ExecStart="+self), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(analyze, "security", "--offline=true", "--threshold=20", unit).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}
}
