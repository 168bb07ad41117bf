package demo

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Summary is what `signalbox demo` prints.
type Summary struct {
	Seed             int64    `json:"seed"`
	Topics           int      `json:"topics"`
	Partitions       int      `json:"partitions"`
	SlowTopics       []string `json:"slow_topics"`
	AvroTopics       []string `json:"avro_topics"` // values in Avro, schemas in the embedded registry
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
	Enriched         int64    `json:"enriched"`                  // out with their item from the reference table
	Decoded          int64    `json:"decoded"`                   // out with a value decoded from Avro
	WriterSchemas    int      `json:"writer_schemas"`            // distinct writer schema ids among them
	LiveLatency      Latency  `json:"live_latency_beyond_delay"` // release: at the sink's Write
	VisibleSink      string   `json:"visible_sink,omitempty"`
	VisibleLatency   Latency  `json:"visible_latency_beyond_delay"` // when the sink's reader sees it
	ReplaySeconds    float64  `json:"replay_seconds"`               // with the slow start
	ReplayPerSecond  float64  `json:"replay_records_per_s"`         // bounded replay, no slow start
	ReplayRecords    int64    `json:"replay_records"`               // of that bounded replay
	Took             float64  `json:"took_seconds"`
	// Window is the demo's window (events per key per hour) against a
	// recount of the records emitted.
	Window WindowCheck `json:"window"`
}

// RunDemo runs the offset gate alone on the reference scenario: it starts an
// embedded broker, produces the history, replays it once in bounded mode to
// measure throughput, then runs the job with the slow topics slow to connect
// and live traffic, and summarizes. Late and out-of-order counts are 0
// unless producer-delayed records were asked for (each is late, by design).
//
// Zero fields of o take the defaults of Options, except that the demo has
// live traffic for 5s by default, and reads the reference topic as a
// table that enriches every event (Options.ReferenceTable), as in the seed
// texts' case.
func RunDemo(ctx context.Context, o Options, log *zap.Logger) (Summary, error) {
	start := time.Now()
	if o.Workload.LiveFor == 0 {
		o.Workload.LiveFor = 5 * time.Second
	}
	o.ReferenceTable, o.Window = true, true
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return Summary{}, err
	}
	w := o.Workload
	s := Summary{VisibleSink: o.Visible, Seed: w.Seed, Topics: w.Topics, Partitions: w.Partitions, SlowFor: w.SlowFor.String(), Delay: o.Delay.String()}
	sc, err := Setup(ctx, o, log)
	if err != nil {
		return s, err
	}
	defer sc.Close()
	s.SlowTopics, s.HistoryRecords, s.ReferenceRecords = sc.Workload.SlowTopics(), sc.History.Records, sc.History.Reference
	s.AvroTopics = sc.Workload.AvroEventTopics()
	gate := GateStrategy(o.Delay)
	o.Registry = sc.Cluster.RegistryURL()
	t, err := Replay(ctx, o, sc.Cluster.Addrs(), gate, log)
	if err != nil {
		return s, err
	}
	s.ReplayRecords, s.ReplayPerSecond = t.Records, t.PerSecond
	log.Info("bounded replay measured", zap.Int64("records", t.Records), zap.Float64("records_per_s", t.PerSecond))
	res, live, err := sc.Ordering(ctx, o, []Strategy{gate}, log)
	s.LiveRecords, s.ProducerDelayed = live.Records, live.ProducerDelayed
	if len(res) == 1 {
		r := res[0]
		s.In, s.Out, s.ParkedAtEnd, s.Late, s.OutOfOrder = r.In, r.Out, r.Parked, r.Late, r.OutOfOrder
		s.Enriched, s.Decoded, s.WriterSchemas, s.Window = r.Enriched, r.Decoded, r.WriterSchemas, r.Window
		s.LiveLatency, s.VisibleLatency, s.ReplaySeconds = r.LiveLatency, r.VisibleLatency, r.ReplaySeconds
	}
	s.Took = time.Since(start).Seconds()
	return s, err
}
