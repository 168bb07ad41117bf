package demo

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/signalbox/signalbox/internal/workload"
)

// TestRunDemoSmall runs the demo on a tiny scenario with one slow topic and
// a second of live traffic, and checks correctness figures only: every
// record out, in order, nothing late, live records measured. It asserts no
// timing.
func TestRunDemoSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := Options{
		Workload: workload.Options{Seed: 3, Topics: 3, Partitions: 2, RecordsPerPartition: 300, Items: 20,
			SlowTopics: 1, SlowFor: 500 * time.Millisecond, LiveFor: time.Second, LiveRate: 200},
		Delay: 200 * time.Millisecond,
	}
	s, err := RunDemo(ctx, o, zaptest.NewLogger(t))
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
	if want := hist + 20 + s.LiveRecords; s.In != want || s.Out+s.ParkedAtEnd != want {
		t.Errorf("in %d, out %d + parked %d; want %d in, all out or parked", s.In, s.Out, s.ParkedAtEnd, want)
	}
	if s.OutOfOrder != 0 || s.Late != 0 {
		t.Errorf("%d out of order, %d late; want 0", s.OutOfOrder, s.Late)
	}
	if s.LiveLatency.Samples == 0 {
		t.Error("no live record's release latency measured")
	}
}
