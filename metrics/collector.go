package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// Phases are the values of the phase label, in catch-up phase order.
var Phases = []string{catchup.Replaying.String(), catchup.CaughtUp.String(), catchup.Behind.String(), catchup.Unknown.String()}

// LatePolicies are the values of the policy label of
// signalbox_late_records_total.
var LatePolicies = []signalbox.LatePolicy{signalbox.LateEmit, signalbox.LateDeadLetter, signalbox.LateDrop}

var (
	partLabels = []string{"topic", "partition"}
	sinkLabels = []string{"sink"}
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("signalbox_"+name, help, labels, nil)
}

// The descriptors, by the Stats field they read.
var (
	dPosition    = desc("partition_position", "The next offset to fetch.", partLabels...)
	dSnapshotEnd = desc("partition_snapshot_end_offset", "The end offset snapshotted when the partition was assigned: its replay ends there.", partLabels...)
	dLatestEnd   = desc("partition_end_offset", "The latest end offset the broker reported (high-water mark, or last stable offset under read_committed).", partLabels...)
	dBehind      = desc("partition_behind_records", "Offsets between the position and the end offset the partition must reach.", partLabels...)
	dPhase       = desc("partition_phase", "1 for the partition's catch-up phase (replaying, caught-up, behind, unknown), 0 for the others.", "topic", "partition", "phase")
	dPaused      = desc("partition_paused", "1 while the partition is paused by alignment or the memory bound.", partLabels...)
	dHolds       = desc("partition_holds_watermark", "1 while the partition holds the watermark back (it is not caught up); the lowest bound sets the watermark.", partLabels...)
	dSchemaHeld  = desc("partition_schema_held_records", "Records of the partition held because their schema cannot be fetched yet (registry down); the partition holds the watermark meanwhile. Present only while held.", partLabels...)
	dSchemaHolds = desc("schema_held_partitions", "Partitions held because a record's schema cannot be fetched yet (registry down).")
	dCommitted   = desc("partition_committed_offset", "The last offset committed for the partition: where a restart resumes.", partLabels...)

	dWatermark     = desc("watermark_seconds", "The released watermark as Unix time: every record at or before it has been released. Absent before any evidence.")
	dWatermarkLag  = desc("watermark_lag_seconds", "Wall-clock time minus the released watermark. Absent before any evidence.")
	dTaskWatermark = desc("task_watermark_seconds", "The watermark of one co-partitioned task (partition number task of every input) as Unix time.", "task")
	dReplayDone    = desc("replay_done", "1 once every partition reached its start-up end offset.")
	dRemaining     = desc("replay_remaining_records", "Offsets still to read before the input's replay is done.", "input")
	dETA           = desc("replay_eta_seconds", "Estimated time until the input's replay is done, from its read rate. Absent while unknown.", "input")

	dIn         = desc("records_in_total", "Records received from the source.")
	dOut        = desc("records_out_total", "Records released to the sinks.")
	dDead       = desc("records_dead_lettered_total", "Records sent to the dead-letter sink.")
	dFiltered   = desc("records_filtered_total", "Records skipped by a filter.")
	dExprFail   = desc("expression_failed_total", "Records dead-lettered because a processing expression failed on them, by the expression's path in the job file.", "expression")
	dWinOpen    = desc("window_open", "Windows open now (emitted once the watermark passes their end plus allowed_lateness), by window name.", "window")
	dWinKeys    = desc("window_keys", "Keys with an open window, by window name.", "window")
	dWinResults = desc("window_results_total", "Window results emitted, by window name.", "window")
	dWinBytes   = desc("window_state_bytes", "Size of a window's state (open windows, their keys, First and Last values), about, wherever it lives, by window name.", "window")
	dWinLate    = desc("window_late_total", "Records late for one of their windows (already emitted): in none of those windows, by window name.", "window")
	dTimeless   = desc("records_timeless_total", "Records of time: none inputs passed straight through.")
	dTableVer   = desc("table_versions_total", "Records of tables' topics applied to their table (tables): never output.")
	dBeyond     = desc("table_lookups_beyond_history_total", "Lookups older than the table's history, answered with the oldest version kept.", "table")
	dSkipped    = desc("records_skipped_total", "Records skipped after a restart because they were already emitted.")
	dFuture     = desc("records_future_total", "Records whose event time was too far ahead of the evidence clock (max_future): dead-lettered, never parked.")
	dLate       = desc("late_records_total", "Late records (event time at or before the watermark), by what the late policy did with them; a partition has a series from its first late record, for the job's policy only.", "topic", "partition", "policy")
	dLateness   = desc("late_lateness_seconds", "How late each late record was: the watermark minus its event time.", partLabels...)

	dParked      = desc("parked_records", "Records parked now, waiting for the watermark.")
	dParkedBytes = desc("parked_bytes", "Memory accounted to parked records now.")
	dSpilled     = desc("spilled_records", "Parked records held only on disk (durable store).")
	dStoreBytes  = desc("store_size_bytes", "Disk space of the durable parked store.")

	dSinkRecords  = desc("sink_records_total", "Records written to the sink.", sinkLabels...)
	dSinkErrors   = desc("sink_errors_total", "Failed sink calls.", sinkLabels...)
	dSinkRetries  = desc("sink_retries_total", "Failed sink calls with a retryable error: each is retried with backoff while consumption pauses.", sinkLabels...)
	dSinkRejected = desc("sink_rejected_records_total", "Records the sink refused as bad data; they go to the dead-letter sink.", sinkLabels...)
	dSinkWrite    = desc("sink_write_duration_seconds", "Latency of the sink's Write calls.", sinkLabels...)
	dSinkFlush    = desc("sink_flush_duration_seconds", "Latency of the sink's Flush calls (FlushCheckpoint for the checkpoint sink).", sinkLabels...)
	dSinkBatch    = desc("sink_batch_records", "Records per Write call.", sinkLabels...)
	dOutOfOrder   = desc("out_of_order_records_total", "Ordering audit: records written with an event time below an earlier record of the same task. Stays 0 unless late records are emitted.", sinkLabels...)
	dRelease      = desc("release_latency_beyond_delay_seconds", "Ordering audit: wall time when the sink took the record, minus its event time, minus the delay bound; records in order whose event time is after the end of the replay.", sinkLabels...)

	dCheckpoints   = desc("checkpoints_total", "Checkpoints taken and committed.")
	dCheckpointDur = desc("checkpoint_duration_seconds", "Duration of a checkpoint, from taking it to committing its offsets.")
	dCommits       = desc("commits_total", "Successful offset commits (by the consumer, or in the checkpoint sink's transaction).")
	dCommitFails   = desc("commit_failures_total", "Failed offset commits; the next checkpoint commits again.")
	dCommitSkips   = desc("commits_skipped_total", "Offset commits skipped, in whole or in part, because this member no longer owned the partitions (never counted in commits_total for them).")
	dRebalances    = desc("rebalances_total", "Answers that assigned or revoked partitions: the first assignment, group rebalances, discovered partitions.")
	dSinksOpen     = desc("sinks_open", "1 while every sink is open.")
	dPublished     = desc("stats_published_timestamp_seconds", "When the engine loop last published these statistics, as Unix time; it advances while the loop turns.")
)

var all = []*prometheus.Desc{
	dPosition, dSnapshotEnd, dLatestEnd, dBehind, dPhase, dPaused, dHolds, dCommitted, dSchemaHeld, dSchemaHolds,
	dWatermark, dWatermarkLag, dTaskWatermark, dReplayDone, dRemaining, dETA,
	dIn, dOut, dDead, dFiltered, dExprFail, dWinOpen, dWinKeys, dWinBytes, dWinResults, dWinLate, dTimeless, dTableVer, dBeyond, dSkipped, dFuture, dLate, dLateness,
	dParked, dParkedBytes, dSpilled, dStoreBytes,
	dSinkRecords, dSinkErrors, dSinkRetries, dSinkRejected, dSinkWrite, dSinkFlush, dSinkBatch, dOutOfOrder, dRelease,
	dCheckpoints, dCheckpointDur, dCommits, dCommitFails, dCommitSkips, dRebalances, dSinksOpen, dPublished,
}

// Collector is a prometheus.Collector over a pipeline's published stats.
type Collector struct {
	stats func() signalbox.Stats
	now   func() time.Time
}

// NewCollector returns a Collector that calls stats (typically
// Pipeline.Stats) once per scrape. now is the wall clock for
// signalbox_watermark_lag_seconds; nil means time.Now.
func NewCollector(stats func() signalbox.Stats, now func() time.Time) *Collector {
	if now == nil {
		now = time.Now
	}
	return &Collector{stats: stats, now: now}
}

// Describe sends every descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range all {
		ch <- d
	}
}

// Collect sends the metrics of one stats snapshot.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	e := emitter{ch}
	c.partitions(e, s)
	c.watermark(e, s)
	e.counter(dIn, s.In)
	e.counter(dOut, s.Out)
	e.counter(dDead, s.Dead)
	e.counter(dFiltered, s.Filtered)
	for expr, n := range s.ExpressionFailed {
		e.counter(dExprFail, n, expr)
	}
	for _, w := range s.Windows {
		e.gauge(dWinOpen, float64(w.Open), w.Name)
		e.gauge(dWinKeys, float64(w.Keys), w.Name)
		e.gauge(dWinBytes, float64(w.StateBytes), w.Name)
		e.counter(dWinResults, w.Results, w.Name)
		e.counter(dWinLate, w.Late, w.Name)
	}
	e.counter(dTimeless, s.Timeless)
	if s.TableLookupsBeyond != nil { // a job with tables
		e.counter(dTableVer, s.TableVersions)
		for name, n := range s.TableLookupsBeyond {
			e.counter(dBeyond, n, name)
		}
	}
	e.counter(dSkipped, s.Skipped)
	e.counter(dFuture, s.Future)
	for tp, l := range s.Late {
		t, p := tp.Topic, partition(tp)
		for i, n := range []int64{l.Emitted, l.DeadLettered, l.Dropped} {
			if n > 0 { // the job's policy only: one series per partition
				e.counter(dLate, n, t, p, string(LatePolicies[i]))
			}
		}
		e.histogram(dLateness, lateness(l), t, p)
	}
	e.gauge(dParked, float64(s.Parked))
	e.gauge(dParkedBytes, float64(s.ParkedB))
	e.gauge(dSpilled, float64(s.Spilled))
	e.gauge(dStoreBytes, float64(s.StoreBytes))
	for _, k := range s.Sinks {
		e.counter(dSinkRecords, k.Records, k.Name)
		e.counter(dSinkErrors, k.Errors, k.Name)
		e.counter(dSinkRetries, k.Retries, k.Name)
		e.counter(dSinkRejected, k.Rejected, k.Name)
		e.histogram(dSinkWrite, k.WriteSeconds, k.Name)
		e.histogram(dSinkFlush, k.FlushSeconds, k.Name)
		e.histogram(dSinkBatch, k.BatchRecords, k.Name)
		if k.Name != deadLetterSink {
			e.counter(dOutOfOrder, k.OutOfOrder, k.Name)
			e.histogram(dRelease, k.ReleaseSeconds, k.Name)
		}
	}
	d := s.Delivery
	e.counter(dCheckpoints, s.Checkpoints)
	e.histogram(dCheckpointDur, withBounds(d.CheckpointSeconds, signalbox.LatencyBuckets))
	e.counter(dCommits, d.Commits)
	e.counter(dCommitFails, d.CommitFailures)
	e.counter(dCommitSkips, d.CommitsSkipped)
	e.counter(dRebalances, s.Rebalances)
	e.gauge(dSinksOpen, bool01(s.SinksOpen))
	if !s.Published.IsZero() {
		e.gauge(dPublished, unixSeconds(s.Published))
	}
}

// deadLetterSink is the name Stats gives the dead-letter sink: the ordering
// audit does not apply to it.
const deadLetterSink = "dead_letter"

func (c *Collector) partitions(e emitter, s signalbox.Stats) {
	paused := make(map[record.TopicPartition]bool, len(s.Paused))
	for _, tp := range s.Paused {
		paused[tp] = true
	}
	holds := make(map[record.TopicPartition]bool, len(s.Holders))
	for _, h := range s.Holders {
		holds[record.TopicPartition{Topic: h.Input, Partition: h.Partition}] = true
	}
	for _, st := range s.Partitions {
		tp := record.TopicPartition{Topic: st.Input, Partition: st.Partition}
		t, p := st.Input, partition(tp)
		e.gauge(dPosition, float64(st.Position), t, p)
		e.gauge(dSnapshotEnd, float64(st.SnapshotEnd), t, p)
		e.gauge(dLatestEnd, float64(st.LatestEnd), t, p)
		e.gauge(dBehind, float64(st.Behind), t, p)
		for _, ph := range Phases {
			e.gauge(dPhase, bool01(ph == st.Phase.String()), t, p, ph)
		}
		e.gauge(dPaused, bool01(paused[tp]), t, p)
		e.gauge(dHolds, bool01(holds[tp]), t, p)
	}
	e.gauge(dSchemaHolds, float64(len(s.SchemaHolds)))
	for _, h := range s.SchemaHolds {
		e.gauge(dSchemaHeld, float64(h.Records), h.Topic, partition(h.TopicPartition))
	}
	for _, co := range s.Delivery.Committed {
		e.gauge(dCommitted, float64(co.Offset), co.Topic, partition(co.TopicPartition))
	}
}

func (c *Collector) watermark(e emitter, s signalbox.Stats) {
	if known(s.Watermark) {
		e.gauge(dWatermark, float64(s.Watermark)/1e3)
		e.gauge(dWatermarkLag, unixSeconds(c.now())-float64(s.Watermark)/1e3)
	}
	for _, t := range s.Tasks {
		if known(t.Watermark) {
			e.gauge(dTaskWatermark, float64(t.Watermark)/1e3, strconv.Itoa(int(t.Task)))
		}
	}
	e.gauge(dReplayDone, bool01(s.ReplayDone))
	for _, p := range s.Progress {
		e.gauge(dRemaining, float64(p.Remaining), p.Input)
		if p.ETA >= 0 {
			e.gauge(dETA, p.ETA.Seconds(), p.Input)
		}
	}
}

// lateness converts a late counter's histogram (ms) to seconds.
func lateness(l signalbox.LateCounter) signalbox.Histogram {
	h := signalbox.Histogram{Bounds: make([]float64, len(signalbox.LateBuckets)), Counts: make([]uint64, len(signalbox.LateBuckets)+1),
		Count: uint64(l.Count), Sum: float64(l.SumLateBy) / 1e3}
	for i, b := range signalbox.LateBuckets {
		h.Bounds[i] = float64(b) / 1e3
	}
	for i, n := range l.Histogram {
		h.Counts[i] = uint64(n)
	}
	return h
}

// withBounds gives a histogram that has seen nothing yet its bounds, so
// that its buckets never change.
func withBounds(h signalbox.Histogram, bounds []float64) signalbox.Histogram {
	if h.Bounds == nil {
		h.Bounds = bounds
	}
	return h
}

func known(ms int64) bool { return ms != watermark.MinTime && ms != watermark.MaxTime }

func partition(tp record.TopicPartition) string { return strconv.Itoa(int(tp.Partition)) }

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// emitter sends const metrics.
type emitter struct{ ch chan<- prometheus.Metric }

func (e emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (e emitter) counter(d *prometheus.Desc, v int64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func (e emitter) histogram(d *prometheus.Desc, h signalbox.Histogram, labels ...string) {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[b] = cum
	}
	e.ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets, labels...)
}
