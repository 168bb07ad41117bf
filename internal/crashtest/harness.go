package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HangGuard bounds every wait of the harness. It only catches hangs: no
// test asserts on how long anything takes.
const HangGuard = 3 * time.Minute

var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

// Binary builds cmd/signalbox once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, buildErr = os.MkdirTemp("", "signalbox-crashtest-"); buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, "signalbox")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/signalbox")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/signalbox: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// RemoveBinary deletes the binary built by Binary (call it from TestMain).
func RemoveBinary() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the signalbox module")
	}
	return filepath.Dir(mod), nil
}

// KeptDir is the test's work directory (job files, per-run logs and
// outputs): removed when the test passes, kept for a post-mortem when it
// fails (t.TempDir would remove it either way).
func KeptDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "signalbox-"+t.Name()+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	return dir
}

// Broker is a `signalbox broker` subprocess.
type Broker struct {
	Addr string
}

// StartBroker starts `signalbox broker` with the given topics
// ("name:partitions") and stops it (SIGTERM) when the test ends.
func StartBroker(t testing.TB, bin string, topics ...string) *Broker {
	t.Helper()
	args := []string{"broker", "--addr", "127.0.0.1:0"}
	for _, tp := range topics {
		args = append(args, "--topic", tp)
	}
	cmd := exec.Command(bin, args...)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // hang
			<-done
		}
		stderr.Close()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			addr <- strings.Split(strings.TrimSpace(sc.Text()), ",")[0]
		}
		io.Copy(io.Discard, stdout) //nolint:errcheck // drain
		cmd.Wait()                  //nolint:errcheck // reported by the cleanup
		close(done)
	}()
	select {
	case a := <-addr:
		return &Broker{Addr: a}
	case <-done:
		t.Fatalf("signalbox broker exited before it was ready; see %s", stderr.Name())
	case <-time.After(HangGuard):
		t.Fatalf("signalbox broker not ready after %v", HangGuard)
	}
	return nil
}

// Client returns a franz-go client for the broker, closed at test end.
func (b *Broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// EvictGroup removes every member of group from the broker's group
// coordinator. After a SIGKILL the dead member would otherwise hold its
// partitions until its session times out (10 s by default), once per kill;
// evicting it is what an operator's `--delete-members` does, and it is no
// part of what the crash test checks.
func EvictGroup(ctx context.Context, cl *kgo.Client, group string) error {
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{group}
	resp, err := d.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe group %s: %w", group, err)
	}
	for _, g := range resp.Groups {
		for _, m := range g.Members {
			l := kmsg.NewPtrLeaveGroupRequest()
			l.Group, l.MemberID = group, m.MemberID
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID = m.MemberID
			l.Members = []kmsg.LeaveGroupRequestMember{lm}
			if _, err := l.RequestWith(ctx, cl); err != nil {
				return fmt.Errorf("evict %s from group %s: %w", m.MemberID, group, err)
			}
		}
	}
	return nil
}

// Producer produces the test's input and remembers every acknowledged
// record.
type Producer struct {
	cl        *kgo.Client
	topics    []string
	parts     int32
	keys      int
	disorderM int64 // bounded disorder within a partition, ms
	// TaskKeys puts each key's records in one partition number: key k<n>
	// only in partition n % parts of every topic, as a producer
	// partitioning by key does (a group's window keyed by the Kafka key
	// needs that). Otherwise every partition gets every key. Set it before
	// producing.
	TaskKeys bool

	mu   sync.Mutex
	rng  *rand.Rand
	seq  int
	recs []Produced
	err  error
}

// NewProducer returns a producer for topics × parts partitions, with
// keys distinct keys and event times out of order by at most disorder
// within a partition.
func NewProducer(t testing.TB, b *Broker, rng *rand.Rand, topics []string, parts int32, keys int, disorder time.Duration) *Producer {
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	return &Producer{cl: cl, topics: topics, parts: parts, keys: keys, disorderM: disorder.Milliseconds(), rng: rng}
}

// produce sends one record with event time ts (minus a random disorder).
func (p *Producer) produce(ctx context.Context, topic string, part int32, ts int64, live bool) {
	p.mu.Lock()
	ts -= p.rng.Int64N(p.disorderM + 1)
	n := p.rng.IntN(p.keys)
	if p.TaskKeys {
		n = int(part) + int(p.parts)*p.rng.IntN(max(1, (p.keys-int(part)+int(p.parts)-1)/int(p.parts)))
	}
	key := fmt.Sprintf("k%02d", n)
	id := fmt.Sprintf("%s/%d/%d", topic, part, p.seq)
	p.seq++
	p.mu.Unlock()
	v, _ := json.Marshal(payload{ID: id, TS: ts, Key: key})
	rec := &kgo.Record{Topic: topic, Partition: part, Key: []byte(key), Value: v}
	p.cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			if p.err == nil {
				p.err = fmt.Errorf("produce %s: %w", id, err)
			}
			return
		}
		p.recs = append(p.recs, Produced{ID: id, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: key, TS: ts, Live: live,
			Acked: time.Now().UnixMilli()})
	})
}

// History produces n records per partition with event times from start,
// step apart (before disorder), and waits for every acknowledgement.
func (p *Producer) History(ctx context.Context, n int, start time.Time, step time.Duration) error {
	for i := range n {
		ts := start.Add(time.Duration(i) * step).UnixMilli()
		for _, tp := range p.topics {
			for part := range p.parts {
				p.produce(ctx, tp, part, ts, false)
			}
		}
	}
	return p.Flush(ctx)
}

// Live produces one record per partition every interval, with event time
// now (minus disorder), until ctx is done; it then waits for every
// acknowledgement.
func (p *Producer) Live(ctx context.Context, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return p.Flush(context.WithoutCancel(ctx))
		case now := <-tick.C:
			for _, tp := range p.topics {
				for part := range p.parts {
					p.produce(context.WithoutCancel(ctx), tp, part, now.UnixMilli(), true)
				}
			}
		}
	}
}

// Flush waits for every acknowledgement and returns the first produce
// error.
func (p *Producer) Flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, HangGuard)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Records returns every acknowledged record.
func (p *Producer) Records() []Produced {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Produced(nil), p.recs...)
}

// Job describes the job file of a crash test.
type Job struct {
	Brokers string
	Group   string // "": no group (a restart resumes from the checkpoint sink's checkpoint)
	Topics  []string
	Delay   time.Duration
	// Sinks is the YAML of the sinks list items after the first, indented
	// by two spaces ("  - type: jsonl\n    path: …"). The first sink is
	// always JSONL on stdout, which the Crasher reads at a bounded rate: a
	// slow consumer, so that the job's catch-up lasts long enough to be
	// killed in the middle of it (kfake serves a whole history in a fetch
	// or two), and a second at-least-once output to check.
	Sinks string
	// Extra is appended to the job file as is (e.g. a state section).
	Extra string
	// CheckpointInterval; default 200ms.
	CheckpointInterval time.Duration
}

// YAML renders the job file with the given until mode.
func (j *Job) YAML(until string) string {
	var b strings.Builder
	cp := j.CheckpointInterval
	if cp == 0 {
		cp = 200 * time.Millisecond
	}
	fmt.Fprintf(&b, "brokers: [%q]\n", j.Brokers)
	if j.Group != "" {
		fmt.Fprintf(&b, "group: %s\n", j.Group)
	}
	fmt.Fprintf(&b, "delay: %s\nlate: emit\nuntil: %s\ncheckpoint_interval: %s\nbatch_size: 256\n", j.Delay, until, cp)
	b.WriteString("inputs:\n")
	for _, tp := range j.Topics {
		fmt.Fprintf(&b, "  - topic: %s\n    time: field\n    time_field: ts\n    time_format: unix_ms\n    key: key\n", tp)
	}
	b.WriteString("sinks:\n  - type: jsonl\n    path: \"-\"\n")
	b.WriteString(j.Sinks)
	b.WriteString(j.Extra)
	return b.String()
}

// Validate runs `signalbox validate` on the job. It skips the test when
// this build does not support something the job uses yet, and fails it on
// any other problem.
func Validate(t testing.TB, bin, path string) {
	t.Helper()
	out, err := exec.Command(bin, "validate", "-c", path).CombinedOutput()
	if err == nil {
		return
	}
	if bytes.Contains(out, []byte("not yet supported")) {
		t.Skipf("this build does not support the job yet:\n%s", out)
	}
	data, _ := os.ReadFile(path)
	t.Fatalf("signalbox validate rejected the crash test's job (update the test's YAML?): %v\n%s\njob:\n%s", err, out, data)
}

// KillPoint is one SIGKILL of the job, or one stop by another signal
// (Crasher.Signals).
type KillPoint struct {
	Run    int
	Signal syscall.Signal
	Target string        // what the plan aimed at: "replay" or "live"
	Phase  string        // what the last status said at the kill: "replay" or "live"
	Uptime time.Duration // since the process started
	Detail string        // the condition met, and the counters of the last status
	// Checkpoints and Watermark are those of the last status: the run's
	// flushed checkpoints, and its watermark (Unix ms; nil: -inf).
	Checkpoints int64
	Watermark   *int64
}

func (k KillPoint) String() string {
	return fmt.Sprintf("run %d: %s during %s (aimed at %s) after %v: %s", k.Run, sigName(k.Signal), k.Phase, k.Target, k.Uptime.Round(time.Millisecond), k.Detail)
}

// sigName names the signals the crasher sends.
func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// Crasher runs a job, killing it at planned points.
type Crasher struct {
	T     testing.TB
	Bin   string
	Dir   string // work directory: job files and per-run logs
	Job   *Job
	Admin *kgo.Client // for EvictGroup
	Rng   *rand.Rand
	Rate  int64 // bytes per second read from the job's stdout; 0: no bound
	// Signals stop the runs, in turn; nil: SIGKILL. A run stopped by
	// another signal must exit 0 by itself (a graceful stop).
	Signals []syscall.Signal
	// ReplayOnly aims every kill at the replay (a run whose replay is seen
	// done first is killed then), for a job without live traffic.
	ReplayOnly bool
	// FirstWatermark, when set (Unix ms), kills the first run once its
	// watermark has reached it and the run has flushed a checkpoint (target
	// "watermark"), instead of during its replay: for a history whose event
	// times the clock reaches after the start, released pass after pass
	// with checkpoints between, a kill inside it that a restart resumes
	// from a checkpoint. (The watermark follows the data during the replay,
	// with no checkpoint, up to the newest event time less the delay: the
	// clock releases the rest.)
	FirstWatermark int64
	Kills          []KillPoint
}

// StdoutOutputs parses the stdout JSONL of every run, in order. The last
// line of a killed run may be cut short by the SIGKILL (it was never
// acknowledged): it is dropped and counted in torn. Any other unparsable
// line is a problem.
func (c *Crasher) StdoutOutputs() (outs []Out, torn int, problems []string) {
	runs, torn, err := c.StdoutRuns()
	if err != nil {
		return nil, 0, []string{err.Error()}
	}
	for run, data := range runs {
		o, ps := ParseJSONL(data)
		for i := range o {
			o[i].Where = fmt.Sprintf("stdout of run %d, %s", run, o[i].Where)
		}
		outs = append(outs, o...)
		for _, p := range ps {
			problems = append(problems, fmt.Sprintf("stdout of run %d: %s", run, p))
		}
	}
	return outs, torn, problems
}

// StdoutRuns returns the stdout of every run, in order, each without the
// last line of a killed run when the SIGKILL cut it short (it was never
// acknowledged), counted in torn.
func (c *Crasher) StdoutRuns() (runs [][]byte, torn int, err error) {
	for run := 0; run <= len(c.Kills); run++ {
		data, err := os.ReadFile(c.stdoutPath(run))
		if err != nil {
			return nil, 0, err
		}
		if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) && run < len(c.Kills) {
			data = data[:i+1]
			torn++
		}
		runs = append(runs, data)
	}
	return runs, torn, nil
}

// status is the part of the /status document the crasher reads.
type status struct {
	ReplayDone bool `json:"replay_done"`
	Counters   struct {
		In, Out, Parked, Checkpoints int64
	} `json:"counters"`
	Progress []struct {
		Total, Remaining int64
	} `json:"progress"`
	WatermarkMs *int64 `json:"watermark_ms"`
	Windows     []struct {
		Name                      string
		Open, Keys, Results, Late int64
		StateBytes                int64 `json:"state_bytes"`
	} `json:"windows"`
}

func (s *status) done() float64 {
	var total, rem int64
	for _, p := range s.Progress {
		total += p.Total
		rem += p.Remaining
	}
	if total == 0 {
		return 0
	}
	return float64(total-rem) / float64(total)
}

func (s *status) String() string {
	wm := "-inf"
	if s.WatermarkMs != nil {
		wm = time.UnixMilli(*s.WatermarkMs).UTC().Format("15:04:05.000")
	}
	return fmt.Sprintf("replayed %.0f%%, in %d, out %d, parked %d, %d checkpoints, watermark %s", 100*s.done(), s.Counters.In, s.Counters.Out, s.Counters.Parked, s.Counters.Checkpoints, wm)
}

// proc is one `signalbox run`.
type proc struct {
	cmd     *exec.Cmd
	log     string
	started time.Time
	done    chan struct{}
	err     error
}

func (c *Crasher) stdoutPath(run int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("run-%02d.jsonl", run))
}

// throttled writes to w at most rate bytes per second (0: no bound).
type throttled struct {
	w     io.Writer
	rate  int64
	start time.Time
	n     int64
}

func (t *throttled) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.n += int64(n)
	if t.rate > 0 {
		time.Sleep(time.Until(t.start.Add(time.Duration(t.n * int64(time.Second) / t.rate))))
	}
	return n, err
}

// start starts run number run of the job; stdout is read at rate bytes
// per second (0: as fast as it comes).
func (c *Crasher) start(run int, until string, statusAddr bool, rate int64) *proc {
	c.T.Helper()
	jobPath := filepath.Join(c.Dir, until+".yaml")
	if _, err := os.Stat(jobPath); err != nil {
		if err := os.WriteFile(jobPath, []byte(c.Job.YAML(until)), 0o644); err != nil {
			c.T.Fatal(err)
		}
		Validate(c.T, c.Bin, jobPath)
	}
	args := []string{"run", "-c", jobPath, "--log-format", "json"}
	if statusAddr {
		args = append(args, "--admin-addr", "127.0.0.1:0")
	}
	p := &proc{log: filepath.Join(c.Dir, fmt.Sprintf("run-%02d.log", run)), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		c.T.Fatal(err)
	}
	outf, err := os.Create(c.stdoutPath(run))
	if err != nil {
		c.T.Fatal(err)
	}
	p.cmd = exec.Command(c.Bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = &throttled{w: outf, rate: rate, start: time.Now()}, logf
	if err := p.cmd.Start(); err != nil {
		c.T.Fatal(err)
	}
	p.started = time.Now()
	go func() {
		p.err = p.cmd.Wait() // after stdout is drained into outf
		logf.Close()
		outf.Close()
		close(p.done)
	}()
	return p
}

// tail returns the end of the run's log.
func (p *proc) tail() string {
	data, _ := os.ReadFile(p.log)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// statusURL waits for the "admin server listening" log line.
func (c *Crasher) statusURL(p *proc) string {
	deadline := time.Now().Add(HangGuard)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(p.log)
		for l := range bytes.SplitSeq(data, []byte{'\n'}) {
			var m struct{ Msg, URL string }
			if json.Unmarshal(l, &m) == nil && m.Msg == "admin server listening" {
				return m.URL + "/status"
			}
		}
		select {
		case <-p.done:
			c.T.Fatalf("signalbox run exited (%v) before serving its status:\n%s", p.err, p.tail())
		case <-time.After(5 * time.Millisecond):
		}
	}
	c.T.Fatalf("no status server after %v:\n%s", HangGuard, p.tail())
	return ""
}

var statusClient = &http.Client{Timeout: 5 * time.Second}

func getStatus(url string) (*status, error) {
	resp, err := statusClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var s status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Crash runs the job `kills` times, each killed with SIGKILL at a planned
// point, evicting the dead member from the group (if any) after each kill.
// The first kill aims at the replay of the history, the others alternate at
// random between replay and live (or all aim at the replay: ReplayOnly).
func (c *Crasher) Crash(kills int) {
	c.T.Helper()
	targets := make([]string, kills)
	for i := range targets {
		targets[i] = "live"
		if i < kills/2 || c.ReplayOnly {
			targets[i] = "replay"
		}
	}
	c.Rng.Shuffle(len(targets)-1, func(i, j int) { targets[i+1], targets[j+1] = targets[j+1], targets[i+1] })
	for run, target := range targets {
		// Kill `after` the status is up (replay), or after the replay (live).
		// A restart replays only what its last checkpoint left, so a replay
		// target after the first run reads stdout 4× slower and is killed
		// sooner, to land inside that short replay.
		after, rate := time.Duration(c.Rng.Int64N(int64(1500*time.Millisecond))), c.Rate
		if target == "replay" && run > 0 {
			after, rate = after/5, rate/4
		}
		// The first run replays the whole history: it is also killed once a
		// random share of it is read, so that at least one kill lands in a
		// replay however fast the machine reads (later runs replay little).
		frac := 2.0 // never
		if target == "replay" && run == 0 {
			frac = 0.2 + 0.6*c.Rng.Float64()
			if c.FirstWatermark != 0 {
				target = "watermark"
			}
		}
		p := c.start(run, "live", true, rate)
		url := c.statusURL(p)
		sig := syscall.SIGKILL
		if len(c.Signals) > 0 {
			sig = c.Signals[run%len(c.Signals)]
		}
		k := c.killWhen(p, url, target, after, frac, sig)
		k.Run, k.Target = run, target
		c.Kills = append(c.Kills, k)
		c.T.Log(k)
		if c.Job.Group == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
		err := EvictGroup(ctx, c.Admin, c.Job.Group)
		cancel()
		if err != nil {
			c.T.Fatal(err)
		}
	}
}

// killWhen polls the job's status until the kill condition holds, then
// sends the job sig and waits for it: killed by SIGKILL, or exited 0 after
// any other signal. A replay target is killed `after` the status server
// first answers or once the share frac of the replay is read, if the replay
// is still on by then, else as soon as the replay is seen done; a live
// target `after` the replay is seen done; a watermark target once the
// watermark has reached FirstWatermark and the run has checkpointed. The kill point's detail gives the
// planned wait too: a kill much later than planned means the test process
// (the harness, and the producer with it) stalled, and the status it acted
// on is that old.
func (c *Crasher) killWhen(p *proc, url, target string, after time.Duration, frac float64, sig syscall.Signal) KillPoint {
	c.T.Helper()
	deadline := time.Now().Add(HangGuard)
	var last status
	var up, liveSince time.Time
	var k KillPoint
	for {
		if time.Now().After(deadline) {
			c.T.Fatalf("kill condition (%s) not met after %v; last status: %s\n%s", target, HangGuard, &last, p.tail())
		}
		select {
		case <-p.done:
			c.T.Fatalf("signalbox run exited by itself (%v) before its kill point:\n%s", p.err, p.tail())
		default:
		}
		s, err := getStatus(url)
		if err != nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		last = *s
		if up.IsZero() {
			up = time.Now()
		}
		if target == "watermark" {
			if s.WatermarkMs != nil && *s.WatermarkMs >= c.FirstWatermark && s.Counters.Checkpoints > 0 {
				k.Phase = map[bool]string{false: "replay", true: "live"}[s.ReplayDone]
				k.Detail = fmt.Sprintf("%v after the status was up, the watermark past %s after a checkpoint; %s", time.Since(up).Round(time.Millisecond), rfc3339(c.FirstWatermark), s)
				break
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		if !s.ReplayDone && target == "replay" && (time.Since(up) >= after || s.done() >= frac) {
			k.Phase, k.Detail = "replay", fmt.Sprintf("%v after the status was up (planned %v); %s", time.Since(up).Round(time.Millisecond), after.Round(time.Millisecond), s)
			break
		}
		if s.ReplayDone {
			if liveSince.IsZero() {
				liveSince = time.Now()
			}
			if target == "replay" || time.Since(liveSince) >= after {
				k.Phase, k.Detail = "live", fmt.Sprintf("%v after the replay was seen done (planned %v); %s", time.Since(liveSince).Round(time.Millisecond), after.Round(time.Millisecond), s)
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	k.Signal, k.Checkpoints, k.Watermark = sig, last.Counters.Checkpoints, last.WatermarkMs
	p.cmd.Process.Signal(sig) //nolint:errcheck // it may have exited: checked below
	select {
	case <-p.done:
	case <-time.After(HangGuard):
		p.cmd.Process.Kill() //nolint:errcheck // hang
		<-p.done
		c.T.Fatalf("signalbox run did not stop within %v of %s:\n%s", HangGuard, sigName(sig), p.tail())
	}
	k.Uptime = time.Since(p.started)
	if sig != syscall.SIGKILL {
		if p.err != nil {
			c.T.Fatalf("signalbox run did not stop cleanly on %s (%v):\n%s", sigName(sig), p.err, p.tail())
		}
		return k
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		c.T.Fatalf("signalbox run was not killed by SIGKILL (%v):\n%s", p.err, p.tail())
	}
	return k
}

// Finish runs the job with `until: end-offsets` to its end and fails the
// test unless it exits 0.
func (c *Crasher) Finish() {
	c.T.Helper()
	p := c.start(len(c.Kills), "end-offsets", false, 0)
	select {
	case <-p.done:
	case <-time.After(HangGuard):
		p.cmd.Process.Kill() //nolint:errcheck // hang
		<-p.done
		c.T.Fatalf("the final until: end-offsets run did not finish in %v:\n%s", HangGuard, p.tail())
	}
	if p.err != nil {
		c.T.Fatalf("the final run failed (%v):\n%s", p.err, p.tail())
	}
}

// Phases counts the kill points by observed phase.
func (c *Crasher) Phases() (replay, live int) {
	for _, k := range c.Kills {
		if k.Phase == "replay" {
			replay++
		} else {
			live++
		}
	}
	return replay, live
}
