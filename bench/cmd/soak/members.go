package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// member is one incarnation of a `signalbox run` process.
type member struct {
	name    string
	run     int
	cmd     *exec.Cmd
	log     string
	admin   chan string // the admin server's base URL, once logged
	adminAt string
	done    chan struct{}
	stopped bool // stopped by the soak: its exit is expected
}

// members starts, stops and watches the job's processes; a member that
// exits while not stopped by the soak is reported and restarted.
type members struct {
	bin, dir string
	jobs     map[string]string // job file per member name
	start    time.Time
	events   *eventLog
	// heapEvery > 0 passes --heapprofile to every member run.
	heapEvery time.Duration

	mu       sync.Mutex
	live     map[string]*member
	runs     map[string]int
	closing  bool
	restarts sync.WaitGroup
}

func newMembers(bin string, jobs map[string]string, dir string, start time.Time, ev *eventLog) *members {
	return &members{bin: bin, jobs: jobs, dir: dir, start: start, events: ev, live: map[string]*member{}, runs: map[string]int{}}
}

// up starts member name unless it runs already.
func (ms *members) up(name string) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.live[name] != nil || ms.closing {
		return nil
	}
	run := ms.runs[name]
	ms.runs[name]++
	m := &member{name: name, run: run, admin: make(chan string, 1), done: make(chan struct{}),
		log: filepath.Join(ms.dir, fmt.Sprintf("member-%s-%02d.log", name, run))}
	logf, err := os.Create(m.log)
	if err != nil {
		return err
	}
	m.cmd = exec.Command(ms.bin, "run", "-c", ms.jobs[name], "--log-format", "json", "--admin-addr", "127.0.0.1:0")
	if ms.heapEvery > 0 {
		m.cmd.Args = append(m.cmd.Args, "--heapprofile", filepath.Join(ms.dir, fmt.Sprintf("heap-%s-%02d", name, run)),
			"--heapprofile-every", ms.heapEvery.String())
	}
	m.cmd.Stdout = logf
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := m.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	ms.live[name] = m
	ms.events.add("start", fmt.Sprintf("member %s run %d, pid %d", name, run, m.cmd.Process.Pid))
	go func() {
		scanLog(stderr, logf, m.admin)
		err := m.cmd.Wait()
		logf.Close()
		ms.exited(m, err)
	}()
	return nil
}

// scanLog copies the member's log to w and sends the admin server's URL on
// admin when it is logged.
func scanLog(r io.Reader, w io.Writer, admin chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Bytes()
		w.Write(line)         //nolint:errcheck // best effort log copy
		w.Write([]byte{'\n'}) //nolint:errcheck // best effort log copy
		if !sent && bytes.Contains(line, []byte("admin server listening")) {
			var l struct{ URL string }
			if json.Unmarshal(line, &l) == nil && l.URL != "" {
				admin <- l.URL
				sent = true
			}
		}
	}
	io.Copy(io.Discard, r) //nolint:errcheck // drain a line too long to scan
}

// exited records a member's exit; one the soak did not ask for is reported
// and the member restarted.
func (ms *members) exited(m *member, err error) {
	defer close(m.done) // after the event: a waiter sees it logged
	status := "exit 0"
	if err != nil {
		status = err.Error()
	}
	ms.mu.Lock()
	if ms.live[m.name] == m {
		delete(ms.live, m.name)
	}
	expected, restart := m.stopped, !m.stopped && !ms.closing
	if restart {
		ms.restarts.Add(1) // under mu: closeAll waits for it
	}
	ms.mu.Unlock()
	if expected {
		ms.events.add("exit", fmt.Sprintf("member %s run %d: %s", m.name, m.run, status))
		return
	}
	lastLine := tail(m.log, 1)
	ms.events.addTail("unexpected-exit", fmt.Sprintf("member %s run %d: %s: %s (log: %s)", m.name, m.run, status, lastLine, m.log), tail(m.log, 8))
	if !restart {
		return
	}
	go func() {
		defer ms.restarts.Done()
		time.Sleep(2 * time.Second)
		if err := ms.up(m.name); err != nil {
			ms.events.add("error", fmt.Sprintf("restarting member %s: %v", m.name, err))
		}
	}()
}

// stop sends sig to member name, if it runs, and waits up to wait for it to
// exit (then kills it).
func (ms *members) stop(name string, sig syscall.Signal, wait time.Duration) {
	ms.mu.Lock()
	m := ms.live[name]
	if m != nil {
		m.stopped = true
	}
	ms.mu.Unlock()
	if m == nil {
		return
	}
	ms.events.add("signal", fmt.Sprintf("member %s run %d: %v", name, m.run, sig))
	m.cmd.Process.Signal(sig) //nolint:errcheck // it may have exited
	select {
	case <-m.done:
	case <-time.After(wait):
		ms.events.add("hang", fmt.Sprintf("member %s run %d did not exit %v after %v: SIGQUIT (goroutine dump in %s), then SIGKILL", name, m.run, wait, sig, m.log))
		m.cmd.Process.Signal(syscall.SIGQUIT) //nolint:errcheck // it may have exited
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			m.cmd.Process.Kill() //nolint:errcheck // it may have exited
			<-m.done
		}
	}
}

// current says whether m is its member's running incarnation.
func (ms *members) current(m *member) bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.live[m.name] == m
}

// running returns the members running now.
func (ms *members) running() []*member {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var out []*member
	for _, n := range []string{"a", "b"} {
		if m := ms.live[n]; m != nil {
			out = append(out, m)
		}
	}
	return out
}

// closeAll stops every member with SIGTERM, restarting none.
func (ms *members) closeAll(wait time.Duration) {
	ms.mu.Lock()
	ms.closing = true
	ms.mu.Unlock()
	ms.restarts.Wait()
	for _, n := range []string{"a", "b"} {
		ms.stop(n, syscall.SIGTERM, wait)
	}
}

// sample is one reading of one member's resources.
type sample struct {
	T          float64 `json:"t_min"` // minutes since the start of the soak
	Member     string  `json:"member"`
	Run        int     `json:"run"`
	PID        int     `json:"pid"`
	RSS        int64   `json:"rss_bytes"`
	FDs        int     `json:"open_files"`
	Goroutines float64 `json:"goroutines"`
	HeapInuse  float64 `json:"heap_inuse_bytes"`
	Released   float64 `json:"released"` // signalbox_records_out_total
}

var metricsClient = &http.Client{Timeout: 5 * time.Second}

// read samples m; ok is false when it is not fully readable (starting, or
// gone).
func (m *member) read(now float64) (sample, bool) {
	if m.adminAt == "" {
		select {
		case m.adminAt = <-m.admin:
		default:
			return sample{}, false
		}
	}
	pid := m.cmd.Process.Pid
	s := sample{T: now, Member: m.name, Run: m.run, PID: pid}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, false
	}
	for l := range strings.SplitSeq(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			s.RSS = kb << 10
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, false
	}
	s.FDs = len(fds)
	resp, err := metricsClient.Get(m.adminAt + "/metrics")
	if err != nil {
		return s, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return s, false
	}
	var got int
	for l := range strings.SplitSeq(string(body), "\n") {
		name, v, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		switch name {
		case "go_goroutines":
			s.Goroutines, err = strconv.ParseFloat(v, 64)
		case "go_memstats_heap_inuse_bytes":
			s.HeapInuse, err = strconv.ParseFloat(v, 64)
		case "signalbox_records_out_total":
			s.Released, err = strconv.ParseFloat(v, 64)
		default:
			continue
		}
		if err == nil {
			got++
		}
	}
	return s, got == 3 && s.RSS > 0
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
