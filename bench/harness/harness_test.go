package harness

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/signalbox/signalbox/internal/workload"
)

// smallOptions is a tiny reference scenario with two topics slower to
// connect than the idle timeout, and no producer delays.
func smallOptions() Options {
	return Options{
		Workload: workload.Options{Seed: 7, Topics: 4, Partitions: 2, RecordsPerPartition: 400, Items: 40,
			SlowTopics: 2, SlowFor: 1500 * time.Millisecond},
		Delay:       200 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, InputTimeout: 300 * time.Millisecond, Window: 300 * time.Millisecond,
		Throughput: true,
	}
}

// TestSmokeSlowStart runs every strategy on the slow-start scenario and
// checks correctness figures only: the offset gate emits everything, in
// order, with nothing late; the other lanes' figures are computed. It
// asserts no timing.
func TestSmokeSlowStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := smallOptions()
	rep, err := Run(ctx, o, nil, zaptest.NewLogger(t).WithOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := int64(4*2*400 + 40)
	if rep.History != want {
		t.Fatalf("history = %d records, want %d", rep.History, want)
	}
	if len(rep.Results) != len(AllStrategies) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(AllStrategies))
	}
	for _, r := range rep.Results {
		t.Logf("%-17s in=%d out=%d ooo=%d (%.2f%%) late=%d thr=%.0f/s", r.Strategy, r.In, r.Out, r.OutOfOrder, r.OutOfOrderPct, r.Late, r.Throughput.PerSecond)
		if r.In != want || r.Out != want {
			t.Errorf("%s: in=%d out=%d, want %d each (bounded run flushes everything)", r.Strategy, r.In, r.Out, want)
		}
		if r.Throughput.Records != want {
			t.Errorf("%s: throughput phase read %d records, want %d", r.Strategy, r.Throughput.Records, want)
		}
	}
	gate := rep.Results[0]
	if gate.Strategy != Gate || gate.OutOfOrder != 0 || gate.Late != 0 {
		t.Fatalf("offset gate: %+v; want 0 out of order and 0 late", gate)
	}
	if rep.Ceiling.Records != want {
		t.Fatalf("raw franz-go read %d records, want %d", rep.Ceiling.Records, want)
	}
}
