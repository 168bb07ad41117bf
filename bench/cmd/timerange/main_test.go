package main

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestStartReadsTheRange: with start -1h on 2 days of history, about 1/48
// of it is read (records stamped within the last hour, give or take the
// seconds between writing and reading), and earliest reads all of it.
func TestStartReadsTheRange(t *testing.T) {
	o := options{days: 2, partitions: 2, every: time.Minute, start: "-1h"}
	res, err := run(context.Background(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2 * 2 * 24 * 60); res.history != want || res.full != want {
		t.Fatalf("history %d, read from earliest %d; want both %d", res.history, res.full, want)
	}
	// 60 records per partition are stamped in the last hour; the hour read
	// starts a few seconds later than it was written, so one may drop out.
	if res.ranged < 2*59 || res.ranged > 2*61 {
		t.Errorf("start -1h read %d records, want about %d (1/48 of %d)", res.ranged, 2*60, res.history)
	}
}
