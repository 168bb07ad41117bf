package signalbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
)

// produceParts writes parts' records to the cluster, each to its partition.
func produceParts(t *testing.T, c *embedded.Cluster, parts []script.Partition) {
	t.Helper()
	var recs []*kgo.Record
	for _, p := range parts {
		for _, r := range p.Records {
			recs = append(recs, embedded.Record(p.Topic, p.Partition, string(r.Key), string(r.Value)))
		}
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
}

// lateJob is a bounded job without a group (every run reads from the
// start) over topic "in", with a delay of 10 s and the given late policy.
func lateJob(c *embedded.Cluster, policy, sinks, deadLetter string) string {
	doc := fmt.Sprintf("brokers: [%s]\ninputs: [{topic: in, time: field, time_field: ts, time_format: unix_ms}]\n"+
		"delay: 10s\nlate: %s\nuntil: end-offsets\nsinks:\n%s", c.Addrs()[0], policy, sinks)
	if deadLetter != "" {
		doc += "dead_letter: " + deadLetter + "\n"
	}
	return doc
}

// TestLateSameEveryRunOverKafka: issue 34's set-up (jumpTopic) in the
// embedded broker, read over TCP by the same bounded job several times:
// every run flags the same 1,899 records late and writes the same output,
// byte for byte.
func TestLateSameEveryRunOverKafka(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("in", 3))
	parts := jumpTopic("in", 3000)
	produceParts(t, c, parts)
	_, late := markLate(parts, 10_000)
	var first []byte
	for run := range 4 {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		p, err := runExitPipeline(t, lateJob(c, "emit", fmt.Sprintf("  - {type: jsonl, path: %q}\n", out), ""), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if n := p.Stats().LateTotal().Count; n != int64(late) || bytes.Count(got, []byte(`"late":true`)) != late {
			t.Fatalf("run %d: %d records late, %d flagged in the output, want %d", run, n, bytes.Count(got, []byte(`"late":true`)), late)
		}
		if run == 0 {
			first = got
		} else if !bytes.Equal(got, first) {
			t.Fatalf("run %d: output differs from run 0's\n%s", run, firstDiff(got, first))
		}
	}
}

// lateMark is what a sink shows of one record: whether it says it is late,
// by how much, and its dead-letter reason.
type lateMark struct {
	late   bool
	lateBy int64 // -1: not shown
	reason string
}

// envelopeMark reads a lateMark from a JSON envelope.
func envelopeMark(t *testing.T, doc []byte) lateMark {
	t.Helper()
	var e struct {
		Late     bool
		LateByMs *int64 `json:"late_by_ms"`
		Reason   string
	}
	if err := json.Unmarshal(doc, &e); err != nil {
		t.Fatalf("envelope %s: %v", doc, err)
	}
	m := lateMark{late: e.Late, lateBy: -1, reason: e.Reason}
	if e.LateByMs != nil {
		m.lateBy = *e.LateByMs
	}
	return m
}

// TestLateSaysSoInEverySink: under late: emit and late: dead-letter, with
// each sink type as the sink or the dead-letter sink, every late record
// says it is late and by how much: "late": true and late_by_ms in the
// envelopes (jsonl, bulk), the late and late_by_ms columns (postgres), the
// signalbox.late_by_ms header (kafka); a dead letter's reason agrees with
// it. No other record says it is late.
func TestLateSaysSoInEverySink(t *testing.T) {
	conn, table := pgTable(t)
	c := startCluster(t, embedded.WithTopic("in", 3), embedded.WithTopic("dl-emit", 1), embedded.WithTopic("dl-dead-letter", 1))
	parts := jumpTopic("in", 300)
	produceParts(t, c, parts)
	all, late := markLate(parts, 10_000)
	wantBy := map[int64]int{} // lateness → how many records
	for _, r := range all {
		if r.Late {
			wantBy[r.LateBy]++
		}
	}
	for _, policy := range []string{"emit", "dead-letter"} {
		for _, typ := range []string{"jsonl", "bulk", "postgres", "kafka"} {
			t.Run(policy+"/"+typ, func(t *testing.T) {
				dir := t.TempDir()
				tbl := table + "_" + strings.ReplaceAll(policy, "-", "_")
				url, docs := bulkServer(t)
				sink := map[string]string{
					"jsonl":    fmt.Sprintf("{type: jsonl, path: %q}", filepath.Join(dir, "x.jsonl")),
					"bulk":     fmt.Sprintf("{type: bulk, url: %q, index: x, doc_id: offset}", url),
					"postgres": fmt.Sprintf("{type: postgres, dsn_env: EXITPATH_PG_DSN, table: %s}", tbl),
					"kafka":    fmt.Sprintf("{type: kafka, topic: dl-%s}", policy),
				}[typ]
				doc := lateJob(c, policy, "  - "+sink+"\n", "")
				if policy == "dead-letter" {
					doc = lateJob(c, policy, fmt.Sprintf("  - {type: jsonl, path: %q}\n", filepath.Join(dir, "out.jsonl")), sink)
				}
				if err := runExitJob(t, doc, zap.NewNop()); err != nil {
					t.Fatal(err)
				}
				var marks []lateMark
				switch typ {
				case "jsonl":
					b, err := os.ReadFile(filepath.Join(dir, "x.jsonl"))
					if err != nil {
						t.Fatal(err)
					}
					for line := range bytes.Lines(b) {
						marks = append(marks, envelopeMark(t, line))
					}
				case "bulk":
					for _, d := range docs() {
						marks = append(marks, envelopeMark(t, d))
					}
				case "postgres":
					t.Cleanup(func() {
						for _, s := range []string{"", "_checkpoint", "_watermark"} {
							_, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+tbl+s)
						}
					})
					rows, err := conn.Query(context.Background(), "SELECT late, coalesce(late_by_ms, -1), coalesce(reason, '') FROM "+tbl)
					if err != nil {
						t.Fatal(err)
					}
					for rows.Next() {
						var m lateMark
						if err := rows.Scan(&m.late, &m.lateBy, &m.reason); err != nil {
							t.Fatal(err)
						}
						marks = append(marks, m)
					}
				case "kafka":
					marks = kafkaMarks(t, c, "dl-"+policy)
				}
				want := len(all)
				if policy == "dead-letter" {
					want = late
				}
				if len(marks) != want {
					t.Fatalf("%d records in the %s sink, want %d", len(marks), typ, want)
				}
				gotBy := map[int64]int{}
				for _, m := range marks {
					if !m.late {
						if m.lateBy != -1 || m.reason != "" {
							t.Fatalf("a record not late shows %+v", m)
						}
						continue
					}
					gotBy[m.lateBy]++
					if wantReason := "late by " + strconv.FormatInt(m.lateBy, 10) + "ms"; policy == "dead-letter" && m.reason != wantReason {
						t.Fatalf("a dead letter late by %d ms has reason %q, want %q", m.lateBy, m.reason, wantReason)
					}
				}
				if fmt.Sprint(gotBy) != fmt.Sprint(wantBy) {
					t.Fatalf("late records by lateness %v, want %v", gotBy, wantBy)
				}
			})
		}
	}
}

// kafkaMarks reads topic from the start and returns what its records'
// headers say of them (record.LateByHeader, record.ReasonHeader).
func kafkaMarks(t *testing.T, c *embedded.Cluster, topic string) []lateMark {
	t.Helper()
	offs, err := c.ListOffsets(context.Background(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var marks []lateMark
	for int64(len(marks)) < offs.HighWater {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			m := lateMark{lateBy: -1}
			for _, h := range r.Headers {
				switch h.Key {
				case record.LateByHeader:
					n, err := strconv.ParseInt(string(h.Value), 10, 64)
					if err != nil {
						t.Errorf("header %s=%q", h.Key, h.Value)
					}
					m.late, m.lateBy = true, n
				case record.ReasonHeader:
					m.reason = string(h.Value)
				}
			}
			marks = append(marks, m)
		})
	}
	return marks
}

// TestEqualEventTimesSameEveryRunOverKafka: under the default delay of 0,
// three partitions in event-time order with about 20 records per
// millisecond, produced in small batches and fetched one batch per answer,
// so that the runs of equal event times are split across answers. Every
// run of the same bounded job flags no record late and writes the same
// output, byte for byte: a partition that holds the watermark at its
// newest event time m may still deliver records at m, and the watermark
// stays below them (design W1).
func TestEqualEventTimesSameEveryRunOverKafka(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("in", 3))
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1024))...) // about 13 records a batch
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const perPartition = 3000
	rng := rand.New(rand.NewPCG(34, 1))
	var recs []*kgo.Record
	for p := range int32(3) {
		ts := exitBase
		for i := range perPartition {
			if rng.IntN(20) == 0 {
				ts++
			}
			recs = append(recs, embedded.Record("in", p, fmt.Sprint("k", i%7), fmt.Sprintf(`{"seq":%d,"ts":%d}`, i, ts)))
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var first []byte
	for run := range 4 {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		plan := buildPlan(t, fmt.Sprintf("brokers: [%s]\ninputs: [{topic: in, time: field, time_field: ts, time_format: unix_ms}]\n"+
			"delay: 0s\nuntil: end-offsets\nsinks:\n  - {type: jsonl, path: %q}\n", c.Addrs()[0], out), zap.NewNop())
		plan.Kafka.PartitionMaxBytes = 1 // one producer batch per answer
		p, err := plan.Pipeline()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
		err = p.Run(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if n := p.Stats().LateTotal().Count; n != 0 || bytes.Count(got, []byte("\n")) != len(recs) {
			t.Fatalf("run %d: %d records late, %d records out; want 0 late of %d", run, n, bytes.Count(got, []byte("\n")), len(recs))
		}
		if run == 0 {
			first = got
		} else if !bytes.Equal(got, first) {
			t.Fatalf("run %d: output differs from run 0's\n%s", run, firstDiff(got, first))
		}
	}
}
