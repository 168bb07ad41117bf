package progress

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/version"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/tables"
	"github.com/signalbox/signalbox/watermark"
)

func sample(done bool) signalbox.Stats {
	return signalbox.Stats{
		In: 10, Out: 7, Parked: 3, ReplayDone: done, Watermark: 1_700_000_000_000,
		Progress: []catchup.Progress{
			{Input: "orders", Partitions: 3, CaughtUp: 1, Total: 200, Remaining: 50, Fraction: 0.75, Rate: 2500, ETA: 20 * time.Millisecond},
			{Input: "stock", Partitions: 2, CaughtUp: 2, Total: 10, Fraction: 1, ETA: -1},
		},
		Holders:    []watermark.Hold{{ID: watermark.ID{Input: "orders", Partition: 2}, State: "replaying", Behind: 50, MaxEventTime: watermark.MinTime, Contribution: watermark.MinTime}},
		Partitions: []catchup.Status{{ID: catchup.ID{Input: "stock", Partition: 1}, Phase: catchup.CaughtUp}, {ID: catchup.ID{Input: "orders", Partition: 2}, Phase: catchup.Replaying, Behind: 50}},
		Late:       map[record.TopicPartition]signalbox.LateCounter{{Topic: "orders", Partition: 0}: {Count: 2, Emitted: 2, MaxLateBy: 1500}},
	}
}

// stepper returns a stats func that reports frames[i] on the i-th call and
// the last frame afterwards.
func stepper(frames ...signalbox.Stats) (func() signalbox.Stats, *int) {
	n := 0
	return func() signalbox.Stats {
		n++
		return frames[min(n, len(frames))-1]
	}, &n
}

func TestTerminalRedraws(t *testing.T) {
	defer func(d time.Duration) { RedrawEvery = d }(RedrawEvery)
	RedrawEvery = time.Millisecond
	stats, calls := stepper(sample(false), sample(true))
	var buf bytes.Buffer
	Run(context.Background(), stats, &buf, true, zap.NewNop())
	out := buf.String()
	if *calls != 2 {
		t.Fatalf("stats called %d times, want 2 (stop once the replay is done)", *calls)
	}
	for _, want := range []string{"orders", "stock", " 75.0%", "1/3 partitions", "2.5k/s", "100.0%", "\x1b[3A", "watermark 2023-11-14T22:13:20.000Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("display lacks %q:\n%q", want, out)
		}
	}
}

func TestLogLinesWhenNotATerminal(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	var buf bytes.Buffer
	stats, _ := stepper(sample(true))
	Run(context.Background(), stats, &buf, false, zap.New(core))
	if buf.Len() != 0 {
		t.Fatalf("wrote %q to a non-terminal", buf.String())
	}
	if n := logs.FilterMessage("replay progress").Len(); n != 2 {
		t.Errorf("%d progress lines, want one per input", n)
	}
	if logs.FilterMessage("replay done").Len() != 1 {
		t.Errorf("no final line: %v", logs.All())
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stats, calls := stepper(sample(false))
	Run(ctx, stats, &bytes.Buffer{}, true, zap.NewNop())
	if *calls != 1 {
		t.Fatalf("stats called %d times", *calls)
	}
}

func TestStatus(t *testing.T) {
	in := sample(false)
	in.Windows = []signalbox.WindowStats{{Name: "per_minute", Open: 40, Keys: 39, Results: 2034, Late: 3, StateBytes: 3 << 20}}
	st := FromStats(in)
	st.Tables = TablesOf([]tables.Size{{Name: "prices", Keys: 3, Versions: 4, Bytes: 50},
		{Name: "products", Keys: 1000, Versions: 2000, Bytes: 10 << 10, Pebble: true, DiskBytes: 3 << 20, MemoryBytes: 5 << 20, Beyond: 7}})
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back Status
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Holders[0].Topic != "orders" || back.Holders[0].MaxEventTime != "-inf" || back.Partitions[0].Topic != "orders" ||
		back.Late[0].MaxLateByMs != 1500 || back.Progress[0].Percent != 75 || back.Progress[1].ETASeconds != -1 {
		t.Fatalf("status round trip: %s", b)
	}
	if back.Build != version.Get() {
		t.Errorf("status build = %+v, want %+v", back.Build, version.Get())
	}
	if FromStats(signalbox.Stats{Watermark: watermark.MinTime}).WatermarkMs != nil {
		t.Error("−∞ must be null in watermark_ms")
	}
	var text bytes.Buffer
	if err := back.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"watermark  2023-11-14T22:13:20.000Z", "held by", "orders/2", "replaying, 50 behind", "stock/1", "caught-up", "1.5s",
		"window     per_minute: 40 open, 39 keys, 3.0 MiB of state, 2034 results, 3 late records",
		"table      prices: 3 keys, 4 versions, 50 B of values, in memory; 0 lookups beyond its history",
		"table      products: 1000 keys, 2000 versions, 10.0 KiB of values, in pebble: 3.0 MiB on disk, 5.0 MiB in memory; 7 lookups beyond its history",
		"build      signalbox " + version.Get().Version + ", commit " + version.Get().Commit} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestNothingShownBeforeAssignment(t *testing.T) {
	defer func(r, l time.Duration) { RedrawEvery, LogEvery = r, l }(RedrawEvery, LogEvery)
	RedrawEvery, LogEvery = time.Millisecond, time.Hour
	var buf bytes.Buffer
	stats, _ := stepper(signalbox.Stats{}, sample(true))
	Run(context.Background(), stats, &buf, true, zap.NewNop())
	if strings.Contains(buf.String(), "1970") || strings.Count(buf.String(), "watermark") != 1 {
		t.Fatalf("display of an unstarted pipeline:\n%q", buf.String())
	}
	core, logs := observer.New(zap.InfoLevel)
	stats, _ = stepper(signalbox.Stats{}, sample(false), sample(false), sample(true))
	Run(context.Background(), stats, &buf, false, zap.New(core))
	if n, m := logs.FilterMessage("replaying").Len(), logs.FilterMessage("replay done").Len(); n != 1 || m != 1 {
		t.Fatalf("%d replaying and %d done lines, want 1 and 1 (the first at once, then not before LogEvery)", n, m)
	}
	// The replaying line says who everyone waits for.
	if f := logs.FilterMessage("replaying").All()[0].ContextMap(); f["held_by"] != "orders/2" || f["held_because"] != "replaying" {
		t.Errorf("replaying line: held_by %v, held_because %v; want orders/2, replaying", f["held_by"], f["held_because"])
	}
}

// TestStatusExplainsHolders: the text says why each holder holds: its phase,
// how far behind, the ETA, paused by alignment, failing fetches.
func TestStatusExplainsHolders(t *testing.T) {
	s := sample(false)
	seen := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	s.Holders = append(s.Holders, watermark.Hold{ID: watermark.ID{Input: "stock", Partition: 0}, State: "unknown", Behind: 7, MaxEventTime: 1_700_000_000_000, Contribution: 1_699_999_999_000})
	s.Partitions = append(s.Partitions, catchup.Status{ID: catchup.ID{Input: "stock", Partition: 0}, Phase: catchup.Unknown, Behind: 7, LastSeen: seen})
	s.Paused = []record.TopicPartition{{Topic: "orders", Partition: 2}}
	s.Spilled, s.StoreBytes = 3, 3<<20
	s.Sinks = []signalbox.SinkStats{{Name: "jsonl", Records: 7, Retries: 2, Errors: 2}}
	s.Delivery.Committed = []signalbox.CommittedOffset{{TopicPartition: record.TopicPartition{Topic: "stock", Partition: 1}, Offset: 9}}
	s.Group = "g"
	var text bytes.Buffer
	if err := FromStats(s).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"replay     in progress, 76.2% of 210 offsets, 3/5 partitions caught up, ETA 0s; slowest input orders at 75.0%",
		"held by    orders/2  replaying, 50 behind, bound -inf (and 1 more partitions holding)",
		"replaying history: 50 offsets to its start-up end offset, input done in about 0s; nothing delivered yet, so it holds the watermark at -inf; paused (alignment or the parked limit)",
		"no fresh evidence: its fetches fail or its evidence is stale (last seen 2026-11-30T05:00:00Z)",
		"parked     3 records, 0 B in memory, 3 spilled to disk, store 3.0 MiB",
		"jsonl  7        2       2        0",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !regexp.MustCompile(`stock/1\s+caught-up.*\s9\n`).MatchString(text.String()) {
		t.Errorf("no committed offset 9 for stock/1:\n%s", text.String())
	}
}

// TestStatusDeliveryByGroup: a job in a consumer group shows its commits,
// rebalances and each partition's committed offset; one without a group
// commits nothing, and shows no commits, no rebalances and no COMMITTED
// column.
func TestStatusDeliveryByGroup(t *testing.T) {
	s := sample(true)
	s.Checkpoints, s.Rebalances = 3, 1
	text := func(group string) string {
		t.Helper()
		s.Group = group
		var b bytes.Buffer
		if err := FromStats(s).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	grouped := text("orders-ordered")
	for _, want := range []string{"delivery   3 checkpoints, 0 commits (0 failed), 1 rebalances of group orders-ordered", "BEHIND  PAUSED  COMMITTED\n"} {
		if !strings.Contains(grouped, want) {
			t.Errorf("with a group, the text lacks %q:\n%s", want, grouped)
		}
	}
	alone := text("")
	if !strings.Contains(alone, "delivery   3 checkpoints; no consumer group, so no offsets are committed\n") || !strings.Contains(alone, "BEHIND  PAUSED\n") {
		t.Errorf("without a group, the text lacks its delivery line or partitions header:\n%s", alone)
	}
	for _, not := range []string{"COMMITTED", "commits", "rebalances"} {
		if strings.Contains(alone, not) {
			t.Errorf("without a group, the text shows %q:\n%s", not, alone)
		}
	}
	if st := FromStats(s); st.Group != "" {
		t.Errorf("/status group = %q, want \"\"", st.Group)
	}
	// Without a group, a checkpoint sink may commit the offsets in its
	// transactions, to a group of its own: those commits are shown.
	s.Delivery.Commits = 2
	if sink := text(""); !strings.Contains(sink, "delivery   3 checkpoints, 2 commits (0 failed)\n") || !strings.Contains(sink, "COMMITTED") {
		t.Errorf("commits by the checkpoint sink not shown:\n%s", sink)
	}
}

// TestStatusSchemaHolds: a partition held for its schema registry is in
// the status document, with its offset, count and error; none is [].
func TestStatusSchemaHolds(t *testing.T) {
	if st := FromStats(signalbox.Stats{}); st.SchemaHolds == nil || len(st.SchemaHolds) != 0 {
		t.Fatalf("no holds: %#v, want []", st.SchemaHolds)
	}
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := FromStats(signalbox.Stats{SchemaHolds: []signalbox.SchemaHold{{TopicPartition: record.TopicPartition{Topic: "inv", Partition: 2},
		Offset: 40, Records: 7, Since: since, Attempts: 3, Err: "registry unavailable: 503"}}})
	want := SchemaHold{Topic: "inv", Partition: 2, Offset: 40, Records: 7, Since: "2026-12-01T12:00:00Z", Attempts: 3, Error: "registry unavailable: 503"}
	if len(st.SchemaHolds) != 1 || st.SchemaHolds[0] != want {
		t.Fatalf("holds %+v, want %+v", st.SchemaHolds, want)
	}
	var b bytes.Buffer
	if err := st.WriteText(&b); err != nil || !strings.Contains(b.String(), "inv/2 at offset 40: 7 records wait for the schema registry") {
		t.Fatalf("text status without the hold (%v):\n%s", err, b.String())
	}
}

// replayAt is sample with the orders input at fraction f, done at 1.
func replayAt(f float64) signalbox.Stats {
	s := sample(f == 1)
	s.Progress[0].Fraction, s.Progress[0].Remaining = f, int64((1-f)*float64(s.Progress[0].Total))
	if f == 1 {
		s.Progress[0].CaughtUp = s.Progress[0].Partitions
	}
	return s
}

// stopAfterFirstFrame runs Run with a stats func that reports replayAt(0.859)
// until ctx ends and then final, ends ctx once the first snapshot is taken,
// long before any tick, and returns once Run has.
func stopAfterFirstFrame(t *testing.T, final signalbox.Stats, w *bytes.Buffer, tty bool, log *zap.Logger) {
	t.Helper()
	defer func(r, l time.Duration) { RedrawEvery, LogEvery = r, l }(RedrawEvery, LogEvery)
	RedrawEvery, LogEvery = time.Hour, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan struct{})
	calls := 0
	stats := func() signalbox.Stats {
		calls++
		if calls == 1 {
			close(first)
			return replayAt(0.859)
		}
		return final
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, stats, w, tty, log)
	}()
	<-first
	cancel() // as run does once the pipeline has stopped and published its last Stats
	<-done
	if calls != 2 {
		t.Fatalf("stats called %d times, want 2 (a last snapshot when ctx ends)", calls)
	}
}

// lastFrame is what the display drew last.
func lastFrame(out string) string {
	if i := strings.LastIndex(out, "\x1b[3A"); i >= 0 {
		return out[i:]
	}
	return out
}

func TestTerminalDrawsTheFinalFrameWhenStoppedAfterReplay(t *testing.T) {
	var buf bytes.Buffer
	stopAfterFirstFrame(t, replayAt(1), &buf, true, zap.NewNop())
	out := buf.String()
	if !strings.Contains(out, " 85.9%") {
		t.Fatalf("no first frame at 85.9%%:\n%q", out)
	}
	if f := lastFrame(out); strings.Count(f, "100.0%") != 2 || strings.Contains(f, "85.9%") || !strings.Contains(f, "3/3 partitions") {
		t.Fatalf("last frame not at 100%% for both inputs:\n%q", f)
	}
}

func TestTerminalDrawsTheLastStateWhenStoppedMidReplay(t *testing.T) {
	var buf bytes.Buffer
	stopAfterFirstFrame(t, replayAt(0.9), &buf, true, zap.NewNop())
	if f := lastFrame(buf.String()); !strings.Contains(f, " 90.0%") {
		t.Fatalf("last frame not the last state (90.0%%):\n%q", f)
	}
}

func TestLogsReplayDoneWhenStoppedAfterReplay(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	var buf bytes.Buffer
	stopAfterFirstFrame(t, replayAt(1), &buf, false, zap.New(core))
	if buf.Len() != 0 {
		t.Fatalf("wrote %q to a non-terminal", buf.String())
	}
	if n, m := logs.FilterMessage("replaying").Len(), logs.FilterMessage("replay done").Len(); n != 1 || m != 1 {
		t.Fatalf("%d replaying and %d replay done lines, want 1 and 1: %v", n, m, logs.All())
	}
	// Stopped before the replay is done: no replay done line, and no
	// second replaying line before LogEvery (the stopped line follows).
	core, logs = observer.New(zap.InfoLevel)
	stopAfterFirstFrame(t, replayAt(0.9), &buf, false, zap.New(core))
	if n, m := logs.FilterMessage("replaying").Len(), logs.FilterMessage("replay done").Len(); n != 1 || m != 0 {
		t.Fatalf("%d replaying and %d replay done lines, want 1 and 0: %v", n, m, logs.All())
	}
}
