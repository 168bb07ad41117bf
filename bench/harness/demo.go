package harness

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/bench/workload"
)

// DemoOptions configure RunDemo. Zero values take the defaults of
// workload.Options and Options, except that the demo has live traffic for 5s
// by default.
type DemoOptions struct {
	Workload workload.Options
	Delay    time.Duration // default 300ms
	// OnPipeline: see Options.OnPipeline; called once, for the ordering run.
	OnPipeline func(lane string, stats func() signalbox.Stats)
}

// Summary is what `signalbox demo` prints.
type Summary struct {
	Seed             int64    `json:"seed"`
	Topics           int      `json:"topics"`
	Partitions       int      `json:"partitions"`
	SlowTopics       []string `json:"slow_topics"`
	SlowFor          string   `json:"slow_for"`
	Delay            string   `json:"delay"`
	HistoryRecords   int64    `json:"history_records"`
	ReferenceRecords int64    `json:"reference_records"`
	LiveRecords      int64    `json:"live_records"`
	ProducerDelayed  int64    `json:"producer_delayed"`
	In               int64    `json:"in"`
	Out              int64    `json:"out"`
	ParkedAtEnd      int64    `json:"parked_at_end"`
	Late             int64    `json:"late"`
	OutOfOrder       int64    `json:"out_of_order"`
	LiveLatency      Latency  `json:"live_latency_beyond_delay"`
	ReplaySeconds    float64  `json:"replay_seconds"`       // with the slow start
	ReplayPerSecond  float64  `json:"replay_records_per_s"` // bounded replay, no slow start
	ReplayRecords    int64    `json:"replay_records"`       // of that bounded replay
	Took             float64  `json:"took_seconds"`
}

// RunDemo runs the offset gate alone on the reference scenario: it starts an
// embedded broker, produces the history, replays it once in bounded mode to
// measure throughput, then runs the job with the slow topics slow to connect
// and live traffic, and summarizes. Late and out-of-order counts are 0
// unless producer-delayed records were asked for (each is late, by design).
func RunDemo(ctx context.Context, d DemoOptions, log *zap.Logger) (Summary, error) {
	start := time.Now()
	if d.Workload.LiveFor == 0 {
		d.Workload.LiveFor = 5 * time.Second
	}
	o := Options{Workload: d.Workload, Delay: d.Delay, Strategies: []string{Gate}, OnPipeline: d.OnPipeline}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return Summary{}, err
	}
	w := o.Workload
	s := Summary{Seed: w.Seed, Topics: w.Topics, Partitions: w.Partitions, SlowFor: w.SlowFor.String(), Delay: o.Delay.String()}
	sc, err := setup(ctx, &o, log)
	if err != nil {
		return s, err
	}
	defer sc.c.Close()
	s.SlowTopics, s.HistoryRecords, s.ReferenceRecords = sc.w.SlowTopics(), sc.hist.Records, sc.hist.Reference
	t, err := RunThroughput(ctx, ThroughputJob{Strategy: Gate, Brokers: sc.c.Addrs(), Options: o}, log)
	if err != nil {
		return s, err
	}
	s.ReplayRecords, s.ReplayPerSecond = t.Records, t.PerSecond
	log.Info("bounded replay measured", zap.Int64("records", t.Records), zap.Float64("records_per_s", t.PerSecond))
	res, live, err := sc.ordering(ctx, &o, o.Strategies, log)
	s.LiveRecords, s.ProducerDelayed = live.Records, live.ProducerDelayed
	if len(res) == 1 {
		r := res[0]
		s.In, s.Out, s.ParkedAtEnd, s.Late, s.OutOfOrder = r.In, r.Out, r.Parked, r.Late, r.OutOfOrder
		s.LiveLatency, s.ReplaySeconds = r.LiveLatency, r.ReplaySeconds
	}
	s.Took = time.Since(start).Seconds()
	return s, err
}
