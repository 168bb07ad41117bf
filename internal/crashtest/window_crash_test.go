package crashtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
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

func setUpWindow(t *testing.T) *crashRun {
	return setUpGroup(t, "", []string{windowTopic + ":1"}, func(string, *Broker) (string, string) {
		return "", fmt.Sprintf("windows:\n  - name: per_second\n    tumbling: 1s\n%s    sinks:\n      - type: kafka\n        topic: %s\n        transactional_id: crashtest-windows\n",
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
	r := setUpWindow(t)
	r.c.ReplayOnly = true
	kills := r.sc.kills / 2
	r.c.Crash(kills)
	r.c.Finish()
	produced := r.prod.Records()
	r.checkStdout(produced)
	replay, _ := r.c.Phases()
	t.Logf("seed %d: %d kills, %d during the replay; %d records", r.seed, len(r.c.Kills), replay, len(produced))
	if replay == 0 {
		t.Errorf("no kill landed in a replay")
	}
	windows := windowCount(produced)
	var results []WindowResult
	for _, rec := range readCommittedRecords(t, r.broker, windowTopic, windows) {
		w, err := ParseWindowResult(rec.Value, fmt.Sprintf("%s@%d", rec.Topic, rec.Offset))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, w)
	}
	t.Logf("%d window results, %d windows in the oracle", len(results), windows)
	for _, p := range CheckWindows(produced, results, windowSize) {
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
	if w.Name != "per_second" || w.Open != 0 || w.Keys != 0 || w.Late != 0 {
		t.Errorf("status: %+v, want per_second with 0 open, 0 keys, 0 late", w)
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
