package signalbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/keyed/durable"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
	parked "github.com/signalbox/signalbox/timers/durable"
)

var countPerSecond = signalbox.Window{Spec: keyed.Spec{Name: "per_second", Kind: keyed.Tumbling, Size: 1000,
	Aggregates: []keyed.Aggregate{{Name: "n", Op: keyed.Count}}}, Args: []func(*record.Record) ([]byte, error){nil}}

// windowParts: one partition of topic a, keys k0 and k1, a record every
// 100 ms from 1,000,000 ms on, n of them.
func windowParts(n int) []script.Partition {
	sp := script.Partition{TopicPartition: tp("a", 0)}
	for i := range n {
		sp.Records = append(sp.Records, tsRecord("a", 0, int64(i), []string{"k0", "k1"}[i%2], 1_000_000+int64(i)*100))
	}
	return []script.Partition{sp}
}

// TestWithWindowRouting: a window's results go to its sinks only; the
// other sinks, a routed one included, get the released records only; a
// run until an event time closes every open window at the end. The same
// with the window's state in keyed/durable's pebble store (Window.Store),
// with room for no state in memory: every state and timer goes through
// pebble.
func TestWithWindowRouting(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testWindowRouting(t, countPerSecond) })
	t.Run("pebble", func(t *testing.T) {
		st, err := durable.Open[keyed.State](t.TempDir()+"/state", keyed.StateCodec{}, durable.Options{MemoryBudget: 1 << 20, CacheBytes: 1, TimerBytes: 1, TimerReadAhead: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		w := countPerSecond
		counted := &countingStore{Store: st}
		w.Store = counted
		testWindowRouting(t, w)
		if counted.puts == 0 {
			t.Fatal("the window never put its state in the store it was given")
		}
	})
}

// countingStore counts the state a window puts in its store.
type countingStore struct {
	*durable.Store[keyed.State]
	puts int
}

func (s *countingStore) Put(key string, st keyed.State) { s.puts++; s.Store.Put(key, st) }

func testWindowRouting(t *testing.T, window signalbox.Window) {
	raw, odd, win := &collect{}, &collect{}, &collect{}
	p, err := signalbox.New(script.New(3, 7, windowParts(45)...), tsInputs("a"),
		signalbox.WithSink(raw),
		signalbox.WithWindow(window, win),
		signalbox.WithRoutedSink(odd, func(r *record.Record) (bool, error) { return r.Offset%2 == 1, nil }),
		signalbox.WithClock(ticking()),
		signalbox.WithUntil(signalbox.UntilTime(time.UnixMilli(1_003_250))),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Records 0..32 (up to 1,003,200) are released; windows [1,000,000,
	// 1,001,000), ..., [1,003,000, 1,004,000) per key, the last two closed
	// by the end of the run.
	if len(raw.records) != 33 || len(odd.records) != 16 {
		t.Fatalf("raw %d, odd %d", len(raw.records), len(odd.records))
	}
	var got []string
	for _, r := range win.records {
		got = append(got, string(r.Key)+" "+string(r.Value))
	}
	want := []string{
		`k0 {"key":"k0","start":"1970-01-01T00:16:40Z","end":"1970-01-01T00:16:41Z","n":5}`,
		`k1 {"key":"k1","start":"1970-01-01T00:16:40Z","end":"1970-01-01T00:16:41Z","n":5}`,
		`k0 {"key":"k0","start":"1970-01-01T00:16:41Z","end":"1970-01-01T00:16:42Z","n":5}`,
		`k1 {"key":"k1","start":"1970-01-01T00:16:41Z","end":"1970-01-01T00:16:42Z","n":5}`,
		`k0 {"key":"k0","start":"1970-01-01T00:16:42Z","end":"1970-01-01T00:16:43Z","n":5}`,
		`k1 {"key":"k1","start":"1970-01-01T00:16:42Z","end":"1970-01-01T00:16:43Z","n":5}`,
		`k0 {"key":"k0","start":"1970-01-01T00:16:43Z","end":"1970-01-01T00:16:44Z","n":2}`,
		`k1 {"key":"k1","start":"1970-01-01T00:16:43Z","end":"1970-01-01T00:16:44Z","n":1}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range raw.records {
		if r.Topic != "a" {
			t.Fatalf("a result in the raw sink: %+v", r)
		}
	}
}

// TestWithWindowValidate: a window without sinks, two of one name and a
// bad spec are refused at their fields.
func TestWithWindowValidate(t *testing.T) {
	bad := countPerSecond
	bad.Spec.Size = 0
	err := signalbox.ValidateOptions(tsInputs("a"), signalbox.WithSink(&collect{}),
		signalbox.WithWindow(countPerSecond), signalbox.WithWindow(bad, &collect{}))
	for _, want := range []string{
		"windows[0].sinks: none: a window's results go to its own sinks",
		"windows[1]: size: 0ms, must be above 0",
		`windows[1].name: "per_second": another window has this name`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want %q", err, want)
		}
	}
}

// restoring is a CheckpointSink that restores a checkpoint.
type restoring struct{ collect }

func (s *restoring) Restore(context.Context) (*record.Checkpoint, error) {
	return &record.Checkpoint{Watermark: 1_000_500, Partitions: []record.PartitionCheckpoint{{TopicPartition: tp("a", 0), Low: 5, Position: 5}}}, nil
}
func (s *restoring) FlushCheckpoint(context.Context, record.Checkpoint) error { return nil }

// TestWindowRefusesRestore: windows cannot resume from a durable store's
// checkpoint (its restart resumes from the stored positions, past the
// open windows' records; the job file uses the store as scratch with
// windows, durable.Store.Scratch): such a run fails, saying why, instead
// of emitting windows without their earlier records.
func TestWindowRefusesRestore(t *testing.T) {
	dir := t.TempDir()
	for run := range 2 {
		store, err := parked.OpenStore(dir, parked.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := signalbox.New(script.New(3, 7, windowParts(20)...), tsInputs("a"),
			signalbox.WithSink(&collect{}), signalbox.WithWindow(countPerSecond, &collect{}), signalbox.WithParkedStore(store),
			signalbox.WithClock(ticking()), signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			t.Fatal(err)
		}
		err = p.Run(context.Background())
		if cerr := store.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if run == 0 && err != nil {
			t.Fatal(err)
		}
		if run == 1 && (err == nil || !strings.Contains(err.Error(), "the run has a durable store")) {
			t.Fatalf("%v", err)
		}
	}
}

// TestWindowBadArgumentDeadLetters: a record whose aggregate argument is
// not a number goes to the dead-letter sink only: in no window, in no
// other sink, counted by the window's name.
func TestWindowBadArgumentDeadLetters(t *testing.T) {
	w := countPerSecond
	w.Spec.Aggregates = append(w.Spec.Aggregates[:1:1], keyed.Aggregate{Name: "sum", Op: keyed.Sum})
	w.Args = []func(*record.Record) ([]byte, error){nil, func(r *record.Record) ([]byte, error) {
		if r.Offset == 3 {
			return []byte(`"three"`), nil
		}
		return []byte("1"), nil
	}}
	raw, win, dead := &collect{}, &collect{}, &collect{}
	p, err := signalbox.New(script.New(3, 7, windowParts(10)...), tsInputs("a"),
		signalbox.WithSink(raw), signalbox.WithWindow(w, win), signalbox.WithDeadLetter(dead),
		signalbox.WithClock(ticking()), signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(raw.records) != 9 || len(dead.records) != 1 || dead.records[0].Offset != 3 || len(win.records) != 2 {
		t.Fatalf("raw %d, dead %v, results %d", len(raw.records), dead.lines(), len(win.records))
	}
	if got := string(win.records[1].Value); got != `{"key":"k1","start":"1970-01-01T00:16:40Z","end":"1970-01-01T00:16:41Z","n":4,"sum":4}` {
		t.Fatal(got)
	}
	if reason := dead.lines()[0]; !strings.Contains(reason, `reason=windows.per_second.aggregate.sum: sum of "three", not a number`) {
		t.Fatal(reason)
	}
	if n := p.Stats().ExpressionFailed["windows.per_second"]; n != 1 {
		t.Fatalf("expression failed: %v", p.Stats().ExpressionFailed)
	}
}

// TestWindowLaggingPartitionHoldsOpen: a partition that has delivered
// nothing yet holds the watermark, so no window closes while another
// partition runs minutes ahead; every window comes out complete, with
// the lagging partition's records, and none is late.
func TestWindowLaggingPartitionHoldsOpen(t *testing.T) {
	ahead, slow := windowParts(60)[0], script.Partition{TopicPartition: tp("a", 1), Silent: 200}
	for i := range 20 { // at 1,000,050 + 100 i: in the first two seconds
		slow.Records = append(slow.Records, tsRecord("a", 1, int64(i), "k0", 1_000_050+int64(i)*100))
	}
	win := &collect{}
	p, err := signalbox.New(script.New(5, 4, ahead, slow), tsInputs("a"),
		signalbox.WithSink(&collect{}), signalbox.WithWindow(countPerSecond, win),
		signalbox.WithClock(ticking()), signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range win.records {
		got = append(got, string(r.Value))
	}
	// k0 has 5 records of its own per second, and 10 of the slow
	// partition's in each of the first two seconds: had a window closed on
	// partition 0's progress alone, those would be late and missing.
	if len(got) != 12 || !strings.Contains(got[0], `"key":"k0"`) || !strings.HasSuffix(got[0], `"n":15}`) ||
		!strings.HasSuffix(got[2], `"n":15}`) || !strings.HasSuffix(got[4], `"n":5}`) || p.Stats().Windows[0].Late != 0 {
		t.Fatalf("%d results:\n%s", len(got), strings.Join(got, "\n"))
	}
}
