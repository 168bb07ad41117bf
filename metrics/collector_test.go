package metrics_test

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/promtest"
	"github.com/signalbox/signalbox/metrics"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// full is a snapshot with every kind of series: two partitions (one paused
// and holding the watermark), late records, a sink and the dead-letter sink.
func full() signalbox.Stats {
	h := func(bounds []float64, counts ...uint64) signalbox.Histogram {
		x := signalbox.Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
		copy(x.Counts, counts)
		for _, c := range counts {
			x.Count += c
		}
		x.Sum = 0.5
		return x
	}
	sink := func(name string) signalbox.SinkStats {
		return signalbox.SinkStats{Name: name, Records: 90, Errors: 2, Retries: 1, OutOfOrder: 0,
			WriteSeconds: h(signalbox.LatencyBuckets, 3, 4), FlushSeconds: h(signalbox.LatencyBuckets, 1),
			BatchRecords: h(signalbox.BatchBuckets, 0, 0, 2, 5), ReleaseSeconds: h(signalbox.ReleaseBuckets, 10, 20)}
	}
	return signalbox.Stats{
		In: 100, Out: 90, Dead: 3, Filtered: 4, Timeless: 5, Skipped: 6, Parked: 7, ParkedB: 700,
		Watermark: 1_700_000_000_000, ReplayDone: false,
		Partitions: []catchup.Status{
			{ID: catchup.ID{Input: "orders", Partition: 0}, Phase: catchup.CaughtUp, Position: 50, SnapshotEnd: 50, LatestEnd: 55, Behind: 0},
			{ID: catchup.ID{Input: "stock", Partition: 1}, Phase: catchup.Replaying, Position: 10, SnapshotEnd: 40, LatestEnd: 40, Behind: 30},
		},
		Holders:  []watermark.Hold{{ID: watermark.ID{Input: "stock", Partition: 1}, State: "replaying", Behind: 30}},
		Paused:   []record.TopicPartition{{Topic: "stock", Partition: 1}},
		Progress: []catchup.Progress{{Input: "orders", ETA: 0}, {Input: "stock", Remaining: 30, ETA: 3 * time.Second}},
		Tasks:    []signalbox.TaskWatermark{{Task: 0, Watermark: 1_700_000_000_000}, {Task: 1, Watermark: watermark.MinTime}},
		Late: map[record.TopicPartition]signalbox.LateCounter{{Topic: "orders", Partition: 0}: {Count: 2, Emitted: 2, MaxLateBy: 1500, SumLateBy: 2000,
			Histogram: []int64{0, 0, 0, 1, 1, 0, 0, 0, 0}}},
		Checkpoints: 4, Rebalances: 1, Spilled: 2, StoreBytes: 4096, SinksOpen: true,
		Published: time.Unix(1_700_000_010, 0),
		Delivery: signalbox.Delivery{Commits: 4, CommitFailures: 1, CheckpointSeconds: h(signalbox.LatencyBuckets, 0, 4),
			Committed: []signalbox.CommittedOffset{{TopicPartition: record.TopicPartition{Topic: "orders", Partition: 0}, Offset: 48}}},
		Sinks: []signalbox.SinkStats{sink("jsonl"), sink("dead_letter")},
	}
}

func collector(s signalbox.Stats) *metrics.Collector {
	return metrics.NewCollector(func() signalbox.Stats { return s }, func() time.Time { return time.Unix(1_700_000_005, 0) })
}

func TestValues(t *testing.T) {
	want := `
# HELP signalbox_partition_behind_records Offsets between the position and the end offset the partition must reach.
# TYPE signalbox_partition_behind_records gauge
signalbox_partition_behind_records{partition="0",topic="orders"} 0
signalbox_partition_behind_records{partition="1",topic="stock"} 30
# HELP signalbox_partition_paused 1 while the partition is paused by alignment or the memory bound.
# TYPE signalbox_partition_paused gauge
signalbox_partition_paused{partition="0",topic="orders"} 0
signalbox_partition_paused{partition="1",topic="stock"} 1
# HELP signalbox_partition_holds_watermark 1 while the partition holds the watermark back (it is not caught up); the lowest bound sets the watermark.
# TYPE signalbox_partition_holds_watermark gauge
signalbox_partition_holds_watermark{partition="0",topic="orders"} 0
signalbox_partition_holds_watermark{partition="1",topic="stock"} 1
# HELP signalbox_watermark_seconds The released watermark as Unix time: every record at or before it has been released. Absent before any evidence.
# TYPE signalbox_watermark_seconds gauge
signalbox_watermark_seconds 1.7e+09
# HELP signalbox_watermark_lag_seconds Wall-clock time minus the released watermark. Absent before any evidence.
# TYPE signalbox_watermark_lag_seconds gauge
signalbox_watermark_lag_seconds 5
# HELP signalbox_task_watermark_seconds The watermark of one co-partitioned task (partition number task of every input) as Unix time.
# TYPE signalbox_task_watermark_seconds gauge
signalbox_task_watermark_seconds{task="0"} 1.7e+09
# HELP signalbox_late_records_total Late records (event time at or before the watermark), by what the late policy did with them; a partition has a series from its first late record, for the job's policy only.
# TYPE signalbox_late_records_total counter
signalbox_late_records_total{partition="0",policy="emit",topic="orders"} 2
# HELP signalbox_replay_eta_seconds Estimated time until the input's replay is done, from its read rate. Absent while unknown.
# TYPE signalbox_replay_eta_seconds gauge
signalbox_replay_eta_seconds{input="orders"} 0
signalbox_replay_eta_seconds{input="stock"} 3
# HELP signalbox_partition_committed_offset The last offset committed for the partition: where a restart resumes.
# TYPE signalbox_partition_committed_offset gauge
signalbox_partition_committed_offset{partition="0",topic="orders"} 48
# HELP signalbox_records_out_total Records released to the sinks.
# TYPE signalbox_records_out_total counter
signalbox_records_out_total 90
`
	names := []string{"signalbox_partition_behind_records", "signalbox_partition_paused", "signalbox_partition_holds_watermark",
		"signalbox_watermark_seconds", "signalbox_watermark_lag_seconds", "signalbox_task_watermark_seconds",
		"signalbox_late_records_total", "signalbox_replay_eta_seconds", "signalbox_partition_committed_offset", "signalbox_records_out_total"}
	if err := testutil.CollectAndCompare(collector(full()), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownIsAbsent: the watermark at −∞ has no sample, never a sentinel.
func TestUnknownIsAbsent(t *testing.T) {
	s := full()
	s.Watermark = watermark.MinTime
	for _, name := range []string{"signalbox_watermark_seconds", "signalbox_watermark_lag_seconds"} {
		if n := testutil.CollectAndCount(collector(s), name); n != 0 {
			t.Errorf("%s: %d samples at −inf, want none", name, n)
		}
	}
	if n := testutil.CollectAndCount(collector(signalbox.Stats{}), "signalbox_stats_published_timestamp_seconds"); n != 0 {
		t.Errorf("published timestamp before the engine started: %d samples", n)
	}
}

// TestAuditNotForDeadLetter: the ordering audit has no dead-letter series.
func TestAuditNotForDeadLetter(t *testing.T) {
	if n := testutil.CollectAndCount(collector(full()), "signalbox_out_of_order_records_total"); n != 1 {
		t.Errorf("%d out-of-order series, want 1 (jsonl only)", n)
	}
}

// TestLateSeriesPolicyInUse: late records give each partition one
// late_records_total series, for the job's policy, whichever it is.
func TestLateSeriesPolicyInUse(t *testing.T) {
	for _, policy := range metrics.LatePolicies {
		s := signalbox.Stats{Late: map[record.TopicPartition]signalbox.LateCounter{}}
		const topics, partitions = 300, 3
		for i := range topics {
			for p := range int32(partitions) {
				l := signalbox.LateCounter{Count: 2}
				switch policy {
				case signalbox.LateEmit:
					l.Emitted = 2
				case signalbox.LateDeadLetter:
					l.DeadLettered = 2
				case signalbox.LateDrop:
					l.Dropped = 2
				}
				s.Late[record.TopicPartition{Topic: "t" + strconv.Itoa(i), Partition: p}] = l
			}
		}
		text := string(exposition(t, collector(s)))
		series := regexp.MustCompile(`(?m)^signalbox_late_records_total\{.*policy="([^"]+)".*$`).FindAllStringSubmatch(text, -1)
		if len(series) != topics*partitions {
			t.Errorf("policy %s: %d late_records_total series for %d partitions, want one each", policy, len(series), topics*partitions)
		}
		for _, m := range series {
			if m[1] != string(policy) {
				t.Fatalf("policy %s: series %q", policy, m[0])
			}
		}
	}
}

// exposition renders the collector's output in the text format.
func exposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestLint: the pedantic registry checks every metric against its
// descriptor; the linter and promtool check the names and units.
func TestLint(t *testing.T) {
	problems, err := testutil.CollectAndLint(collector(full()))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	promtest.Promtool(t, exposition(t, collector(full())), "check", "metrics")
}

// TestRulesFile: promtool accepts docs/prometheus-rules.yml and its unit
// tests pass, and every signalbox_ series it reads is one this package
// exports.
func TestRulesFile(t *testing.T) {
	const rules = "../docs/prometheus-rules.yml"
	text, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	ch := make(chan *prometheus.Desc, 100)
	go func() { collector(full()).Describe(ch); close(ch) }()
	for d := range ch {
		name := regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())[1]
		exported[name] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			exported[name+suffix] = true
		}
	}
	var unknown []string
	for _, m := range regexp.MustCompile(`\bsignalbox_[a-z_]+`).FindAllString(string(text), -1) {
		if !exported[m] && !slices.Contains(unknown, m) {
			unknown = append(unknown, m)
		}
	}
	if len(unknown) > 0 {
		t.Errorf("%s reads series that are not exported: %v", rules, unknown)
	}
	promtest.Promtool(t, nil, "check", "rules", rules)
	promtest.Promtool(t, nil, "test", "rules", "../docs/prometheus-rules.test.yml")
}

// TestSchemaHolds: a partition held for its schema registry has a
// held-records series while held; the count of held partitions is always
// there.
func TestSchemaHolds(t *testing.T) {
	s := full()
	s.SchemaHolds = []signalbox.SchemaHold{{TopicPartition: record.TopicPartition{Topic: "orders", Partition: 1}, Records: 12}}
	want := `# HELP signalbox_schema_held_partitions Partitions held because a record's schema cannot be fetched yet (registry down).
# TYPE signalbox_schema_held_partitions gauge
signalbox_schema_held_partitions 1
# HELP signalbox_partition_schema_held_records Records of the partition held because their schema cannot be fetched yet (registry down); the partition holds the watermark meanwhile. Present only while held.
# TYPE signalbox_partition_schema_held_records gauge
signalbox_partition_schema_held_records{partition="1",topic="orders"} 12
`
	if err := testutil.CollectAndCompare(collector(s), strings.NewReader(want), "signalbox_schema_held_partitions", "signalbox_partition_schema_held_records"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(collector(full()), "signalbox_partition_schema_held_records"); n != 0 {
		t.Fatalf("%d held-records series without a hold", n)
	}
}

// TestWindows: each window has its series, by name.
func TestWindows(t *testing.T) {
	s := full()
	s.Windows = []signalbox.WindowStats{{Name: "per_minute", Open: 40, Keys: 39, Results: 2034, Late: 3, StateBytes: 12345}}
	want := `
# HELP signalbox_window_keys Keys with an open window, by window name.
# TYPE signalbox_window_keys gauge
signalbox_window_keys{window="per_minute"} 39
# HELP signalbox_window_late_total Records late for one of their windows (already emitted): in none of those windows, by window name.
# TYPE signalbox_window_late_total counter
signalbox_window_late_total{window="per_minute"} 3
# HELP signalbox_window_open Windows open now (emitted once the watermark passes their end plus allowed_lateness), by window name.
# TYPE signalbox_window_open gauge
signalbox_window_open{window="per_minute"} 40
# HELP signalbox_window_state_bytes Size of a window's state (open windows, their keys, First and Last values), about, wherever it lives, by window name.
# TYPE signalbox_window_state_bytes gauge
signalbox_window_state_bytes{window="per_minute"} 12345
# HELP signalbox_window_results_total Window results emitted, by window name.
# TYPE signalbox_window_results_total counter
signalbox_window_results_total{window="per_minute"} 2034
`
	if err := testutil.CollectAndCompare(collector(s), strings.NewReader(want), "signalbox_window_open", "signalbox_window_keys", "signalbox_window_state_bytes", "signalbox_window_results_total", "signalbox_window_late_total"); err != nil {
		t.Fatal(err)
	}
}

// TestExpressionFailed: each failing expression has its series, by path.
func TestExpressionFailed(t *testing.T) {
	s := full()
	s.ExpressionFailed = map[string]int64{"process.map": 2, "sinks[1].where": 1}
	want := `
# HELP signalbox_expression_failed_total Records dead-lettered because a processing expression failed on them, by the expression's path in the job file.
# TYPE signalbox_expression_failed_total counter
signalbox_expression_failed_total{expression="process.map"} 2
signalbox_expression_failed_total{expression="sinks[1].where"} 1
`
	if err := testutil.CollectAndCompare(collector(s), strings.NewReader(want), "signalbox_expression_failed_total"); err != nil {
		t.Fatal(err)
	}
}
