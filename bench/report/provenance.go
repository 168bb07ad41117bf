package report

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Provenance is where a set of results comes from: printed on every chart
// drawn from them, so a reader can tell what ran, where and when.
type Provenance struct {
	Command string `json:"command"`
	Cores   int    `json:"cores"`
	CPU     string `json:"cpu"`    // model name; "" when not recorded
	Go      string `json:"go"`     // Go version
	Date    string `json:"date"`   // start of the run, "2006-01-02 15:04 UTC"
	Commit  string `json:"commit"` // git commit of the source, "-dirty" with local changes; "" when not recorded
	// Note says how the results got into the file when a person, not
	// the command, put them there (figures transcribed from a table).
	Note string `json:"note,omitempty"`
}

// Here is the provenance of a run of command on this machine, started at
// started, from the source in the current directory.
func Here(command string, started time.Time) Provenance {
	return Provenance{Command: command, Cores: runtime.NumCPU(), CPU: cpuModel(), Go: runtime.Version(),
		Date: started.UTC().Format("2006-01-02 15:04 MST"), Commit: commit()}
}

// Caption is the provenance as lines for a chart: the command, then the
// machine, date and commit, then the note.
func (p Provenance) Caption() []string {
	cpu, c, gov := p.CPU, p.Commit, p.Go
	if cpu == "" {
		cpu = "CPU model not recorded"
	}
	if gov == "" {
		gov = "Go version not recorded"
	}
	if c == "" {
		c = "not recorded"
	}
	lines := []string{p.Command, strconv.Itoa(p.Cores) + " cores, " + cpu + " · " + gov + " · " + p.Date + " · commit " + c}
	if p.Note != "" {
		lines = append(lines, p.Note)
	}
	return lines
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// commit is the short hash of git's HEAD, with "-dirty" when tracked files
// differ from it, or "" outside a git work tree.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "-dirty"
	}
	return c
}
