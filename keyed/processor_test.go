package keyed_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/keyed"
)

// tracer counts records per key and sets a timer Every ms after each
// record; each call leaves a line in trace.
type tracer struct {
	every int64
	trace []string
}

type ev struct {
	key string
	t   int64
}

func (f *tracer) Process(c *keyed.Context[int, ev], in ev) error {
	n, _ := c.Get()
	c.Put(n + 1)
	c.SetTimer(in.t + f.every)
	f.trace = append(f.trace, fmt.Sprintf("record %s@%d n=%d", c.Key(), in.t, n+1))
	return nil
}

func (f *tracer) OnTimer(c *keyed.Context[int, ev], t int64) error {
	n, _ := c.Get()
	f.trace = append(f.trace, fmt.Sprintf("timer %s@%d n=%d time=%d", c.Key(), t, n, c.Time()))
	if t%3 == 0 {
		c.SetTimer(t - 1) // below the time: fires in the same call
	}
	if t%5 == 0 {
		c.Delete()
	}
	return nil
}

// TestTimerTieRule: a timer at t fires after every record at t and before
// any record after t; timers of one time fire in key order.
func TestTimerTieRule(t *testing.T) { forStores(t, testTimerTieRule) }

func testTimerTieRule(t *testing.T, k storeKind) {
	f := &tracer{every: 10}
	p := keyed.NewProcessor[int, ev](f, k.ints(t))
	for _, e := range []ev{{"b", 0}, {"a", 0}, {"a", 10}, {"b", 10}, {"a", 11}} {
		if err := p.Process(e.key, e.t, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Advance(20); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"record b@0 n=1", "record a@0 n=1",
		"record a@10 n=2", "record b@10 n=2",
		"timer a@10 n=2 time=10", "timer b@10 n=2 time=10", // after the records at 10, before 11; deleting (10%5 == 0)
		"record a@11 n=1",
		"timer a@20 n=1 time=20", "timer b@20 n=0 time=20",
	}
	if got := f.trace; !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p.Timers() != 1 || p.Keys() != 0 { // a@21 left
		t.Fatalf("%d timers, %d keys", p.Timers(), p.Keys())
	}
}

// TestProcessorScheduleFree: the trace (records, timers, timers a timer
// sets below the time) is the same whatever the watermark schedule, as
// long as Advance never passes a record not yet processed.
func TestProcessorScheduleFree(t *testing.T) { forStores(t, testProcessorScheduleFree) }

func testProcessorScheduleFree(t *testing.T, k storeKind) {
	for seed := range k.seeds(50) {
		rnd := rand.New(rand.NewPCG(seed, 1))
		var evs []ev
		for range 200 {
			evs = append(evs, ev{string(rune('a' + rnd.IntN(4))), rnd.Int64N(300)})
		}
		slices.SortStableFunc(evs, func(a, b ev) int { return int(a.t - b.t) })
		var ref []string
		for sched := range 5 {
			f := &tracer{every: 1 + int64(seed%7)}
			p := keyed.NewProcessor[int, ev](f, k.ints(t))
			for i, e := range evs {
				if err := p.Process(e.key, e.t, e); err != nil {
					t.Fatal(err)
				}
				if sched > 0 && rnd.IntN(sched+1) == 0 && i+1 < len(evs) && evs[i+1].t > e.t {
					_ = p.Advance(e.t + rnd.Int64N(evs[i+1].t-e.t))
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			// The time a timer sees is the schedule's; the order is not.
			tr := make([]string, len(f.trace))
			for i, s := range f.trace {
				tr[i], _, _ = strings.Cut(s, " time=")
			}
			if sched == 0 {
				ref = tr
			} else if !slices.Equal(tr, ref) {
				t.Fatalf("seed %d schedule %d: the trace differs", seed, sched)
			}
			if p.Timers() != 0 {
				t.Fatalf("seed %d: %d timers after Close", seed, p.Timers())
			}
		}
	}
}

// A Function keeps a running count per key and emits it one second after
// each key's last record (a timer it moves): state, timers and their
// order, on records in release order.
func ExampleProcessor() {
	f := &idle{}
	p := keyed.NewProcessor[idleState, ev](f, keyed.NewMemStore[idleState]())
	for _, e := range []ev{{"apple", 0}, {"pear", 200}, {"apple", 900}, {"pear", 2500}} {
		_ = p.Process(e.key, e.t, e)
	}
	_ = p.Advance(3000)
	fmt.Println("open keys:", p.Keys())
	_ = p.Close()
	// Output:
	// pear: 1 records, quiet from 1200
	// apple: 2 records, quiet from 1900
	// open keys: 1
	// pear: 1 records, quiet from 3500
}

type idleState struct{ n, last int64 }

type idle struct{}

func (idle) Process(c *keyed.Context[idleState, ev], in ev) error {
	s, ok := c.Get()
	if ok {
		c.DeleteTimer(s.last + 1000)
	}
	s.n, s.last = s.n+1, in.t
	c.Put(s)
	c.SetTimer(in.t + 1000)
	return nil
}

func (idle) OnTimer(c *keyed.Context[idleState, ev], t int64) error {
	s, _ := c.Get()
	fmt.Printf("%s: %d records, quiet from %d\n", c.Key(), s.n, t)
	c.Delete()
	return nil
}
