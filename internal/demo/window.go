package demo

// The demo's window (Options.Window): events per key per hour, checked
// against a recount of the records the lane emitted.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/record"
)

// WindowName is the demo's window: a count of the events of each key in
// each hour of event time, keyed by the record's ordering key.
const WindowName = "events_per_key_hour"

const windowSize = int64(time.Hour / time.Millisecond)

// demoWindow is the window every lane with Options.Window computes.
func demoWindow() signalbox.Window {
	return signalbox.Window{Spec: keyed.Spec{Name: WindowName, Kind: keyed.Tumbling, Size: windowSize,
		Aggregates: []keyed.Aggregate{{Name: "count", Op: keyed.Count}}},
		Args: []func(*record.Record) ([]byte, error){nil}} // a Count takes none
}

// windowKey is a window of one key: the key and its start.
type windowKey struct {
	key   string
	start int64
}

// windowSink collects the window's results; recount counts the records the
// measuring sink saw, by window. Written by the sink goroutine, read after
// Run returns (mu for the readers meanwhile).
type windowSink struct {
	mu      sync.Mutex
	results map[windowKey]int64
	recount map[windowKey]int64
	repeats int64 // results of a window already emitted
}

func newWindowSink() *windowSink {
	return &windowSink{results: map[windowKey]int64{}, recount: map[windowKey]int64{}}
}

func (s *windowSink) Open(context.Context) error  { return nil }
func (s *windowSink) Flush(context.Context) error { return nil }
func (s *windowSink) Close() error                { return nil }

func (s *windowSink) Write(_ context.Context, batch []record.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range batch {
		var v struct {
			Start time.Time `json:"start"`
			Count int64     `json:"count"`
		}
		if err := json.Unmarshal(batch[i].Value, &v); err != nil {
			return fmt.Errorf("demo: window result %s: %w", batch[i].Value, err)
		}
		k := windowKey{string(batch[i].Key), v.Start.UnixMilli()}
		if _, ok := s.results[k]; ok {
			s.repeats++
		}
		s.results[k] = v.Count
	}
	return nil
}

// count recounts r, a timed record the lane emitted, in its window.
func (s *windowSink) count(r *record.Record) {
	s.mu.Lock()
	s.recount[windowKey{r.OrderKey, r.EventTime - r.EventTime%windowSize}]++
	s.mu.Unlock()
}

// WindowCheck is what the demo's window emitted, against a recount of the
// records emitted: every result should equal its window's recount (a
// window is emitted once complete) and none should repeat.
type WindowCheck struct {
	Results    int64 `json:"results"`
	Equal      int64 `json:"equal_to_recount"` // results equal to the recount of their window
	Repeats    int64 `json:"repeats"`          // results of a window already emitted
	OpenAtStop int64 `json:"open_at_stop"`     // windows still open when the job stopped
}

func (s *windowSink) check(open int64) WindowCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := WindowCheck{Results: int64(len(s.results)) + s.repeats, Repeats: s.repeats, OpenAtStop: open}
	for k, n := range s.results {
		if s.recount[k] == n {
			c.Equal++
		}
	}
	return c
}
