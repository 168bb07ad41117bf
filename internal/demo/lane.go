package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/internal/workload"
	"github.com/signalbox/signalbox/sources/kafka"
)

// Gate names the offset gate, signalbox's own strategy.
const Gate = "offset-gate"

// Strategy is one lane's watermark strategy: a name and the constructor the
// engine calls once per co-partitioned task.
type Strategy struct {
	Name string
	New  func() strategy.Strategy
}

// GateStrategy is the offset gate with delay bound delay.
func GateStrategy(delay time.Duration) Strategy {
	return Strategy{Name: Gate, New: func() strategy.Strategy { return strategy.OffsetGate(delay) }}
}

// Options configure the lanes of a run. The zero value of every field takes
// the default in its comment (see EnsureDefaults).
type Options struct {
	Workload workload.Options `json:"workload"`
	Delay    time.Duration    `json:"delay"` // delay bound of every lane; default 300ms
	// FetchBytes is the per-partition fetch size of every consumer. Default
	// 64 KiB: with 16 KiB producer batches (workload.BatchBytes) a replay
	// streams over many fetches, as the replay of a real week does, instead
	// of arriving in one response.
	FetchBytes int32 `json:"fetch_bytes"`
	// ReplayTimeout bounds the wait for every lane to finish replaying.
	// Default 3m.
	ReplayTimeout time.Duration `json:"replay_timeout"`
	// Drain is how long the lanes keep running after the last live record
	// is acknowledged. Default Delay + 500ms, plus the checkpoint interval
	// (1s if unset) with a Visible sink.
	Drain time.Duration `json:"-"`
	// Visible adds a real sink to every lane of Ordering, one of
	// VisibleKinds, and a reader of what it wrote, which measures visible
	// latency. Default "": none.
	Visible string `json:"visible,omitempty"`
	// CheckpointInterval is the engine's (signalbox.WithCheckpointInterval);
	// 0: the engine's default.
	CheckpointInterval time.Duration `json:"checkpoint_interval,omitempty"`
	// Registry is the URL of the schema registry of the workload's Avro
	// topics, for Replay (Setup's cluster serves one; Ordering uses it).
	Registry string `json:"-"`
	// ReferenceTable reads the reference topic as a table
	// (workload.ReferenceTable) that enriches every event (EnrichMap)
	// instead of forwarding its records. Default false; RunDemo sets it.
	ReferenceTable bool `json:"reference_table,omitempty"`
	// Window adds the demo's window (demoWindow: events per key per hour)
	// to every lane, checked against a recount of what the lane emitted
	// (Result.Window). Default false; RunDemo sets it.
	Window bool `json:"window,omitempty"`
	// OnPipeline, when set, is called with each ordering lane's strategy
	// name and stats before the lane runs (the demo serves them on its
	// admin server).
	OnPipeline func(lane string, stats func() signalbox.Stats) `json:"-"`
}

// EnsureDefaults fills every unset field with its default.
func (o *Options) EnsureDefaults() {
	o.Workload.EnsureDefaults()
	if o.Delay <= 0 {
		o.Delay = 300 * time.Millisecond
	}
	if o.FetchBytes <= 0 {
		o.FetchBytes = 64 << 10
	}
	if o.ReplayTimeout <= 0 {
		o.ReplayTimeout = 3 * time.Minute
	}
	if o.Drain <= 0 {
		o.Drain = o.Delay + 500*time.Millisecond
		if o.Visible != "" {
			o.Drain += cmp.Or(o.CheckpointInterval, time.Second)
		}
	}
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	errs := []error{o.Workload.Validate()}
	if o.Delay < o.Workload.Disorder {
		errs = append(errs, fmt.Errorf("demo: delay %v is below the workload's disorder bound %v", o.Delay, o.Workload.Disorder))
	}
	if o.Visible != "" && !slices.Contains(VisibleKinds, o.Visible) {
		errs = append(errs, fmt.Errorf("demo: visible sink %q is not one of %s", o.Visible, strings.Join(VisibleKinds, ", ")))
	}
	if o.Visible != "" && o.Visible != VisibleJSONL && o.Workload.ProducerDelayed > 0 {
		errs = append(errs, fmt.Errorf("demo: visible sink %s carries no late flag: it cannot measure with producer-delayed records", o.Visible))
	}
	return errors.Join(errs...)
}

// Result is one lane's figures in the ordering run.
type Result struct {
	Strategy      string  `json:"strategy"`
	In            int64   `json:"in"`
	Out           int64   `json:"out"`
	Timeless      int64   `json:"timeless"`
	Parked        int64   `json:"parked_at_end"`
	OutOfOrder    int64   `json:"out_of_order"`
	OutOfOrderPct float64 `json:"out_of_order_pct"` // of the timed records emitted
	Late          int64   `json:"late"`
	Enriched      int64   `json:"enriched"`       // emitted enriched from the reference table (ReferenceTable)
	Decoded       int64   `json:"decoded"`        // emitted with a value decoded from Avro
	WriterSchemas int     `json:"writer_schemas"` // distinct writer schema ids among them
	LiveLatency   Latency `json:"live_latency_beyond_delay"`
	// VisibleLatency is measured by the reader of the Visible sink: the
	// wall time when the reader sees a live record not released late −
	// (event time + delay).
	VisibleLatency Latency `json:"visible_latency_beyond_delay"`
	ReplaySeconds  float64 `json:"replay_seconds"` // ordering run, slow start included
	// Window is the demo's window against a recount (Options.Window).
	Window WindowCheck `json:"window"`
}

// Throughput is one bounded replay of the history.
type Throughput struct {
	Records      int64   `json:"records"`
	Seconds      float64 `json:"seconds"`
	PerSecond    float64 `json:"records_per_second"`
	PeakRSSBytes int64   `json:"peak_rss_bytes,omitempty"` // 0: not measured
}

// Replay replays the history on brokers once with strategy s in bounded
// mode, and reports the rate and this process's peak RSS (VmHWM). The time
// runs from before connecting to the last record written to the sink.
func Replay(ctx context.Context, o Options, brokers []string, s Strategy, log *zap.Logger) (Throughput, error) {
	o.EnsureDefaults()
	w, err := workload.New(o.Workload)
	if err != nil {
		return Throughput{}, err
	}
	start := time.Now()
	l, err := newLane(s, &o, w, brokers, o.Registry, signalbox.UntilEndOffsets, nil, log)
	if err != nil {
		return Throughput{}, err
	}
	if err := l.p.Run(ctx); err != nil {
		return Throughput{}, fmt.Errorf("demo: replay by %s: %w", s.Name, err)
	}
	// The replay ends with the last record written: Run's clean-up after
	// it (closing the source) is not replay work.
	n, el := l.p.Stats().In, l.m.lastWrite.Sub(start)
	return Throughput{Records: n, Seconds: el.Seconds(), PerSecond: float64(n) / el.Seconds(), PeakRSSBytes: PeakRSS()}, nil
}

// PeakRSS reads VmHWM from /proc/self/status; 0 when unavailable.
func PeakRSS() int64 {
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

// lane is one strategy's pipeline with its measuring sink, and optionally a
// real sink with its reader.
type lane struct {
	name string
	p    *signalbox.Pipeline
	m    *measure
	win  *windowSink // Options.Window
	err  error
	done chan struct{}

	tap      *tap
	visible  []float64    // ms beyond the delay, written by the reader goroutine
	seen     atomic.Int64 // timed records the reader saw
	readErr  error
	readDone chan struct{}
}

func newLane(s Strategy, o *Options, w *workload.Workload, brokers []string, registryURL string, until signalbox.Until, tp *tap, log *zap.Logger) (*lane, error) {
	var avro signalbox.ValueDecoder
	if len(w.AvroEventTopics()) > 0 {
		var err error
		if avro, err = avroDecoder(registryURL); err != nil {
			return nil, err
		}
	}
	kc := kafka.Config{Brokers: brokers, Topics: w.Topics(), PartitionMaxBytes: o.FetchBytes, Logger: log.Named(s.Name)}
	inputs := w.Inputs(avro)
	m := newMeasure(w.HistoryEnd(), o.Delay)
	var opts []signalbox.Option
	if o.ReferenceTable {
		kc.Tables = []string{workload.ReferenceTopic}
		inputs = append(w.EventInputs(avro), w.ReferenceTable())
		var err error
		if opts, err = enrich(m); err != nil {
			return nil, err
		}
	}
	src, err := kafka.New(kc)
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		signalbox.WithInputs(inputs...),
		signalbox.WithSink(m),
		signalbox.WithDelay(o.Delay),
		strategy.Option(s.New).(signalbox.Option),
		signalbox.WithUntil(until),
		signalbox.WithLogger(log.Named(s.Name)),
	)
	if tp != nil {
		opts = append(opts, signalbox.WithSink(tp.sink))
	}
	var ws *windowSink
	if o.Window {
		ws = newWindowSink()
		m.window = ws
		opts = append(opts, signalbox.WithWindow(demoWindow(), ws))
	}
	if o.CheckpointInterval > 0 {
		opts = append(opts, signalbox.WithCheckpointInterval(o.CheckpointInterval))
	}
	p, err := signalbox.New(src, opts...)
	if err != nil {
		return nil, err
	}
	return &lane{name: s.Name, p: p, m: m, win: ws, done: make(chan struct{}), tap: tp, readDone: make(chan struct{})}, nil
}

// avroDecoder decodes the workload's Avro values with the schemas of the
// registry at url, as a job with `format: avro` does.
func avroDecoder(url string) (signalbox.ValueDecoder, error) {
	if url == "" {
		return nil, errors.New("demo: the workload has Avro topics but no schema registry")
	}
	reg, err := registry.New(registry.Config{URLs: []string{url}})
	if err != nil {
		return nil, err
	}
	d, err := formats.New(formats.Config{Format: formats.Avro, Registry: reg})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// read runs the lane's reader until ctx is done (see tap.read).
func (l *lane) read(ctx context.Context) {
	defer close(l.readDone)
	l.readErr = l.tap.read(ctx, func(et int64, late bool) {
		l.seen.Add(1)
		if et > l.m.liveFrom && !late {
			now := float64(time.Now().UnixNano()) / 1e6
			l.visible = append(l.visible, now-float64(et+l.m.delay))
		}
	})
}

// stopReaders lets every reader see what its sink wrote (up to timeout),
// then stops them. It reports a reader that had not seen everything by
// then: its visible latency would leave out the slowest records.
func stopReaders(lanes []*lane, stop func(), timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var short error
	for _, l := range lanes {
		want := l.m.out - l.m.timeless
		for l.tap != nil && l.seen.Load() < want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if l.tap != nil && l.seen.Load() < want && short == nil {
			short = fmt.Errorf("demo: the reader of lane %s saw %d of %d records within %v", l.name, l.seen.Load(), want, timeout)
		}
	}
	stop()
	for _, l := range lanes {
		if l.tap != nil {
			<-l.readDone
		}
	}
	return short
}

func (l *lane) result() Result {
	st := l.p.Stats()
	r := Result{
		Strategy: l.name, In: st.In, Out: l.m.out, Timeless: l.m.timeless, Parked: int64(st.Parked),
		OutOfOrder: l.m.ooo, Late: st.LateTotal().Count, LiveLatency: summarize(l.m.lat),
		Enriched: l.m.enriched, Decoded: l.m.decoded, WriterSchemas: len(l.m.schemas),
		VisibleLatency: summarize(l.visible), ReplaySeconds: st.ReplayTime.Seconds(),
	}
	if l.win != nil {
		var open int64
		for _, w := range st.Windows {
			open += w.Open
		}
		r.Window = l.win.check(open)
	}
	if timed := l.m.out - l.m.timeless; timed > 0 {
		r.OutOfOrderPct = 100 * float64(l.m.ooo) / float64(timed)
	}
	return r
}

// Scenario is an embedded broker with the history produced into it.
type Scenario struct {
	Cluster  *embedded.Cluster
	Workload *workload.Workload
	History  workload.History
}

// Setup starts an embedded broker and produces o's history into it. Close
// the scenario when done.
func Setup(ctx context.Context, o Options, log *zap.Logger) (*Scenario, error) {
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
	return &Scenario{Cluster: c, Workload: w, History: hist}, nil
}

// Close stops the broker.
func (sc *Scenario) Close() { sc.Cluster.Close() }

// Ordering runs every strategy at once on the scenario, from earliest, with
// the slow topics slow to connect, then live traffic (none: bounded). It
// returns the lanes' results in the order of strategies.
func (sc *Scenario) Ordering(ctx context.Context, o Options, strategies []Strategy, log *zap.Logger) ([]Result, workload.Live, error) {
	o.EnsureDefaults()
	until := signalbox.UntilLive
	if o.Workload.LiveFor <= 0 {
		until = signalbox.UntilEndOffsets
	}
	var dir string
	if o.Visible == VisibleJSONL {
		var err error
		if dir, err = os.MkdirTemp("", "signalbox-demo-"); err != nil {
			return nil, workload.Live{}, err
		}
		defer os.RemoveAll(dir)
	}
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	lanes := make([]*lane, len(strategies))
	for i, s := range strategies {
		var tp *tap
		if o.Visible != "" {
			var err error
			if tp, err = newTap(ctx, o.Visible, s.Name, dir, sc.Cluster, o.Workload.Partitions); err != nil {
				return nil, workload.Live{}, err
			}
		}
		l, err := newLane(s, &o, sc.Workload, sc.Cluster.Addrs(), sc.Cluster.RegistryURL(), until, tp, log)
		if err != nil {
			return nil, workload.Live{}, err
		}
		lanes[i] = l
		if o.OnPipeline != nil {
			o.OnPipeline(s.Name, l.p.Stats)
		}
		if tp != nil {
			go l.read(readCtx)
		}
	}
	stopSlow := sc.Workload.SlowStart(sc.Cluster)
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
		live, err = sc.Workload.ProduceLive(ctx, sc.Cluster)
		if err == nil {
			select {
			case <-time.After(o.Drain):
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
	}
	if until == signalbox.UntilLive || err != nil {
		cancel()
	}
	wg.Wait()
	if serr := stopReaders(lanes, stopRead, 10*time.Second); err == nil {
		err = serr
	}
	res := make([]Result, len(lanes))
	for i, l := range lanes {
		if l.err != nil && err == nil {
			err = fmt.Errorf("demo: lane %s: %w", l.name, l.err)
		}
		if l.readErr != nil && err == nil {
			err = fmt.Errorf("demo: reader of lane %s: %w", l.name, l.readErr)
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
					return fmt.Errorf("demo: lane %s: %w", l.name, l.err)
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
			return fmt.Errorf("demo: lanes still replaying after %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
