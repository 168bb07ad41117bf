package crashtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The crash tests' window job: one-second tumbling windows per key of the
// records (WindowAggregates), to a transactional Kafka sink on windowTopic,
// in no group.
const (
	windowTopic = "windows"
	windowSize  = 1000
)

func setUpWindow(t *testing.T) *crashRun { return setUpWindowState(t, "") }

// setUpWindowState is setUpWindow with state.dir in the work directory
// and a state.memory of memory ("": no state section).
func setUpWindowState(t *testing.T, memory string) *crashRun {
	return setUpGroup(t, "", []string{windowTopic + ":1"}, func(dir string, _ *Broker) (string, string) {
		state := ""
		if memory != "" {
			state = fmt.Sprintf("state:\n  dir: %s\n  memory: %s\n", filepath.Join(dir, "state"), memory)
		}
		return "", state + fmt.Sprintf("windows:\n  - name: per_second\n    tumbling: 1s\n%s    sinks:\n      - type: kafka\n        topic: %s\n        transactional_id: crashtest-windows\n",
			WindowAggregates, windowTopic)
	})
}

// windowCount is the number of windows of the oracle: distinct (key,
// second) of the records.
func windowCount(produced []Produced) int {
	windows := map[string]bool{}
	for _, p := range produced {
		windows[fmt.Sprintf("%s/%d", p.Key, p.TS/windowSize)] = true
	}
	return len(windows)
}

// TestCrashWindowKafka: a window job with an exactly-once window sink
// (transactional Kafka) and no group, SIGKILLed during the replay of the
// history again and again (each restart resumes from the sink's
// checkpoint: design K5-K8), then run to the end offsets. Every window of
// the history is in the output topic, read with read_committed, exactly
// once, with the oracle's count, sum, min and max, in the order of the
// windows' ends; the raw records on stdout are complete and in order.
func TestCrashWindowKafka(t *testing.T) {
	t.Parallel()
	crashWindowKafka(t, setUpWindow(t))
}

// TestCrashWindowKafkaState: TestCrashWindowKafka with state.dir and no
// group, under a memory budget whose windows' share (a quarter) is a few
// KiB: the windows' state spills to pebble beside state.dir, which every
// start empties (the windows are rebuilt from Kafka, design K5), and which
// a SIGKILL leaves behind.
func TestCrashWindowKafkaState(t *testing.T) {
	t.Parallel()
	crashWindowKafka(t, setUpWindowState(t, "8KiB"))
}

func crashWindowKafka(t *testing.T, r *crashRun) {
	r.c.ReplayOnly = true
	r.c.Crash(r.sc.kills / 2)
	r.c.Finish()
	produced := r.prod.Records()
	r.checkStdout(produced)
	if replay, _ := r.c.Phases(); replay == 0 {
		t.Errorf("no kill landed in a replay")
	}
	r.checkWindows(produced, r.readWindows(produced), windowSize, WindowMode{})
}

// The window job in a group (issue 37, second target): the job of
// setUpWindow keyed by the Kafka key (key: key), each key's records in one
// task, with state.dir and checkpoint_interval 100ms, in windowGroup.
const windowGroup = "crashtest-windows"

// windowSpan is the event time the group window tests' history spans,
// from windowDelay less a second before the set-up, and windowDelay their
// delay bound: the clock (less the delay) reaches the history a second
// after the set-up and releases it pass after pass, each followed by a
// checkpoint, so that a kill lands after checkpoints whose Low offsets are
// held back to open windows, and the restart resumes from them. (A
// history of past event times, all due at once, is released in one pass
// with no checkpoint before its end: every restart would replay it from
// the beginning.)
const (
	windowSpan  = 6 * time.Second
	windowDelay = windowSpan * 2 / 3
)

// setUpWindowGroup sets up the window job in windowGroup with the windows
// windows(dir) (YAML list items: groupWindow), extraTopics created too.
// The first kill lands once the watermark is past a third of the history
// and the run has checkpointed, the others at random during the replays
// after each restart and while the history is released.
func setUpWindowGroup(t *testing.T, extraTopics []string, windows func(dir string) string) *crashRun {
	sc := newScenario()
	sc.taskKeys, sc.delay = true, windowDelay
	sc.from, sc.step = time.Second-windowDelay, windowSpan/time.Duration(sc.history)
	r := setUpScenario(t, sc, windowGroup, extraTopics, func(dir string, _ *Broker) (string, string) {
		return "", fmt.Sprintf("state:\n  dir: %s\n  memory: 64KiB\nwindows:\n%s", filepath.Join(dir, "state"), windows(dir))
	})
	r.c.Job.CheckpointInterval = 100 * time.Millisecond
	r.c.FirstWatermark = r.start.Add(windowSpan / 3).UnixMilli()
	return r
}

// groupWindow is the YAML list item of a window of the group window job:
// named name, keyed by the Kafka key, of shape (YAML lines indented by four
// spaces, such as "    tumbling: 1s\n"), aggregated by WindowAggregates,
// to the sink of YAML sink (lines indented by eight spaces).
func groupWindow(name, shape, sink string) string {
	return fmt.Sprintf("  - name: %s\n    key: key\n%s%s    sinks:\n      - %s", name, shape, WindowAggregates, sink[8:])
}

// checkKilledMidWindows fails the test unless a kill landed after a
// checkpoint of its run, with the watermark inside the history: a restart
// then resumed from a checkpoint whose windows were open.
func (r *crashRun) checkKilledMidWindows(produced []Produced) {
	lo, hi := produced[0].TS, produced[0].TS
	for _, p := range produced {
		lo, hi = min(lo, p.TS), max(hi, p.TS)
	}
	n := 0
	for _, k := range r.c.Kills {
		if k.Checkpoints > 0 && k.Watermark != nil && *k.Watermark > lo && *k.Watermark < hi {
			n++
		}
	}
	r.t.Logf("%d of %d kills after a checkpoint of their run, the watermark inside the history", n, len(r.c.Kills))
	if n == 0 {
		r.t.Errorf("no kill landed after a checkpoint with the watermark inside the history: no restart resumed open windows")
	}
}

// TestCrashWindowGroup: the window job in a group with state.dir, to a
// JSONL window sink (at-least-once), SIGKILLed once the watermark is past
// a third of the history and the run has checkpointed, and a few more
// times, during the replays after each restart and while the history is
// released, each restart resuming from the group's committed checkpoint
// (the Low offsets held back to the oldest record of an open window:
// design K6), then run to the end offsets, which closes the windows still
// open. A kill must land after a checkpoint, with windows open. Every
// window of the history is in the file, with the oracle's count, sum, min
// and max; a window emitted again (after the last checkpoint of a killed
// run) is an exact copy; first emissions are in the order of their ends
// within each task; the raw records on stdout are complete and in order.
// A second window of the job, hopping (2 s every 500 ms, each record in
// four windows, open four times as long), to a file of its own, must be
// as exact: a task's Low is held back to the oldest record of either.
func TestCrashWindowGroup(t *testing.T) {
	t.Parallel()
	jsonl := func(dir, file string) string {
		return fmt.Sprintf("        type: jsonl\n        path: %s\n", filepath.Join(dir, file))
	}
	r := setUpWindowGroup(t, nil, func(dir string) string {
		return groupWindow("per_second", "    tumbling: 1s\n", jsonl(dir, "windows.jsonl")) +
			groupWindow("hopping", "    hopping:\n      size: 2s\n      every: 500ms\n", jsonl(dir, "hopping.jsonl"))
	})
	r.c.Crash(4)
	r.c.Finish()
	produced := r.prod.Records()
	r.checkStdout(produced)
	r.checkKilledMidWindows(produced)
	for _, w := range []struct {
		file        string
		size, every int64
	}{{"windows.jsonl", windowSize, 0}, {"hopping.jsonl", 2000, 500}} {
		data, err := os.ReadFile(filepath.Join(r.dir, w.file))
		if err != nil {
			t.Fatal(err)
		}
		results, problems := ParseWindowJSONL(data, w.file)
		r.checkWindows(produced, results, w.size, WindowMode{AtLeastOnce: true, PerTask: true, Every: w.every}, problems...)
	}
}

// TestCrashWindowGroupKafka: TestCrashWindowGroup with an exactly-once
// window sink (transactional Kafka, committing the group's checkpoint in
// its transactions): read with read_committed, every window is in the
// output topic exactly once, no copy.
func TestCrashWindowGroupKafka(t *testing.T) {
	t.Parallel()
	r := setUpWindowGroup(t, []string{windowTopic + ":1"}, func(string) string {
		return groupWindow("per_second", "    tumbling: 1s\n",
			fmt.Sprintf("        type: kafka\n        topic: %s\n        transactional_id: crashtest-windows-group\n", windowTopic))
	})
	r.c.Crash(3)
	r.c.Finish()
	produced := r.prod.Records()
	r.checkStdout(produced)
	r.checkKilledMidWindows(produced)
	r.checkWindows(produced, r.readWindows(produced), windowSize, WindowMode{PerTask: true})
}

// readWindows reads the window results of windowTopic with read_committed.
func (r *crashRun) readWindows(produced []Produced) []WindowResult {
	var results []WindowResult
	for _, rec := range readCommittedRecords(r.t, r.broker, windowTopic, windowCount(produced)) {
		w, err := ParseWindowResult(rec.Value, fmt.Sprintf("%s@%d", rec.Topic, rec.Offset))
		if err != nil {
			r.t.Fatal(err)
		}
		results = append(results, w)
	}
	return results
}

// checkWindows checks the window results of a run of windows of size ms
// (CheckWindows, with extra problems found reading them).
func (r *crashRun) checkWindows(produced []Produced, results []WindowResult, size int64, mode WindowMode, extra ...string) {
	t := r.t
	replay, _ := r.c.Phases()
	distinct := map[[2]string]bool{}
	for _, w := range results {
		distinct[[2]string{w.Key, w.Start}] = true
	}
	t.Logf("seed %d: %d kills, %d during the replay; %d records; %d window results, %d distinct",
		r.seed, len(r.c.Kills), replay, len(produced), len(results), len(distinct))
	problems, _ := CheckWindows(produced, results, size, mode)
	for _, p := range append(extra, problems...) {
		t.Error(p)
	}
}

// TestWindowObservability: the window job's activity reaches the status
// document (`signalbox status` reads it) and /metrics of the real binary:
// once the history is replayed and its windows are closed, the results
// emitted are the oracle's number of windows, nothing is open, no key is
// in state and no record was late, in both.
func TestWindowObservability(t *testing.T) {
	t.Parallel()
	r := setUpWindow(t)
	want := int64(windowCount(r.prod.Records()))
	p := r.c.start(0, "live", true, 0)
	url := r.c.statusURL(p)
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone
		<-p.done
	}()
	deadline := time.Now().Add(HangGuard)
	var last *status
	for {
		s, err := getStatus(url)
		if err == nil {
			last = s
			if s.ReplayDone && len(s.Windows) == 1 && s.Windows[0].Results == want {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after %v: %+v, want %d results of per_second", HangGuard, last, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w := last.Windows[0]
	if w.Name != "per_second" || w.Open != 0 || w.Keys != 0 || w.Late != 0 || w.StateBytes != 0 {
		t.Errorf("status: %+v, want per_second with 0 open, 0 keys, 0 late, 0 state bytes", w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/status")+"/metrics", nil)
	resp, err := statusClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		fmt.Sprintf(`signalbox_window_results_total{window="per_second"} %d`, want),
		`signalbox_window_open{window="per_second"} 0`,
		`signalbox_window_keys{window="per_second"} 0`,
		`signalbox_window_state_bytes{window="per_second"} 0`,
		`signalbox_window_late_total{window="per_second"} 0`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", grepLines(string(body), "window"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
