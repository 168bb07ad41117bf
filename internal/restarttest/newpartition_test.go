package restarttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/pgtest"
	"github.com/signalbox/signalbox/metrics"
	"github.com/signalbox/signalbox/timers/durable"
)

// hangGuard bounds one run; it is never expected to fire.
const hangGuard = time.Minute

const (
	history  = 50  // records per partition before the stop
	older    = 500 // records in the new partition, older than what was released
	newer    = 20  // records per old partition after the stop, newer than everything
	lateLead = 5 * time.Minute
)

// line is one released record, from the JSONL envelope or a PostgreSQL row.
type line struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	EventTime int64  `json:"event_time_ms"`
	Late      bool   `json:"late"`
}

func (l line) String() string {
	return fmt.Sprintf("%s/%d@%d t=%d late=%v", l.Topic, l.Partition, l.Offset, l.EventTime, l.Late)
}

// mode is how a job keeps what it released across a restart.
type mode struct {
	name string
	// job is the job file's mode-specific part for run n (1 or 2); out is
	// that run's JSONL output, when it writes one.
	job func(t *testing.T, dir string, run int) (yaml, out string)
	// lines reads run n's output.
	lines func(t *testing.T, dir string, run int) []line
}

func jsonlLines(t *testing.T, path string) []line {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []line
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var o line
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("bad line %q: %v", l, err)
		}
		out = append(out, o)
	}
	return out
}

func jsonlMode(name, extra string) mode {
	path := func(dir string, run int) string { return filepath.Join(dir, fmt.Sprintf("out%d.jsonl", run)) }
	return mode{
		name: name,
		job: func(t *testing.T, dir string, run int) (string, string) {
			return strings.ReplaceAll(extra, "$DIR", dir) + fmt.Sprintf("sinks:\n  - {type: jsonl, path: %q}\n", path(dir, run)), path(dir, run)
		},
		lines: func(t *testing.T, dir string, run int) []line { return jsonlLines(t, path(dir, run)) },
	}
}

// postgresMode writes to a table of its own; the sink's checkpoint, not
// Kafka, says what was released. Rows are read back in insertion order.
func postgresMode() mode {
	var table string
	return mode{
		name: "no group, postgres checkpoint sink",
		job: func(t *testing.T, dir string, run int) (string, string) {
			dsn := pgtest.DSN(t)
			if table == "" {
				table = fmt.Sprintf("newpart_%d", time.Now().UnixNano())
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					conn, err := pgx.Connect(ctx, dsn)
					if err != nil {
						t.Error(err)
						return
					}
					defer conn.Close(ctx)
					if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+table+", "+table+"_checkpoint"); err != nil {
						t.Error(err)
					}
				})
			}
			t.Setenv("NEWPART_PG_DSN", dsn)
			return fmt.Sprintf("sinks:\n  - {type: postgres, dsn_env: NEWPART_PG_DSN, table: %s, name: newpart}\n", table), ""
		},
		lines: func(t *testing.T, _ string, run int) []line {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, pgtest.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			rows, err := conn.Query(ctx, `SELECT topic, partition, "offset", event_time_ms, late FROM `+table+` ORDER BY seq`)
			if err != nil {
				t.Fatal(err)
			}
			all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (line, error) {
				var l line
				return l, r.Scan(&l.Topic, &l.Partition, &l.Offset, &l.EventTime, &l.Late)
			})
			if err != nil {
				t.Fatal(err)
			}
			if run == 1 {
				return all
			}
			return all[4*history:] // the table holds both runs
		},
	}
}

// TestNewPartitionAtRestart runs a job to the end of its history (an hour
// old) and stops it: its watermark then stands at about the stop, driven by
// the processing-time clock once every partition was caught up. While it is
// stopped, orders grows a third partition (a task never seen), its producer
// writes 500 records dated 5 minutes before the stop (newer than the whole
// history, older than the watermark), and the old partitions get records
// newer than the stop. At the
// restart the 500 are exactly the late records: flagged in the output,
// counted in signalbox_late_records_total, released before the newer
// records, which come out in event-time order, none late, none twice.
func TestNewPartitionAtRestart(t *testing.T) {
	for _, m := range []mode{
		postgresMode(),
		jsonlMode("no group, state.dir", "state: {dir: \"$DIR/state\"}\n"),
		jsonlMode("group, jsonl", "group: newpart\n"),
	} {
		t.Run(m.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*hangGuard)
			defer cancel()
			c, err := embedded.Start(embedded.WithTopic("orders", 2), embedded.WithTopic("stock", 2))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			dir := t.TempDir()
			base := time.Now().Add(-time.Hour).UnixMilli()
			var recs []*kgo.Record
			for k, topic := range []string{"orders", "stock"} {
				for p := range int32(2) {
					for i := range history {
						recs = append(recs, record(topic, p, i, base+int64(i)*1000+int64(p)*7+int64(k)*3))
					}
				}
			}
			produce(t, ctx, c, recs)

			first := runJob(t, ctx, c, m, dir, 1)
			got := m.lines(t, dir, 1)
			checkInOrder(t, got, 4*history)
			if first.LateTotal().Count != 0 {
				t.Fatalf("run 1: %d late records, want 0", first.LateTotal().Count)
			}
			// Once caught up, the processing-time clock drove the watermark:
			// what was released reaches (about) the moment the run ended.
			released := time.Now().UnixMilli()

			if err := c.CreatePartitions(ctx, "orders", 3); err != nil {
				t.Fatal(err)
			}
			recs = recs[:0]
			for i := range older {
				recs = append(recs, record("orders", 2, i, released-lateLead.Milliseconds()+int64(i)))
			}
			for k, topic := range []string{"orders", "stock"} {
				for p := range int32(2) {
					for i := range newer {
						recs = append(recs, record(topic, p, history+i, released+1000+int64(i)*100+int64(p)*7+int64(k)*3))
					}
				}
			}
			produce(t, ctx, c, recs)

			second := runJob(t, ctx, c, m, dir, 2)
			got = m.lines(t, dir, 2)
			var late, rest []line
			for _, l := range got {
				if l.Late {
					late = append(late, l)
				} else {
					rest = append(rest, l)
				}
			}
			if len(late) != older {
				t.Errorf("run 2: %d records flagged late, want %d", len(late), older)
			}
			for _, l := range late {
				if l.Topic != "orders" || l.Partition != 2 || l.EventTime > released {
					t.Errorf("run 2: %v flagged late; only the new partition's older records are", l)
				}
			}
			checkInOrder(t, rest, 4*newer)
			if n := len(got); n != older+4*newer {
				t.Errorf("run 2: %d records out, want %d", n, older+4*newer)
			}
			if lt := second.LateTotal(); lt.Count != older || lt.Emitted != older {
				t.Errorf("run 2: late count %d (emitted %d), want %d", lt.Count, lt.Emitted, older)
			}
			if v := lateMetric(t, second, "orders", "2"); v != older {
				t.Errorf("signalbox_late_records_total{orders,2,emit} = %v, want %d", v, older)
			}
		})
	}
}

func record(topic string, p int32, i int, ts int64) *kgo.Record {
	key := fmt.Sprintf("item-%d", i%5)
	return embedded.Record(topic, p, key, fmt.Sprintf(`{"ts":%d,"item":%q}`, ts, key))
}

func produce(t *testing.T, ctx context.Context, c *embedded.Cluster, recs []*kgo.Record) {
	t.Helper()
	if err := c.Produce(ctx, recs...); err != nil {
		t.Fatal(err)
	}
}

// runJob builds run n of the job as `signalbox run` does and runs it to the
// end offsets; it returns the run's statistics.
func runJob(t *testing.T, ctx context.Context, c *embedded.Cluster, m mode, dir string, n int) signalbox.Stats {
	t.Helper()
	part, _ := m.job(t, dir, n)
	job, err := config.Parse([]byte(fmt.Sprintf(`brokers: [%s]
inputs:
  - {topic: orders, time: field, time_field: ts, time_format: unix_ms, key: field, key_field: item}
  - {topic: stock, time: field, time_field: ts, time_format: unix_ms, key: field, key_field: item}
delay: 100ms
until: end-offsets
checkpoint_interval: 100ms
admin: {addr: "off"}
%s`, c.Addrs()[0], part)))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := job.Build(zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if plan.StateDir != "" {
		store, err := durable.OpenStore(plan.StateDir, durable.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		plan.Options = append(plan.Options, signalbox.WithParkedStore(store))
	}
	p, err := plan.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	if err := p.Run(rctx); err != nil {
		t.Fatalf("run %d: %v", n, err)
	}
	return p.Stats()
}

// checkInOrder checks that ls holds n distinct records, none late, in
// event-time order.
func checkInOrder(t *testing.T, ls []line, n int) {
	t.Helper()
	seen := map[string]bool{}
	for i, l := range ls {
		if seen[l.String()] {
			t.Errorf("%v released twice", l)
		}
		seen[l.String()] = true
		if l.Late {
			t.Errorf("%v is late", l)
		}
		if i > 0 && ls[i-1].EventTime >= l.EventTime {
			t.Errorf("%v released after %v", l, ls[i-1])
		}
	}
	if len(ls) != n {
		t.Errorf("%d records, want %d", len(ls), n)
	}
}

// lateMetric is signalbox_late_records_total{topic, partition, emit} as a
// Prometheus registry gathers it from stats.
func lateMetric(t *testing.T, stats signalbox.Stats, topic, partition string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(func() signalbox.Stats { return stats }, nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "signalbox_late_records_total" {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			want := map[string]string{"topic": topic, "partition": partition, "policy": "emit"}
			for _, lp := range m.GetLabel() {
				if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
