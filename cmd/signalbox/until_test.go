package main

import (
	"context"
	"testing"
	"time"
)

// TestRunUntilEventTime: a job whose until is an event time exits 0 by
// itself once the watermark reaches it, having written exactly the records
// at or before it, in event-time order.
func TestRunUntilEventTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	until := time.UnixMilli(1_700_000_020_000).UTC() // setup's event times: 1_700_000_000_000 + about i s
	job, out, _ := setup(t, ctx, until.Format(time.RFC3339Nano))
	code, _, errs := cli(t, ctx, "--log-level", "warn", "run", "-c", job)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	want := 0 // setup's records at or before until
	for _, shift := range []int64{0, 7, -500, -493} {
		for i := range int64(50) {
			if 1_700_000_000_000+i*1000+shift <= until.UnixMilli() {
				want++
			}
		}
	}
	got := readOutput(t, out)
	for _, l := range got {
		if l.EventTime > until.UnixMilli() {
			t.Errorf("written after until: %+v", l)
		}
	}
	checkOutput(t, got, want)
}
