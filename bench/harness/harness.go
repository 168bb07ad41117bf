package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/bench/baseline"
	"github.com/signalbox/signalbox/bench/workload"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/sources/kafka"
)

// The strategies, by name.
const (
	Gate      = "offset-gate"
	OneLayer  = "timeout-1-layer"
	TwoLayers = "timeout-2-layers"
	Window    = "fixed-window"
	// Raw is the ceiling: raw sarama consumption, no ordering.
	Raw = "raw-sarama"
)

// AllStrategies lists the strategies in report order.
var AllStrategies = []string{Gate, OneLayer, TwoLayers, Window}

// Options configure a run. The zero value of every field takes the default
// in its comment (see EnsureDefaults).
type Options struct {
	Workload     workload.Options `json:"workload"`
	Delay        time.Duration    `json:"delay"`         // delay bound of every lane; default 300ms
	IdleTimeout  time.Duration    `json:"idle_timeout"`  // partition layer; default 1s
	InputTimeout time.Duration    `json:"input_timeout"` // input layer; default 1s
	Window       time.Duration    `json:"window"`        // fixed window; default 2s
	Strategies   []string         `json:"strategies"`    // default AllStrategies
	Throughput   bool             `json:"throughput"`    // run phase 1
	// FetchBytes is the per-partition fetch size of every consumer, the
	// ceiling's too. Default 64 KiB: with 16 KiB producer batches
	// (workload.BatchBytes) a replay streams over many fetches, as the
	// replay of a real week does, instead of arriving in one response.
	FetchBytes int32 `json:"fetch_bytes"`
	// ReplayTimeout bounds the wait for every lane to finish replaying.
	// Default 3m.
	ReplayTimeout time.Duration `json:"replay_timeout"`
	// OnPipeline, when set, is called with each ordering lane's name and
	// stats before the lane runs (the demo serves them on its admin server).
	OnPipeline func(lane string, stats func() signalbox.Stats) `json:"-"`
}

// EnsureDefaults fills every unset field with its default.
func (o *Options) EnsureDefaults() {
	o.Workload.EnsureDefaults()
	if o.Delay <= 0 {
		o.Delay = 300 * time.Millisecond
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = time.Second
	}
	if o.InputTimeout <= 0 {
		o.InputTimeout = time.Second
	}
	if o.Window <= 0 {
		o.Window = 2 * time.Second
	}
	if len(o.Strategies) == 0 {
		o.Strategies = AllStrategies
	}
	if o.FetchBytes <= 0 {
		o.FetchBytes = 64 << 10
	}
	if o.ReplayTimeout <= 0 {
		o.ReplayTimeout = 3 * time.Minute
	}
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	errs := []error{o.Workload.Validate()}
	if o.Delay < o.Workload.Disorder {
		errs = append(errs, fmt.Errorf("harness: delay %v is below the workload's disorder bound %v", o.Delay, o.Workload.Disorder))
	}
	for _, s := range o.Strategies {
		if _, err := o.strategy(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// strategy returns the constructor of a strategy by name: the engine builds
// one per co-partitioned task.
func (o *Options) strategy(name string) (func() signalbox.Strategy, error) {
	switch name {
	case Gate:
		return func() signalbox.Strategy { return signalbox.NewOffsetGate(o.Delay) }, nil
	case OneLayer:
		return func() signalbox.Strategy { return baseline.NewOneLayer(o.Delay, o.IdleTimeout) }, nil
	case TwoLayers:
		return func() signalbox.Strategy { return baseline.NewTwoLayers(o.Delay, o.IdleTimeout, o.InputTimeout) }, nil
	case Window:
		return func() signalbox.Strategy { return baseline.NewFixedWindow(o.Window) }, nil
	}
	return nil, fmt.Errorf("harness: strategy %q is not one of %s", name, strings.Join(AllStrategies, ", "))
}

// Result is one strategy's figures.
type Result struct {
	Strategy      string  `json:"strategy"`
	In            int64   `json:"in"`
	Out           int64   `json:"out"`
	Timeless      int64   `json:"timeless"`
	Parked        int64   `json:"parked_at_end"`
	OutOfOrder    int64   `json:"out_of_order"`
	OutOfOrderPct float64 `json:"out_of_order_pct"` // of the timed records emitted
	Late          int64   `json:"late"`
	LiveLatency   Latency `json:"live_latency_beyond_delay"`
	ReplaySeconds float64 `json:"replay_seconds"` // ordering run, slow start included
	// Throughput phase (zero when not run).
	Throughput Throughput `json:"throughput"`
	Ratio      float64    `json:"throughput_ratio"` // to the ceiling
}

// Throughput is one bounded replay of the history.
type Throughput struct {
	Records      int64   `json:"records"`
	Seconds      float64 `json:"seconds"`
	PerSecond    float64 `json:"records_per_second"`
	PeakRSSBytes int64   `json:"peak_rss_bytes,omitempty"` // 0: not measured
}

// Report is a whole run.
type Report struct {
	Command   string        `json:"command"`
	Seed      int64         `json:"seed"`
	Cores     int           `json:"cores"`
	GoVersion string        `json:"go_version"`
	Started   time.Time     `json:"started"`
	Took      time.Duration `json:"took"`
	Options   Options       `json:"options"`
	History   int64         `json:"history_records"`
	Live      int64         `json:"live_records"`
	// ProducerDelayed is how many live records were produced already late.
	ProducerDelayed int64      `json:"producer_delayed"`
	SlowTopics      []string   `json:"slow_topics"`
	Results         []Result   `json:"results"`
	Ceiling         Throughput `json:"ceiling"`
}

// ThroughputJob is one replay of phase 1, serializable so that a Runner can
// hand it to a subprocess.
type ThroughputJob struct {
	Strategy string   `json:"strategy"` // a strategy name, or Raw
	Brokers  []string `json:"brokers"`
	Options  Options  `json:"options"`
}

// Runner runs one ThroughputJob. InProcess is the default; cmd/benchall
// re-executes itself to run each job in a fresh process.
type Runner func(ctx context.Context, job ThroughputJob, log *zap.Logger) (Throughput, error)

// InProcess runs the job in this process. Peak RSS is not reported: the
// process also holds the broker and the other lanes.
func InProcess(ctx context.Context, job ThroughputJob, log *zap.Logger) (Throughput, error) {
	t, err := RunThroughput(ctx, job, log)
	t.PeakRSSBytes = 0
	return t, err
}

// RunThroughput replays the history of job's brokers once, with the job's
// strategy in bounded mode or with raw sarama, and reports the rate and this
// process's peak RSS (VmHWM). The time runs from before connecting to the
// last record written to the sink (raw: the last record consumed).
func RunThroughput(ctx context.Context, job ThroughputJob, log *zap.Logger) (Throughput, error) {
	o := job.Options
	o.EnsureDefaults()
	w, err := workload.New(o.Workload)
	if err != nil {
		return Throughput{}, err
	}
	start := time.Now()
	var (
		n   int64
		end time.Time
	)
	if job.Strategy == Raw {
		n, err = rawConsume(ctx, job.Brokers, w.Topics(), o.FetchBytes)
		end = time.Now()
	} else {
		var l *lane
		if l, err = newLane(job.Strategy, &o, w, job.Brokers, signalbox.UntilEndOffsets, log); err == nil {
			err = l.p.Run(ctx)
			// The replay ends with the last record written: Run's clean-up
			// after it (closing the source) is not replay work.
			n, end = l.p.Stats().In, l.m.lastWrite
		}
	}
	el := end.Sub(start)
	if err != nil {
		return Throughput{}, fmt.Errorf("harness: throughput of %s: %w", job.Strategy, err)
	}
	return Throughput{Records: n, Seconds: el.Seconds(), PerSecond: float64(n) / el.Seconds(), PeakRSSBytes: peakRSS()}, nil
}

// peakRSS reads VmHWM from /proc/self/status; 0 when unavailable.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// lane is one strategy's pipeline with its measuring sink.
type lane struct {
	name string
	p    *signalbox.Pipeline
	m    *measure
	err  error
	done chan struct{}
}

func newLane(name string, o *Options, w *workload.Workload, brokers []string, until signalbox.Until, log *zap.Logger) (*lane, error) {
	strat, err := o.strategy(name)
	if err != nil {
		return nil, err
	}
	src, err := kafka.New(kafka.Config{Brokers: brokers, Topics: w.Topics(), PartitionMaxBytes: o.FetchBytes, Logger: log.Named(name)})
	if err != nil {
		return nil, err
	}
	m := newMeasure(w.HistoryEnd(), o.Delay)
	p, err := signalbox.New(src,
		signalbox.WithInputs(w.Inputs()...),
		signalbox.WithSink(m),
		signalbox.WithDelay(o.Delay),
		signalbox.WithStrategy(strat),
		signalbox.WithUntil(until),
		signalbox.WithLogger(log.Named(name)),
	)
	if err != nil {
		return nil, err
	}
	return &lane{name: name, p: p, m: m, done: make(chan struct{})}, nil
}

func (l *lane) result() Result {
	st := l.p.Stats()
	r := Result{
		Strategy: l.name, In: st.In, Out: l.m.out, Timeless: l.m.timeless, Parked: int64(st.Parked),
		OutOfOrder: l.m.ooo, Late: st.LateTotal().Count, LiveLatency: summarize(l.m.lat),
		ReplaySeconds: st.ReplayTime.Seconds(),
	}
	if timed := l.m.out - l.m.timeless; timed > 0 {
		r.OutOfOrderPct = 100 * float64(l.m.ooo) / float64(timed)
	}
	return r
}

// scenario is the broker with the history produced into it.
type scenario struct {
	c    *embedded.Cluster
	w    *workload.Workload
	hist workload.History
}

func setup(ctx context.Context, o *Options, log *zap.Logger) (*scenario, error) {
	w, err := workload.New(o.Workload)
	if err != nil {
		return nil, err
	}
	c, err := embedded.Start(w.ClusterOptions()...)
	if err != nil {
		return nil, err
	}
	hist, err := w.ProduceHistory(ctx, c)
	if err != nil {
		c.Close()
		return nil, err
	}
	log.Info("history produced", zap.Int64("records", hist.Records), zap.Int64("reference", hist.Reference), zap.Duration("took", hist.Took))
	return &scenario{c: c, w: w, hist: hist}, nil
}

// ordering is phase 2: every strategy at once, slow start, then live
// traffic. It returns the lanes' results in the order of names.
func (sc *scenario) ordering(ctx context.Context, o *Options, names []string, log *zap.Logger) ([]Result, workload.Live, error) {
	until := signalbox.UntilLive
	if o.Workload.LiveFor <= 0 {
		until = signalbox.UntilEndOffsets
	}
	lanes := make([]*lane, len(names))
	for i, name := range names {
		l, err := newLane(name, o, sc.w, sc.c.Addrs(), until, log)
		if err != nil {
			return nil, workload.Live{}, err
		}
		lanes[i] = l
		if o.OnPipeline != nil {
			o.OnPipeline(name, l.p.Stats)
		}
	}
	stopSlow := sc.w.SlowStart(sc.c)
	defer stopSlow()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(l.done)
			l.err = l.p.Run(runCtx)
		}()
	}
	var live workload.Live
	err := waitReplayed(ctx, lanes, o.ReplayTimeout)
	if err == nil && until == signalbox.UntilLive {
		log.Info("every lane replayed the history; live traffic starts", zap.Duration("for", o.Workload.LiveFor))
		live, err = sc.w.ProduceLive(ctx, sc.c)
		if err == nil {
			drain := max(o.Delay, o.Window) + 500*time.Millisecond
			select {
			case <-time.After(drain):
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
	}
	if until == signalbox.UntilLive || err != nil {
		cancel()
	}
	wg.Wait()
	res := make([]Result, len(lanes))
	for i, l := range lanes {
		if l.err != nil && err == nil {
			err = fmt.Errorf("harness: lane %s: %w", l.name, l.err)
		}
		res[i] = l.result()
	}
	return res, live, err
}

// waitReplayed waits until every lane has reached its start-up end offsets.
func waitReplayed(ctx context.Context, lanes []*lane, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		all := true
		for _, l := range lanes {
			select {
			case <-l.done:
				if l.err != nil {
					return fmt.Errorf("harness: lane %s: %w", l.name, l.err)
				}
				continue
			default:
			}
			if !l.p.Stats().ReplayDone {
				all = false
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("harness: lanes still replaying after %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Run runs the whole comparison and returns the report. runner runs each
// throughput job (nil: InProcess).
func Run(ctx context.Context, o Options, runner Runner, log *zap.Logger) (Report, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
	if runner == nil {
		runner = InProcess
	}
	rep := Report{Seed: o.Workload.Seed, Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Started: time.Now(), Options: o}
	sc, err := setup(ctx, &o, log)
	if err != nil {
		return rep, err
	}
	defer sc.c.Close()
	rep.History, rep.SlowTopics = sc.hist.Records+sc.hist.Reference, sc.w.SlowTopics()
	thr := map[string]Throughput{}
	if o.Throughput {
		for _, name := range append(o.Strategies[:len(o.Strategies):len(o.Strategies)], Raw) {
			t, err := runner(ctx, ThroughputJob{Strategy: name, Brokers: sc.c.Addrs(), Options: o}, log)
			if err != nil {
				return rep, err
			}
			log.Info("throughput", zap.String("strategy", name), zap.Float64("records_per_s", t.PerSecond))
			thr[name] = t
		}
		rep.Ceiling = thr[Raw]
	}
	res, live, err := sc.ordering(ctx, &o, o.Strategies, log)
	rep.Live, rep.ProducerDelayed = live.Records, live.ProducerDelayed
	for i := range res {
		res[i].Throughput = thr[res[i].Strategy]
		if c := rep.Ceiling.PerSecond; c > 0 {
			res[i].Ratio = res[i].Throughput.PerSecond / c
		}
	}
	rep.Results, rep.Took = res, time.Since(rep.Started)
	return rep, err
}
