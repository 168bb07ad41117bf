package demo

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/signalbox/signalbox/record"
)

// measure is the measuring sink every lane uses (invariants 2 and 3). Its
// fields are written by the engine's sink goroutine and read after Run
// returns.
type measure struct {
	liveFrom int64 // event times above this are live
	delay    int64 // ms
	now      func() time.Time

	out, timeless, ooo, lateFlagged int64
	maxET                           int64
	enriched                        int64          // records enriched from the reference table
	decoded                         int64          // records with a decoded (schema'd) value
	schemas                         map[int32]bool // their writer schema ids
	lastWrite                       time.Time
	lat                             []float64   // ms beyond the delay
	window                          *windowSink // recounts the timed records (Options.Window)
}

func newMeasure(liveFrom int64, delay time.Duration) *measure {
	return &measure{liveFrom: liveFrom, delay: delay.Milliseconds(), now: time.Now, maxET: math.MinInt64, schemas: map[int32]bool{}}
}

func (m *measure) Open(context.Context) error  { return nil }
func (m *measure) Flush(context.Context) error { return nil }
func (m *measure) Close() error                { return nil }

func (m *measure) Write(_ context.Context, batch []record.Record) error {
	now := m.now()
	m.lastWrite = now
	nowMs := float64(now.UnixNano()) / 1e6
	for i := range batch {
		r := &batch[i]
		m.out++
		m.countDecoded(r)
		if isEnriched(r.Value) {
			m.enriched++
		}
		if r.Timeless {
			m.timeless++
			continue
		}
		if r.Late {
			m.lateFlagged++
		}
		if m.window != nil {
			m.window.count(r)
		}
		if r.EventTime < m.maxET {
			m.ooo++
		} else {
			m.maxET = r.EventTime
		}
		if r.EventTime > m.liveFrom && !r.Late {
			m.lat = append(m.lat, nowMs-float64(r.EventTime+m.delay))
		}
	}
	return nil
}

// countDecoded counts r when its value was decoded from a schema'd one.
func (m *measure) countDecoded(r *record.Record) {
	if r.DecodedValue != nil {
		m.decoded++
		m.schemas[r.ValueSchemaID] = true
	}
}

// Latency summarizes release latency beyond the delay, in milliseconds.
type Latency struct {
	Samples int     `json:"samples"`
	MeanMs  float64 `json:"mean_ms"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
}

func summarize(xs []float64) Latency {
	if len(xs) == 0 {
		return Latency{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	q := func(p float64) float64 { return s[min(int(p*float64(len(s))), len(s)-1)] }
	return Latency{Samples: len(s), MeanMs: sum / float64(len(s)), P50Ms: q(0.50), P99Ms: q(0.99), MaxMs: s[len(s)-1]}
}
