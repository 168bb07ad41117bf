package harness

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox/bench/baseline"
	"github.com/signalbox/signalbox/internal/demo"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/internal/workload"
)

// The strategies, by name.
const (
	Gate      = demo.Gate
	OneLayer  = "timeout-1-layer"
	TwoLayers = "timeout-2-layers"
	Window    = "fixed-window"
	// Raw is the ceiling: franz-go's consumer with its defaults, no
	// ordering (RawConsume).
	Raw = "raw-franz-go"
)

// AllStrategies lists the strategies in report order.
var AllStrategies = []string{Gate, OneLayer, TwoLayers, Window}

// Latency and Throughput are the demo's measures.
type (
	Latency    = demo.Latency
	Throughput = demo.Throughput
)

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
	// FetchBytes is the per-partition fetch size of every strategy's
	// consumer; the raw consumer keeps franz-go's defaults. Default 64 KiB
	// (demo.Options).
	FetchBytes int32 `json:"fetch_bytes"`
	// ReplayTimeout bounds the wait for every lane to finish replaying.
	// Default 3m.
	ReplayTimeout time.Duration `json:"replay_timeout"`
}

// lanes returns the options of the demo's lanes: the fixed window's lane
// needs its window to drain after live traffic.
func (o *Options) lanes() demo.Options {
	return demo.Options{Workload: o.Workload, Delay: o.Delay, FetchBytes: o.FetchBytes, ReplayTimeout: o.ReplayTimeout,
		Drain: max(o.Delay, o.Window) + 500*time.Millisecond}
}

// EnsureDefaults fills every unset field with its default.
func (o *Options) EnsureDefaults() {
	l := o.lanes()
	l.EnsureDefaults()
	o.Workload, o.Delay, o.FetchBytes, o.ReplayTimeout = l.Workload, l.Delay, l.FetchBytes, l.ReplayTimeout
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
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	l := o.lanes()
	errs := []error{l.Validate()}
	for _, s := range o.Strategies {
		if _, err := o.strategy(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// strategy returns a strategy by name: the engine builds one per
// co-partitioned task.
func (o *Options) strategy(name string) (demo.Strategy, error) {
	s := demo.Strategy{Name: name}
	switch name {
	case Gate:
		return demo.GateStrategy(o.Delay), nil
	case OneLayer:
		s.New = func() strategy.Strategy { return baseline.NewOneLayer(o.Delay, o.IdleTimeout) }
	case TwoLayers:
		s.New = func() strategy.Strategy { return baseline.NewTwoLayers(o.Delay, o.IdleTimeout, o.InputTimeout) }
	case Window:
		s.New = func() strategy.Strategy { return baseline.NewFixedWindow(o.Window) }
	default:
		return s, fmt.Errorf("harness: strategy %q is not one of %s", name, strings.Join(AllStrategies, ", "))
	}
	return s, nil
}

// Result is one strategy's figures: the ordering run's, and its throughput.
type Result struct {
	demo.Result
	// Throughput phase (zero when not run).
	Throughput Throughput `json:"throughput"`
	Ratio      float64    `json:"throughput_ratio"` // to the ceiling
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
	// CeilingConsumer names the raw consumer measured as Ceiling (Raw).
	CeilingConsumer string `json:"ceiling_consumer"`
	// CPU is the machine's CPU model, Commit the source's git commit
	// (report.Provenance).
	CPU    string `json:"cpu"`
	Commit string `json:"commit"`
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
// strategy in bounded mode (demo.Replay) or with RawConsume, and reports
// the rate and this process's peak RSS (VmHWM). The time runs from before
// connecting to the last record written to the sink (raw: the last record
// consumed).
func RunThroughput(ctx context.Context, job ThroughputJob, log *zap.Logger) (Throughput, error) {
	o := job.Options
	o.EnsureDefaults()
	if job.Strategy != Raw {
		s, err := o.strategy(job.Strategy)
		if err != nil {
			return Throughput{}, err
		}
		return demo.Replay(ctx, o.lanes(), job.Brokers, s, log)
	}
	w, err := workload.New(o.Workload)
	if err != nil {
		return Throughput{}, err
	}
	start := time.Now()
	n, err := RawConsume(ctx, []kgo.Opt{kgo.SeedBrokers(job.Brokers...)}, w.Topics())
	el := time.Since(start)
	if err != nil {
		return Throughput{}, fmt.Errorf("harness: throughput of %s: %w", job.Strategy, err)
	}
	return Throughput{Records: n, Seconds: el.Seconds(), PerSecond: float64(n) / el.Seconds(), PeakRSSBytes: demo.PeakRSS()}, nil
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
	lanes := o.lanes()
	sc, err := demo.Setup(ctx, lanes, log)
	if err != nil {
		return rep, err
	}
	defer sc.Close()
	rep.History, rep.SlowTopics = sc.History.Records+sc.History.Reference, sc.Workload.SlowTopics()
	thr := map[string]Throughput{}
	if o.Throughput {
		for _, name := range append(o.Strategies[:len(o.Strategies):len(o.Strategies)], Raw) {
			t, err := runner(ctx, ThroughputJob{Strategy: name, Brokers: sc.Cluster.Addrs(), Options: o}, log)
			if err != nil {
				return rep, err
			}
			log.Info("throughput", zap.String("strategy", name), zap.Float64("records_per_s", t.PerSecond))
			thr[name] = t
		}
		rep.Ceiling, rep.CeilingConsumer = thr[Raw], Raw
	}
	strategies := make([]demo.Strategy, len(o.Strategies))
	for i, name := range o.Strategies {
		strategies[i], _ = o.strategy(name) // validated above
	}
	res, live, err := sc.Ordering(ctx, lanes, strategies, log)
	rep.Live, rep.ProducerDelayed = live.Records, live.ProducerDelayed
	rep.Results = make([]Result, len(res))
	for i, r := range res {
		x := Result{Result: r, Throughput: thr[r.Strategy]}
		if c := rep.Ceiling.PerSecond; c > 0 {
			x.Ratio = x.Throughput.PerSecond / c
		}
		rep.Results[i] = x
	}
	rep.Took = time.Since(rep.Started)
	return rep, err
}
