package demo

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/signalbox/signalbox/internal/waitpar"
	"github.com/signalbox/signalbox/internal/workload"
)

// small is a tiny scenario with one slow topic and a second of live
// traffic. The delay is long so that a slow machine does not make live
// records late (a record that reaches the broker later than the delay is
// late by design); the tests below do not depend on it either way.
func small(visible string) Options {
	return Options{
		Workload: workload.Options{Seed: 3, Topics: 3, Partitions: 2, RecordsPerPartition: 300, Items: 20,
			SlowTopics: 1, SlowFor: 500 * time.Millisecond, LiveFor: time.Second, LiveRate: 200, AvroTopics: 2},
		Delay:   2 * time.Second,
		Visible: visible,
	}
}

// TestRunDemoSmall runs the demo with the JSONL sink's reader and checks
// correctness figures only: every event out, each enriched with its item
// from the reference table (read as a table, never out), nothing out of
// order that was
// not flagged late, every live record released seen by the reader, every
// record of the two Avro topics decoded (through both writer schemas of the
// mid-topic evolution) and none dead-lettered. It asserts no timing.
// TestMain: each demo run spends most of its time in its live phase,
// waiting for the clock: the runs go in parallel, all at once
// (internal/waitpar).
func TestMain(m *testing.M) { os.Exit(waitpar.Main(m, 4)) }

func TestRunDemoSmall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := RunDemo(ctx, small(VisibleJSONL), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
	hist := int64(3 * 2 * 300)
	if s.HistoryRecords != hist || s.ReferenceRecords != 20 {
		t.Fatalf("history %d + reference %d, want %d + 20", s.HistoryRecords, s.ReferenceRecords, hist)
	}
	if s.ReplayRecords != hist+20 {
		t.Errorf("bounded replay read %d records, want %d", s.ReplayRecords, hist+20)
	}
	if s.LiveRecords == 0 {
		t.Fatal("no live records produced")
	}
	// The reference records are read (in) into the table, never out.
	if want := hist + 20 + s.LiveRecords; s.In != want || s.Out+s.ParkedAtEnd != want-20 {
		t.Errorf("in %d, out %d + parked %d; want %d in, all but the 20 reference records out or parked",
			s.In, s.Out, s.ParkedAtEnd, want)
	}
	if s.Enriched != s.Out {
		t.Errorf("%d of %d records out enriched with their item from the reference table, want all", s.Enriched, s.Out)
	}
	// Live records go round-robin over the 3 × 2 event partitions: the
	// first 4 partitions are the 2 Avro topics'.
	avroLive := s.LiveRecords/6*4 + min(s.LiveRecords%6, 4)
	if want := 2*2*300 + avroLive; s.Decoded > want || s.Decoded < want-s.ParkedAtEnd || s.WriterSchemas != 2 {
		t.Errorf("%d records out with a decoded Avro value, of %d writer schemas; want %d (the Avro topics'), of 2",
			s.Decoded, s.WriterSchemas, want)
	}
	if len(s.AvroTopics) != 2 {
		t.Errorf("Avro topics %v, want 2", s.AvroTopics)
	}
	// The window: every result equal to the recount of its window's
	// records out, none repeated; the live hour is still open at stop.
	if w := s.Window; w.Results == 0 || w.Equal != w.Results || w.Repeats != 0 || w.OpenAtStop == 0 {
		t.Errorf("window: %+v; want results, each equal to its recount, none repeated, some open at stop", w)
	}
	if s.OutOfOrder > s.Late {
		t.Errorf("%d out of order but only %d late: a record not flagged late came out of order", s.OutOfOrder, s.Late)
	}
	if s.LiveLatency.Samples == 0 || s.VisibleLatency.Samples != s.LiveLatency.Samples {
		t.Errorf("release latency of %d live records, visible latency of %d; want the same, > 0",
			s.LiveLatency.Samples, s.VisibleLatency.Samples)
	}
}

// TestVisibleKafka runs the ordering phase with each Kafka sink and checks
// that its read_committed reader saw every live record released (the Kafka
// sink carries no late flag, so the reader may also count late ones, and
// at-least-once may repeat some).
func TestVisibleKafka(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{VisibleKafka, VisibleKafkaTxn} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			o := small(kind)
			o.Workload.SlowTopics = -1
			o.CheckpointInterval = 200 * time.Millisecond
			log := zaptest.NewLogger(t)
			sc, err := Setup(ctx, o, log)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			res, live, err := sc.Ordering(ctx, o, []Strategy{GateStrategy(o.Delay)}, log)
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			t.Logf("%d live: %+v", live.Records, r)
			if r.LiveLatency.Samples == 0 || r.VisibleLatency.Samples < r.LiveLatency.Samples {
				t.Errorf("release latency of %d live records, visible latency of %d; want every released one seen",
					r.LiveLatency.Samples, r.VisibleLatency.Samples)
			}
		})
	}
}
