package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/crashtest"
	"github.com/signalbox/signalbox/internal/workload"
)

func main() {
	code, err := run(os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
	}
	os.Exit(code)
}

// config is the command line.
type config struct {
	Duration     time.Duration `json:"duration"`
	Rate         int           `json:"rate"`
	History      int           `json:"history_per_partition"`
	Delay        time.Duration `json:"delay"`
	Sample       time.Duration `json:"sample"`
	DropEvery    time.Duration `json:"drop_every"`
	PGLockEvery  time.Duration `json:"pg_lock_every"`
	PGLockFor    time.Duration `json:"pg_lock_for"`
	BulkEvery    time.Duration `json:"bulk_every"`
	BulkFor      time.Duration `json:"bulk_for"`
	MemberPeriod time.Duration `json:"member_period"`
	Drain        time.Duration `json:"drain"`
	StopWait     time.Duration `json:"stop_wait"`
	Stall        time.Duration `json:"stall"`
	Seed         int64         `json:"seed"`
	Out          string        `json:"-"`
	Bin          string        `json:"-"`
	KeepTable    bool          `json:"-"`
	DSN          string        `json:"-"`
	Flat         float64       `json:"flat_tolerance"`
	Replot       string        `json:"-"`
	Doc          string        `json:"-"`
	HeapProfile  time.Duration `json:"-"`
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.DurationVar(&c.Duration, "duration", time.Hour, "how long live records are produced and faults injected")
	fs.IntVar(&c.Rate, "rate", 1000, "live records per second, over all partitions")
	fs.DurationVar(&c.HeapProfile, "heapprofile", 0, "when > 0, members write heap profiles this often to -out/heap-<member>-<run>-NNNN.pb.gz (signalbox run --heapprofile)")
	fs.IntVar(&c.History, "history", 1000, "history records per partition produced before the members start")
	fs.DurationVar(&c.Delay, "delay", 2*time.Second, "the job's delay bound (the producer's disorder is 100ms)")
	fs.DurationVar(&c.Sample, "sample", 5*time.Second, "how often each member's resources are sampled")
	fs.DurationVar(&c.DropEvery, "drop-every", 4*time.Minute, "close every member connection to the broker this often; 0: never")
	fs.DurationVar(&c.PGLockEvery, "pg-lock-every", 6*time.Minute, "lock the PostgreSQL data table this often; 0: never")
	fs.DurationVar(&c.PGLockFor, "pg-lock-for", 20*time.Second, "for this long")
	fs.DurationVar(&c.BulkEvery, "bulk-every", 6*time.Minute, "make the _bulk server answer 429 (then 503, alternately) this often; 0: never")
	fs.DurationVar(&c.BulkFor, "bulk-for", 20*time.Second, "for this long")
	fs.DurationVar(&c.MemberPeriod, "member-period", 10*time.Minute, "member b joins at 1/4 of each period, is SIGKILLed and restarted at 1/2, leaves at 3/4; 0: no member b")
	fs.DurationVar(&c.Drain, "drain", 3*time.Minute, "after the producer stops, how long to wait for the sinks to hold every record")
	fs.DurationVar(&c.StopWait, "stop-wait", time.Minute, "how long a member may take to exit after SIGTERM before it is reported hung and killed")
	fs.DurationVar(&c.Stall, "stall", 2*time.Minute, "a member that releases nothing for this long while records are produced is stalled: reported, sent SIGQUIT (its goroutine dump goes to its log) and restarted")
	fs.Int64Var(&c.Seed, "seed", 1, "workload seed")
	fs.Float64Var(&c.Flat, "flat", 0.10, "tolerance of the flatness check (last sixth of the run against the second sixth)")
	fs.StringVar(&c.Out, "out", "soak-out", "directory of soak.json, soak.svg, the job file and the members' logs")
	fs.StringVar(&c.Bin, "signalbox", "", "signalbox binary (default: go build ./cmd/signalbox into -out)")
	fs.BoolVar(&c.KeepTable, "keep-table", false, "keep the PostgreSQL table after the run")
	fs.StringVar(&c.Replot, "replot", "", "only redraw the chart and figures of this soak.json (into -out, and -doc)")
	fs.StringVar(&c.Doc, "doc", "", "also splice the figures into this Markdown file between its soak markers, and write soak.json and soak.svg beside it (e.g. docs/bench.md)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Replot != "" {
		return c, nil
	}
	c.DSN = os.Getenv("SIGNALBOX_PG_DSN")
	var errs []error
	if c.Duration <= 0 {
		errs = append(errs, errors.New("-duration: must be positive"))
	}
	if c.Rate <= 0 {
		errs = append(errs, errors.New("-rate: must be positive"))
	}
	if c.Sample <= 0 {
		errs = append(errs, errors.New("-sample: must be positive"))
	}
	if c.Delay <= disorder {
		errs = append(errs, fmt.Errorf("-delay: must exceed the producer's disorder %v", disorder))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"-drop-every", c.DropEvery}, {"-pg-lock-every", c.PGLockEvery}, {"-pg-lock-for", c.PGLockFor}, {"-bulk-every", c.BulkEvery}, {"-bulk-for", c.BulkFor}, {"-member-period", c.MemberPeriod}, {"-drain", c.Drain}, {"-stop-wait", c.StopWait}, {"-stall", c.Stall}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative", d.name))
		}
	}
	if c.PGLockEvery > 0 && c.PGLockFor >= c.PGLockEvery {
		errs = append(errs, errors.New("-pg-lock-for: must be shorter than -pg-lock-every"))
	}
	if c.BulkEvery > 0 && c.BulkFor >= c.BulkEvery {
		errs = append(errs, errors.New("-bulk-for: must be shorter than -bulk-every"))
	}
	if c.DSN == "" {
		errs = append(errs, errors.New("SIGNALBOX_PG_DSN: not set (eval \"$(bash .ci/postgres.sh | tail -n 1)\")"))
	}
	return c, errors.Join(errs...)
}

// The workload: 4 topics × 4 partitions, 400 co-partitioned keys.
const (
	topics     = 4
	partitions = 4
	items      = 400
	disorder   = 100 * time.Millisecond
)

// event is one thing that happened during the soak.
type event struct {
	T       float64 `json:"t_min"`
	Kind    string  `json:"kind"`
	Detail  string  `json:"detail"`
	LogTail string  `json:"log_tail,omitempty"` // of a member that exited on its own
}

type eventLog struct {
	start time.Time
	mu    sync.Mutex
	evs   []event
	w     io.Writer
}

func (l *eventLog) add(kind, detail string) { l.addTail(kind, detail, "") }

func (l *eventLog) addTail(kind, detail, logTail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := event{T: time.Since(l.start).Minutes(), Kind: kind, Detail: detail, LogTail: logTail}
	l.evs = append(l.evs, e)
	fmt.Fprintf(l.w, "%6.2f min  %-15s %s\n", e.T, kind, detail)
	if logTail != "" {
		fmt.Fprintf(l.w, "%s\n", logTail)
	}
}

func (l *eventLog) all() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// results is soak.json.
type results struct {
	Command         string        `json:"command"`
	Started         time.Time     `json:"started"`
	Cores           int           `json:"cores"`
	GoVersion       string        `json:"go_version,omitempty"`
	CPU             string        `json:"cpu,omitempty"`    // CPU model (report.Provenance)
	Commit          string        `json:"commit,omitempty"` // git commit of the source
	Config          config        `json:"config"`
	Table           string        `json:"table"`
	Produced        int64         `json:"produced"` // event records in Kafka at the end
	Samples         []sample      `json:"samples"`
	Events          []event       `json:"events"`
	Checks          []sinkCheck   `json:"checks"`
	DeadLetters     int64         `json:"dead_letters"`
	UnexpectedExits int           `json:"unexpected_exits"`
	BulkRequests    int64         `json:"bulk_requests"`
	BulkRefused     int64         `json:"bulk_refused"`
	BulkDupsAt      map[int]int64 `json:"bulk_duplicates_by_10s"` // re-deliveries by the second since the start of their 10 s of arrival
	Flat            []flatness    `json:"flatness"`
	Failures        []string      `json:"failures"`
}

func run(args []string, stdout io.Writer) (int, error) {
	c, err := parseFlags(args)
	if err != nil {
		return 2, err
	}
	if c.Replot != "" {
		return replot(c.Replot, c.Out, c.Doc)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return 1, err
	}
	if c.Bin == "" {
		if c.Bin, err = build(c.Out); err != nil {
			return 1, err
		}
	}
	start := time.Now()
	ev := &eventLog{start: start, w: stdout}
	here := report.Here("go run ./bench/cmd/soak "+strings.Join(args, " "), start)
	res := results{Command: here.Command, Started: start.UTC(), Cores: runtime.NumCPU(), GoVersion: here.Go, CPU: here.CPU, Commit: here.Commit, Config: c,
		Table: fmt.Sprintf("soak_%d", start.Unix())}

	// The broker, behind the connection cutter.
	w, err := workload.New(workload.Options{Seed: c.Seed, Topics: topics, Partitions: partitions, Items: items,
		RecordsPerPartition: c.History, Disorder: disorder, SlowTopics: -1, LiveFor: c.Duration, LiveRate: c.Rate})
	if err != nil {
		return 1, err
	}
	cut := newCutter()
	cluster, err := embedded.Start(append(w.ClusterOptions(), embedded.WithKfakeOptions(kfake.ListenFn(cut.listen)))...)
	if err != nil {
		return 1, err
	}
	defer cluster.Close()
	broker := remote{addrs: cluster.Addrs(), c: cut}
	if _, err := w.ProduceHistory(ctx, broker); err != nil {
		return 1, err
	}

	// The sinks' servers.
	bulk := newBulkServer(start)
	srv := httptest.NewServer(bulk)
	defer srv.Close()
	pg, err := pgx.Connect(ctx, c.DSN)
	if err != nil {
		return 1, fmt.Errorf("PostgreSQL: %w", err)
	}
	defer pg.Close(context.Background())
	if !c.KeepTable {
		defer dropTables(pg, res.Table)
	}

	jobs := map[string]string{}
	for _, name := range memberNames {
		job, err := writeJob(c, w, broker.addrs, srv.URL, res.Table, name)
		if err != nil {
			return 1, err
		}
		if out, err := exec.Command(c.Bin, "validate", "-c", job).CombinedOutput(); err != nil {
			return 1, fmt.Errorf("signalbox validate %s: %v\n%s", job, err, out)
		}
		jobs[name] = job
	}
	ms := newMembers(c.Bin, jobs, c.Out, start, ev)
	ms.heapEvery = c.HeapProfile
	if err := ms.up("a"); err != nil {
		return 1, err
	}

	// Live load, samples and faults until the duration ends.
	liveCtx, stopLive := context.WithTimeout(ctx, c.Duration)
	defer stopLive()
	produced := make(chan error, 1)
	go func() {
		_, err := w.ProduceLive(liveCtx, broker)
		produced <- err
	}()
	fe := &faultEnv{cut: cut, bulk: bulk, dsn: c.DSN, tbl: res.Table, ms: ms, ev: ev, stopWait: c.StopWait}
	watch := &watchdog{after: c.Stall, last: map[string]progress{}}
	var samplesMu sync.Mutex
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(c.Sample)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			for _, m := range ms.running() {
				if s, ok := m.read(time.Since(start).Minutes()); ok {
					samplesMu.Lock()
					res.Samples = append(res.Samples, s)
					samplesMu.Unlock()
					if liveCtx.Err() == nil && watch.stalled(s, time.Now()) {
						fe.stall(liveCtx, m, s, c.Stall)
					}
				}
			}
		}
	}()
	runFaults(liveCtx, start, fe, plan(c, fe))
	if err := <-produced; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		ev.add("error", fmt.Sprintf("producer: %v", err))
	}
	ev.add("end", "producer stopped, faults over; draining")

	// Drain, stop, check.
	ends, err := endOffsets(context.WithoutCancel(ctx), broker, w.EventTopics())
	if err != nil {
		return 1, err
	}
	for _, e := range ends {
		res.Produced += e
	}
	drained := drain(ctx, c.Drain, pg, res.Table, bulk, res.Produced, ev)
	stopSampling()
	<-sampled
	ms.closeAll(c.StopWait)
	if !drained {
		res.Failures = append(res.Failures, fmt.Sprintf("the sinks did not hold every record %v after the producer stopped (a stall; see the drain-timeout event)", c.Drain))
		finish(ctx, c, broker, res.Table, jobs[final], ev)
	}
	res.Events = ev.all()
	for _, e := range res.Events {
		switch e.Kind {
		case "unexpected-exit":
			res.UnexpectedExits++
			res.Failures = append(res.Failures, fmt.Sprintf("at %.1f min: %s", e.T, e.Detail))
		case "stall", "hang":
			res.Failures = append(res.Failures, fmt.Sprintf("at %.1f min: %s: %s", e.T, e.Kind, e.Detail))
		}
	}
	pgCheck, err := checkPostgres(context.WithoutCancel(ctx), pg, res.Table)
	if err != nil {
		return 1, err
	}
	res.Checks = append(res.Checks, pgCheck.result("postgres", ends))
	bulk.mu.Lock()
	res.Checks = append(res.Checks, bulk.check.result("bulk", ends))
	res.BulkRequests, res.BulkRefused, res.BulkDupsAt = bulk.requests, bulk.refused, bulk.dupsAt
	bulk.mu.Unlock()
	res.Failures = append(res.Failures, res.Checks[0].failures(true)...)
	res.Failures = append(res.Failures, res.Checks[1].failures(false)...)
	if res.DeadLetters, err = countDeadLetters(c.Out); err != nil {
		return 1, err
	}
	if res.DeadLetters > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%d dead letters", res.DeadLetters))
	}
	res.Flat = flatnessOf(res.Samples, "a", c.Duration.Minutes(), c.Flat)
	for _, f := range res.Flat {
		if !f.Flat {
			res.Failures = append(res.Failures, fmt.Sprintf("member a's %s not flat: %s", f.Metric, f))
		}
	}
	if err := writeResults(c.Out, c.Doc, res); err != nil {
		return 1, err
	}
	fmt.Fprint(stdout, summary(res))
	if len(res.Failures) > 0 {
		return 1, nil
	}
	return 0, nil
}

// build compiles cmd/signalbox into dir with the go tool, from the module
// this command is run in.
func build(dir string) (string, error) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("-signalbox not given, and no module to build it from: %w", err)
	}
	bin, err := filepath.Abs(filepath.Join(dir, "signalbox"))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/signalbox")
	cmd.Dir = strings.TrimSpace(string(root))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/signalbox: %v\n%s", err, out)
	}
	return bin, nil
}

// The members: a runs throughout, b comes and goes, final (until:
// end-offsets) runs alone at the end when the sinks did not drain.
const final = "final"

var memberNames = []string{"a", "b", final}

// finish runs the final member to the end offsets, for at most c.Drain
// plus the group's rebalance timeout: what it delivers was stalled, not lost.
// Killed members are evicted from the group first, as an operator would,
// so that its join does not wait for their sessions to time out.
func finish(ctx context.Context, c config, b remote, group, job string, ev *eventLog) {
	ctx, cancel := context.WithTimeout(ctx, c.Drain+90*time.Second)
	defer cancel()
	if cl, err := kgo.NewClient(b.ClientOptions()...); err == nil {
		if err := crashtest.EvictGroup(ctx, cl, group); err != nil {
			ev.add("error", err.Error())
		}
		cl.Close()
	}
	logPath := filepath.Join(c.Out, "member-final.log")
	logf, err := os.Create(logPath)
	if err != nil {
		ev.add("error", err.Error())
		return
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, c.Bin, "run", "-c", job, "--log-format", "json")
	cmd.Stdout, cmd.Stderr = logf, logf
	ev.add("final-run", "signalbox run with until: end-offsets, alone in the group")
	if err := cmd.Run(); err != nil {
		ev.addTail("final-run-failed", fmt.Sprintf("%v (log: %s)", err, logPath), tail(logPath, 8))
		return
	}
	ev.add("final-run-done", "exit 0")
}

// writeJob writes member name's job file: the event topics (sorted, so that
// input order is topic order), a PostgreSQL and a bulk sink, and a JSONL
// dead-letter sink of the member's own.
func writeJob(c config, w *workload.Workload, addrs []string, bulkURL, table, name string) (string, error) {
	out, err := filepath.Abs(c.Out)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	q, _ := json.Marshal(addrs)
	until := "live"
	if name == final {
		until = "end-offsets"
	}
	fmt.Fprintf(&b, "brokers: %s\ngroup: %s\nstart: earliest\ndelay: %s\nlate: emit\nuntil: %s\ncheckpoint_interval: 1s\ninputs:\n", q, table, c.Delay, until)
	ts := w.EventTopics()
	slices.Sort(ts)
	for _, t := range ts {
		fmt.Fprintf(&b, "  - topic: %s\n    time: field\n    time_field: %s\n    time_format: unix_ms\n", t, workload.TimeField)
	}
	fmt.Fprintf(&b, "sinks:\n  - type: postgres\n    dsn_env: SIGNALBOX_PG_DSN\n    table: %s\n", table)
	fmt.Fprintf(&b, "  - type: bulk\n    url: %s\n    index: soak\n    doc_id: offset\n    versioning: none\n", bulkURL)
	fmt.Fprintf(&b, "dead_letter:\n  type: jsonl\n  path: %s\n", filepath.Join(out, "dead-letter-"+name+".jsonl"))
	path := filepath.Join(out, "job-"+name+".yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// endOffsets lists the end offset of every partition of topics.
func endOffsets(ctx context.Context, b remote, ts []string) (map[topicPart]int64, error) {
	cl, err := kgo.NewClient(b.ClientOptions()...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, ts...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets: %w", err)
	}
	ends := map[topicPart]int64{}
	listed.Each(func(o kadm.ListedOffset) { ends[topicPart{o.Topic, o.Partition}] = o.Offset })
	return ends, nil
}

// countDeadLetters counts the lines of the members' dead-letter files.
func countDeadLetters(dir string) (int64, error) {
	var n int64
	for _, name := range memberNames {
		b, err := os.ReadFile(filepath.Join(dir, "dead-letter-"+name+".jsonl"))
		if err != nil && !os.IsNotExist(err) {
			return n, err
		}
		n += int64(strings.Count(string(b), "\n"))
	}
	return n, nil
}

// writeResults writes soak.json, soak.svg and soak.md into dir and, with
// doc set, splices the figures into doc (writeDoc).
func writeResults(dir, doc string, r results) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.json"), b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.md"), []byte(markdown(r)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.svg"), chartOf(r), 0o644); err != nil {
		return err
	}
	if doc != "" {
		return writeDoc(doc, b, r)
	}
	return nil
}

// replot redraws the chart and the figures of a results file into dir (and
// doc).
func replot(path, dir, doc string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 1, err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return 1, fmt.Errorf("%s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 1, err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.svg"), chartOf(r), 0o644); err != nil {
		return 1, err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.md"), []byte(markdown(r)), 0o644); err != nil {
		return 1, err
	}
	if doc != "" {
		return 0, writeDoc(doc, b, r)
	}
	return 0, nil
}
