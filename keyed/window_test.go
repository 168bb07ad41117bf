package keyed_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/signalbox/signalbox/keyed"
)

// rec is a test record: its key, event time, quantity and id (its place
// in the release order among records of equal time).
type rec struct {
	key string
	t   int64
	qty int
	id  int
}

var aggs = []keyed.Aggregate{
	{Name: "count", Op: keyed.Count}, {Name: "qty", Op: keyed.Sum}, {Name: "min_qty", Op: keyed.Min},
	{Name: "max_qty", Op: keyed.Max}, {Name: "avg_qty", Op: keyed.Avg}, {Name: "first", Op: keyed.First}, {Name: "last", Op: keyed.Last},
}

func item(t *testing.T, s *keyed.Spec, r rec) keyed.Item {
	t.Helper()
	q := []byte(strconv.Itoa(r.qty))
	id := []byte(strconv.Itoa(r.id))
	it, err := s.Item([]byte(strconv.Quote(r.key)), r.t, [][]byte{nil, q, q, q, q, id, id})
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// result is a decoded window result.
type result struct {
	Key    string  `json:"key"`
	Start  string  `json:"start"`
	End    string  `json:"end"`
	Count  int64   `json:"count"`
	Qty    float64 `json:"qty"`
	Min    float64 `json:"min_qty"`
	Max    float64 `json:"max_qty"`
	Avg    float64 `json:"avg_qty"`
	First  int     `json:"first"`
	Last   int     `json:"last"`
	window string
}

func (r result) String() string {
	type plain result // without the method
	return fmt.Sprintf("%+v", plain(r))
}

// run feeds rs (in release order) to the windows of s, advancing the
// watermark between records at random when rnd is set, and closes them at
// the end unless open.
func run(t *testing.T, k storeKind, s keyed.Spec, rs []rec, rnd *rand.Rand, open bool) (out []result, w *keyed.Windows) {
	t.Helper()
	w = k.windows(t, s, func(r *keyed.Result) error {
		var d result
		if err := json.Unmarshal(r.Value, &d); err != nil {
			t.Fatalf("%s: %v", r.Value, err)
		}
		d.window = r.Window
		out = append(out, d)
		return nil
	})
	var buf []byte // the caller's memory, as the engine's: reused and scribbled on after each Add (invariant 9)
	args := make([][]byte, len(s.Aggregates))
	for i, r := range rs {
		buf = strconv.AppendQuote(buf[:0], r.key)
		n := len(buf)
		buf = strconv.AppendInt(buf, int64(r.qty), 10)
		q := n
		n = len(buf)
		buf = strconv.AppendInt(buf, int64(r.id), 10)
		for j, a := range s.Aggregates {
			switch a.Op {
			case keyed.Count:
				args[j] = nil
			case keyed.First, keyed.Last:
				args[j] = buf[n:]
			default:
				args[j] = buf[q:n]
			}
		}
		it, err := w.Item(buf[:q], r.t, args)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add(it, r.t); err != nil {
			t.Fatal(err)
		}
		for j := range buf {
			buf[j] = '9'
		}
		// The engine advances the watermark only past records it released:
		// anywhere in [r.t, next.t − 1].
		if rnd != nil && rnd.IntN(3) == 0 {
			hi := r.t + 500
			if i+1 < len(rs) {
				hi = rs[i+1].t - 1
			}
			if hi >= r.t {
				if err := w.Advance(r.t + rnd.Int64N(hi-r.t+1)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if !open {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out, w
}

func rfc(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// oracle computes the windows of s over rs in one batch: every window of
// every key, from the records sorted, in the order of their ends, ties by
// key.
func oracle(s keyed.Spec, rs []rec) []result {
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b rec) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return a.id - b.id
	})
	type win struct {
		key        string
		start, end int64
		rs         []rec
	}
	var wins []*win
	byKey := map[string][]rec{}
	var keys []string
	for _, r := range sorted {
		if byKey[r.key] == nil {
			keys = append(keys, r.key)
		}
		byKey[r.key] = append(byKey[r.key], r)
	}
	for _, k := range keys {
		switch s.Kind {
		case keyed.Session:
			var cur *win
			for _, r := range byKey[k] {
				if cur == nil || r.t >= cur.end {
					cur = &win{key: k, start: r.t}
					wins = append(wins, cur)
				}
				cur.end = r.t + s.Gap
				cur.rs = append(cur.rs, r)
			}
		default:
			every := s.Size
			if s.Kind == keyed.Hopping {
				every = s.Every
			}
			m := map[int64]*win{}
			for _, r := range byKey[k] {
				for st := r.t - r.t%every; st > r.t-s.Size; st -= every { // times ≥ 0 in these tests
					if m[st] == nil {
						m[st] = &win{key: k, start: st, end: st + s.Size}
						wins = append(wins, m[st])
					}
					m[st].rs = append(m[st].rs, r)
				}
			}
		}
	}
	slices.SortStableFunc(wins, func(a, b *win) int {
		if a.end != b.end {
			return int(a.end - b.end)
		}
		return cmp.Compare(strconv.Quote(a.key), strconv.Quote(b.key))
	})
	var out []result
	for _, w := range wins {
		d := result{Key: w.key, Start: rfc(w.start), End: rfc(w.end), window: s.Name, Min: 1e300, Max: -1e300}
		for _, r := range w.rs {
			d.Count++
			d.Qty += float64(r.qty)
			d.Min, d.Max = min(d.Min, float64(r.qty)), max(d.Max, float64(r.qty))
		}
		d.Avg = d.Qty / float64(d.Count)
		d.First, d.Last = w.rs[0].id, w.rs[len(w.rs)-1].id
		out = append(out, d)
	}
	return out
}

// randomRecs returns n records of k keys over span ms, in release order
// (event time, then id).
func randomRecs(rnd *rand.Rand, n, k int, span int64) []rec {
	rs := make([]rec, n)
	for i := range rs {
		rs[i] = rec{key: "sku-" + strconv.Itoa(rnd.IntN(k)), t: rnd.Int64N(span), qty: rnd.IntN(20) - 5}
	}
	slices.SortFunc(rs, func(a, b rec) int { return int(a.t - b.t) })
	for i := range rs {
		rs[i].id = i
	}
	return rs
}

// TestWindowsMatchOracle: random data in release order, random watermark
// schedules: every window kind gives exactly the oracle's results, in the
// oracle's order (ends, then keys), whatever the schedule.
func TestWindowsMatchOracle(t *testing.T) {
	specs := []keyed.Spec{
		{Name: "tumbling", Kind: keyed.Tumbling, Size: 1000},
		{Name: "tumbling_late", Kind: keyed.Tumbling, Size: 1000, Lateness: 2500},
		{Name: "hopping", Kind: keyed.Hopping, Size: 1000, Every: 250},
		{Name: "hopping_gaps", Kind: keyed.Hopping, Size: 300, Every: 1000},
		{Name: "session", Kind: keyed.Session, Gap: 400},
		{Name: "session_late", Kind: keyed.Session, Gap: 150, Lateness: 700},
	}
	forStores(t, func(t *testing.T, k storeKind) {
		for _, s := range specs {
			s.Aggregates = aggs
			t.Run(s.Name, func(t *testing.T) {
				for seed := range k.seeds(40) {
					rnd := rand.New(rand.NewPCG(seed, 37))
					rs := randomRecs(rnd, 1+rnd.IntN(400), 1+rnd.IntN(6), 1+rnd.Int64N(20_000))
					want := oracle(s, rs)
					got, w := run(t, k, s, rs, rnd, false)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d: %d results, oracle %d\n got %v\nwant %v", seed, len(got), len(want), got, want)
					}
					if w.Open != 0 || w.Keys() != 0 || w.Late != 0 {
						t.Fatalf("seed %d: after Close: %d open, %d keys, %d late", seed, w.Open, w.Keys(), w.Late)
					}
				}
			})
		}
	})
}

// TestWindowBoundary: a record exactly on a boundary belongs to [start,
// end): the window it starts, not the one it ends.
func TestWindowBoundary(t *testing.T) { forStores(t, testWindowBoundary) }

func testWindowBoundary(t *testing.T, k storeKind) {
	s := keyed.Spec{Name: "m", Kind: keyed.Tumbling, Size: 60_000, Aggregates: aggs}
	got, _ := run(t, k, s, []rec{{"a", 59_999, 1, 0}, {"a", 60_000, 2, 1}}, nil, false)
	if len(got) != 2 || got[0].End != rfc(60_000) || got[0].Count != 1 || got[0].Qty != 1 ||
		got[1].Start != rfc(60_000) || got[1].Count != 1 || got[1].Qty != 2 {
		t.Fatalf("%v", got)
	}
}

// TestSessionMerge: a record that bridges two open sessions of its key
// merges them into one, emitted once; one exactly a gap after the last
// starts a new session. Released in order, a record cannot bridge two
// sessions (the first closed before the second began); released out of
// turn within the allowed lateness, it can.
func TestSessionMerge(t *testing.T) { forStores(t, testSessionMerge) }

func testSessionMerge(t *testing.T, k storeKind) {
	s := keyed.Spec{Name: "s", Kind: keyed.Session, Gap: 100, Lateness: 1000, Aggregates: aggs}
	var out []*keyed.Result
	w := k.windows(t, s, func(r *keyed.Result) error { out = append(out, r); return nil })
	// Released out of turn (at 300), the record at 75 bridges [0,100) and
	// [150,250); the one at 250 is exactly a gap after the last (150).
	for i, r := range []struct{ t, at int64 }{{0, 0}, {150, 150}, {75, 300}, {250, 400}} {
		if late, err := w.Add(item(t, &s, rec{"a", r.t, 1, i}), r.at); late || err != nil {
			t.Fatal(late, err)
		}
		if i == 1 && w.Open != 2 || i == 2 && w.Open != 1 {
			t.Fatalf("after record %d: %d open", i, w.Open)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"key":"a","start":"1970-01-01T00:00:00Z","end":"1970-01-01T00:00:00.25Z","count":3,"qty":3,"min_qty":1,"max_qty":1,"avg_qty":1,"first":0,"last":1}`,
		`{"key":"a","start":"1970-01-01T00:00:00.25Z","end":"1970-01-01T00:00:00.35Z","count":1,"qty":1,"min_qty":1,"max_qty":1,"avg_qty":1,"first":3,"last":3}`,
	}
	if len(out) != len(want) {
		t.Fatalf("%d results", len(out))
	}
	for i := range want {
		if string(out[i].Value) != want[i] {
			t.Errorf("result %d:\n got %s\nwant %s", i, out[i].Value, want[i])
		}
	}
}

// TestLateAfterClose: a record whose window was emitted is late: counted,
// in no window, and the window is never emitted again; within the allowed
// lateness, it joins the still-open window, which is emitted once, later.
func TestLateAfterClose(t *testing.T) { forStores(t, testLateAfterClose) }

func testLateAfterClose(t *testing.T, k storeKind) {
	for _, lateness := range []int64{0, 500} {
		s := keyed.Spec{Name: "m", Kind: keyed.Tumbling, Size: 1000, Lateness: lateness, Aggregates: aggs}
		var out []*keyed.Result
		w := k.windows(t, s, func(r *keyed.Result) error { out = append(out, r); return nil })
		if _, err := w.Add(item(t, &s, rec{"a", 10, 1, 0}), 10); err != nil {
			t.Fatal(err)
		}
		if err := w.Advance(1200); err != nil {
			t.Fatal(err)
		}
		emitted := len(out)
		late, err := w.Add(item(t, &s, rec{"a", 20, 5, 1}), 1201) // released out of turn
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		switch lateness {
		case 0:
			if emitted != 1 || !late || w.Late != 1 || len(out) != 1 || w.Results != 1 {
				t.Fatalf("lateness 0: emitted %d at 1200, late %v (%d), %d results", emitted, late, w.Late, len(out))
			}
		default:
			var d result
			_ = json.Unmarshal(out[0].Value, &d)
			if emitted != 0 || late || w.Late != 0 || len(out) != 1 || d.Count != 2 || d.Qty != 6 {
				t.Fatalf("lateness 500: emitted %d at 1200, late %v, %d results: %s", emitted, late, len(out), out[0].Value)
			}
		}
	}
}

// TestIdleKeyCloses: a key that gets no more records still has its window
// emitted when the watermark passes it (Kafka Streams' suppress does not:
// its time moves only with records).
func TestIdleKeyCloses(t *testing.T) { forStores(t, testIdleKeyCloses) }

func testIdleKeyCloses(t *testing.T, k storeKind) {
	s := keyed.Spec{Name: "m", Kind: keyed.Tumbling, Size: 1000, Aggregates: aggs}
	var out []*keyed.Result
	w := k.windows(t, s, func(r *keyed.Result) error { out = append(out, r); return nil })
	if _, err := w.Add(item(t, &s, rec{"quiet", 10, 1, 0}), 10); err != nil {
		t.Fatal(err)
	}
	if err := w.Advance(998); err != nil || len(out) != 0 {
		t.Fatalf("at 998: %d results, %v", len(out), err)
	}
	if err := w.Advance(999); err != nil || len(out) != 1 || w.Open != 0 || w.Keys() != 0 {
		t.Fatalf("at 999: %d results, %d open, %v", len(out), w.Open, err)
	}
}

// TestItemRefusesNonNumbers: a sum of a string is an error naming the
// aggregate; a null argument is skipped.
func TestItemRefusesNonNumbers(t *testing.T) {
	s := keyed.Spec{Name: "m", Kind: keyed.Tumbling, Size: 1000, Aggregates: aggs}
	q := []byte(`"7"`)
	if _, err := s.Item([]byte(`"a"`), 1, [][]byte{nil, q, q, q, q, q, q}); err == nil || err.Error() != `aggregate.qty: sum of "7", not a number` {
		t.Fatalf("%v", err)
	}
	n := []byte("null")
	it, err := s.Item([]byte(`"a"`), 1, [][]byte{nil, n, n, n, n, n, n})
	if err != nil || !it.Args[1].Null {
		t.Fatal(err)
	}
}

// TestSpecValidate names the bad fields.
func TestSpecValidate(t *testing.T) {
	bad := keyed.Spec{Kind: keyed.Hopping, Size: 10, Lateness: -1, Aggregates: []keyed.Aggregate{{Name: "end", Op: keyed.Count}}}
	err := bad.Validate()
	want := "name: empty\nevery: 0ms, must be above 0\nallowed_lateness: -1ms, must not be negative\naggregate.end: the name is taken (key, start and end are the result's own)"
	if err == nil || err.Error() != want {
		t.Fatalf("%v", err)
	}
}

// TestLastTimer: a record's last timer is its latest window's: every window
// it joined is emitted once the time reaches it, and none before.
func TestLastTimer(t *testing.T) { forStores(t, testLastTimer) }

func testLastTimer(t *testing.T, k storeKind) {
	for _, s := range []keyed.Spec{
		{Name: "t", Kind: keyed.Tumbling, Size: 1000, Lateness: 5, Aggregates: []keyed.Aggregate{{Name: "n", Op: keyed.Count}}},
		{Name: "h", Kind: keyed.Hopping, Size: 1000, Every: 300, Aggregates: []keyed.Aggregate{{Name: "n", Op: keyed.Count}}},
	} {
		for _, at := range []int64{0, 1, 299, 300, 999, 1000, 1999, -1, -1000} {
			var ends []int64
			w := k.windows(t, s, func(r *keyed.Result) error { ends = append(ends, r.End); return nil })
			it, _ := s.Item([]byte(`"k"`), at, make([][]byte, 1))
			_ = w.Advance(at - 1)
			if _, err := w.Add(it, at); err != nil {
				t.Fatal(err)
			}
			timer, ok := w.LastTimer(at)
			if !ok {
				t.Fatal(s.Name)
			}
			if err := w.Advance(timer - 1); err != nil {
				t.Fatal(err)
			}
			if w.Open == 0 {
				t.Fatalf("%s at %d: every window emitted before %d", s.Name, at, timer)
			}
			if err := w.Advance(timer); err != nil {
				t.Fatal(err)
			}
			if w.Open != 0 || len(ends) == 0 || w.FireAt(ends[len(ends)-1]) != timer {
				t.Fatalf("%s at %d: open %d after %d, ends %v", s.Name, at, w.Open, timer, ends)
			}
		}
	}
	if _, ok := sessionWindows().LastTimer(0); ok {
		t.Fatal("session")
	}
}

func sessionWindows() *keyed.Windows {
	w, _ := keyed.New(keyed.Spec{Name: "s", Kind: keyed.Session, Gap: 10, Aggregates: []keyed.Aggregate{{Name: "n", Op: keyed.Count}}}, func(*keyed.Result) error { return nil })
	return w
}
