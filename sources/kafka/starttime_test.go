package kafka

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stamped builds records of one partition with the given Kafka timestamps;
// each value is "v" + its index.
func stamped(topic string, partition int32, ts ...time.Time) []*kgo.Record {
	out := make([]*kgo.Record, len(ts))
	for i, t := range ts {
		r := embedded.Record(topic, partition, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
		r.Timestamp = t
		out[i] = r
	}
	return out
}

// minutes returns n times one minute apart from base.
func minutes(base time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = base.Add(time.Duration(i) * time.Minute)
	}
	return out
}

// A time start begins each partition at its first record stamped at or after
// it; a partition with no such record starts at its end and reads only what
// is written after the snapshot.
func TestStartAtTime(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("s", 2))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	mustProduce(t, c, stamped("s", 0, minutes(base, 10)...)...)
	mustProduce(t, c, stamped("s", 1, minutes(base.Add(-time.Hour), 3)...)...)
	start := base.Add(5*time.Minute - time.Second) // between v4 and v5
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"s"}, Start: start.Format(time.RFC3339Nano)})
	col := newCollector(t, src)
	col.until("caught up", col.caughtUp)
	p0, p1 := record.TopicPartition{Topic: "s", Partition: 0}, record.TopicPartition{Topic: "s", Partition: 1}
	if a := col.assigned[p0]; a.Start != 5 || a.End != 10 {
		t.Errorf("partition 0 assigned %+v, want Start 5 (first timestamp at or after start) End 10", a)
	}
	if a := col.assigned[p1]; a.Start != 3 || a.End != 3 {
		t.Errorf("partition 1 assigned %+v, want Start 3 = End (no record at or after start)", a)
	}
	if got := col.values[p0]; !slices.Equal(got, []string{"v5", "v6", "v7", "v8", "v9"}) {
		t.Errorf("partition 0 read %q, want v5..v9", got)
	}
	mustProduce(t, c, stamped("s", 1, base.Add(-2*time.Hour))...) // old timestamp, written now
	col.until("the record written after the snapshot", func() bool { return len(col.values[p1]) == 1 })
	if got := col.values[p1]; got[0] != "v0" {
		t.Errorf("partition 1 read %q after the snapshot", got)
	}
}

// A timestamp exactly at the start is included, and Kafka timestamps out of
// order are followed as the broker indexes them: the first offset stamped at
// or after the start, then everything after it, older stamps included.
func TestStartAtTimeBoundsAndDisorder(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("d", 1))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	mustProduce(t, c, stamped("d", 0, base, base.Add(30*time.Second), base.Add(20*time.Second), base.Add(40*time.Second))...)
	for _, tc := range []struct {
		start time.Time
		want  []string
	}{
		{base.Add(30 * time.Second), []string{"v1", "v2", "v3"}}, // at: included
		{base.Add(25 * time.Second), []string{"v1", "v2", "v3"}}, // v2 (20s) is read: it follows v1
		{base.Add(31 * time.Second), []string{"v3"}},
		{base.Add(-time.Hour), []string{"v0", "v1", "v2", "v3"}},
	} {
		src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"d"}, Start: tc.start.Format(time.RFC3339Nano)})
		col := newCollector(t, src)
		col.until("caught up", col.caughtUp)
		if got := col.values[record.TopicPartition{Topic: "d"}]; !slices.Equal(got, tc.want) {
			t.Errorf("start %s: read %q, want %q", tc.start.Format(time.TimeOnly), got, tc.want)
		}
		_ = src.Close()
	}
}

// A duration before now is resolved against the wall clock at Open.
func TestStartBeforeNow(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("r", 1))
	now := time.Now()
	mustProduce(t, c, stamped("r", 0, now.Add(-50*time.Hour), now.Add(-37*time.Hour), now.Add(-35*time.Hour), now.Add(-time.Minute))...)
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"r"}, Start: "-36h"})
	col := newCollector(t, src)
	col.until("caught up", col.caughtUp)
	if got := col.values[record.TopicPartition{Topic: "r"}]; !slices.Equal(got, []string{"v2", "v3"}) {
		t.Errorf("start -36h read %q, want v2 v3", got)
	}
	src2 := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"r"}, Start: "-3d"})
	col2 := newCollector(t, src2)
	col2.until("caught up", col2.caughtUp)
	if got := col2.values[record.TopicPartition{Topic: "r"}]; !slices.Equal(got, []string{"v0", "v1", "v2", "v3"}) {
		t.Errorf("start -3d read %q, want all four", got)
	}
}

// A committed group offset and a StartAt offset (a sink's checkpoint) each
// outrank a time start: a restart resumes where the job stopped.
func TestStartTimeLosesToCommittedAndStartAt(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("p", 1))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	mustProduce(t, c, stamped("p", 0, minutes(base, 10)...)...)
	tp := record.TopicPartition{Topic: "p"}
	start := base.Add(6 * time.Minute).Format(time.RFC3339)
	cfg := Config{Brokers: c.Addrs(), Topics: []string{"p"}, Group: "pg", Start: start}

	col := openAssigned(t, 1, cfg)
	first := col.src
	if a := col.assigned[tp]; a.Start != 6 {
		t.Fatalf("no commit: assigned %+v, want Start 6", a)
	}
	col.until("caught up", col.caughtUp)
	if err := first.Commit(bg, map[record.TopicPartition]int64{tp: 8}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	col2 := openAssigned(t, 1, cfg)
	second := col2.src
	if a := col2.assigned[tp]; a.Start != 8 {
		t.Errorf("committed 8: assigned %+v, want Start 8 (the commit outranks start)", a)
	}
	_ = second.Close()

	col3 := openAssigned(t, 1, cfg, func(s *Source) { s.StartAt(map[record.TopicPartition]int64{tp: 2}) })
	if a := col3.assigned[tp]; a.Start != 2 {
		t.Errorf("StartAt 2: assigned %+v, want Start 2 (a sink's checkpoint outranks both)", a)
	}
}

func TestParseStart(t *testing.T) {
	now := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in    string
		want  time.Time
		timed bool
		err   string
	}{
		{in: "earliest"},
		{in: "latest"},
		{in: "2026-03-01T00:00:00Z", want: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), timed: true},
		{in: "2026-03-01T01:00:00.5+01:00", want: time.Date(2026, 3, 1, 0, 0, 0, 5e8, time.UTC), timed: true},
		{in: "-7d", want: now.Add(-7 * 24 * time.Hour), timed: true},
		{in: "-36h", want: now.Add(-36 * time.Hour), timed: true},
		{in: "-1h30m", want: now.Add(-90 * time.Minute), timed: true},
		{in: "7d", err: "not before now"},
		{in: "36h", err: "not before now"},
		{in: "0s", err: "not before now"},
		{in: "-7days", err: "is not earliest, latest, an RFC 3339 time"},
		{in: "2026-03-01", err: "is not earliest, latest, an RFC 3339 time"},
		{in: "Earliest", err: "is not earliest"},
		{in: "-99999999999d", err: "is not earliest"},
	} {
		got, timed, err := ParseStart(tc.in, now)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseStart(%q) error %v, want one containing %q", tc.in, err, tc.err)
			}
		case err != nil || timed != tc.timed || !got.Equal(tc.want):
			t.Errorf("ParseStart(%q) = %v, %v, %v; want %v, %v", tc.in, got, timed, err, tc.want, tc.timed)
		}
	}
	cfg := Config{Brokers: []string{"localhost:9092"}, Topics: []string{"t"}, Start: "yesterday"}
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "start: ") {
		t.Errorf("Validate with start yesterday: %v, want an error naming start", err)
	}
}

// FuzzParseStart: any string either is refused or resolves to an instant;
// a time resolves to itself, a duration to an instant before now.
func FuzzParseStart(f *testing.F) {
	for _, s := range []string{"earliest", "latest", "-7d", "-36h", "-1h30m", "7d", "2026-03-01T00:00:00Z", "2026-03-01T01:00:00.5+01:00", "-d", "--1d", "-9223372036854775807ns"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, timed, err := ParseStart(s, now)
		if err != nil {
			if timed || !strings.Contains(err.Error(), "before now") {
				t.Fatalf("ParseStart(%q): timed %v with error %v", s, timed, err)
			}
			return
		}
		if !timed {
			if s != StartEarliest && s != StartLatest {
				t.Fatalf("ParseStart(%q) accepted as neither a time nor earliest/latest", s)
			}
			return
		}
		if ts, perr := time.Parse(time.RFC3339Nano, s); perr == nil {
			if !ts.Equal(got) {
				t.Fatalf("ParseStart(%q) = %v, want the time itself", s, got)
			}
		} else if !got.Before(now) {
			t.Fatalf("ParseStart(%q) = %v, not before now %v", s, got, now)
		}
	})
}
