package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/signalbox/signalbox/bench/chart"
	"github.com/signalbox/signalbox/bench/report"
)

// stateCommand is how the rows of a state results file are measured: one
// process per row, each appending its row (-json).
const stateCommand = "go build -o /tmp/memtest ./bench/cmd/memtest; for b in 16MiB 256MiB; do /tmp/memtest -store-only idle -budget $b -json docs/state.json; " +
	"for f in 10 50; do for sh in held delay; do /tmp/memtest -store-only $sh -budget $b -factor $f -json docs/state.json; done; done; done"

// stateResults is what -json appends -store-only rows to, and the state
// chart is drawn from.
type stateResults struct {
	Provenance report.Provenance `json:"provenance"` // of the first row's run; Command is stateCommand
	Rows       []stateRow        `json:"rows"`
}

// stateRow is one -store-only run.
type stateRow struct {
	Shape      string  `json:"shape"` // idle, held or delay
	Budget     int64   `json:"budget_bytes"`
	Factor     int     `json:"factor"` // parked set at its peak, × budget; 0 for idle
	ParkedPeak int64   `json:"parked_peak_records"`
	PeakRSS    int64   `json:"peak_rss_bytes"` // VmHWM
	PeakHeap   int64   `json:"peak_go_heap_bytes"`
	Seconds    float64 `json:"seconds"`
	Date       string  `json:"date,omitempty"`   // of this row's run
	Commit     string  `json:"commit,omitempty"` // of this row's run
}

// appendState appends row to the results file at path (created when
// missing) and redraws its chart beside it.
func appendState(path string, row stateRow, started time.Time) error {
	res, err := report.ReadResults[stateResults](path)
	if errors.Is(err, fs.ErrNotExist) {
		res, err = stateResults{Provenance: report.Here(stateCommand, started)}, nil
	}
	if err != nil {
		return err
	}
	here := report.Here(stateCommand, started)
	row.Date, row.Commit = here.Date, here.Commit
	res.Rows = append(res.Rows, row)
	return report.WriteResults(path, res, stateChart)
}

// stateChart draws, for each budget, every shape's peak RSS with the
// target's bound, 2 × budget + the idle run's peak RSS, drawn across.
func stateChart(res stateResults) []byte {
	var panels []chart.Panel
	for _, b := range chart.Distinct(res.Rows, func(r stateRow) int64 { return r.Budget }) {
		p := chart.Panel{Title: fmt.Sprintf("state.memory %s: peak RSS, MiB", report.MiB(b))}
		s := chart.Series{Name: "peak RSS", Color: "#1f77b4", Format: "%.1f MiB"}
		for _, r := range res.Rows {
			if r.Budget != b {
				continue
			}
			l := r.Shape
			if r.Factor > 0 {
				l = fmt.Sprintf("%s, %d× parked", r.Shape, r.Factor)
			}
			if r.Shape == "idle" {
				p.Bound = float64(2*b+r.PeakRSS) / (1 << 20)
				p.BoundLabel = fmt.Sprintf("bound 2 × budget + idle = %.1f MiB", p.Bound)
			}
			p.Labels = append(p.Labels, l)
			s.Values = append(s.Values, float64(r.PeakRSS)/(1<<20))
		}
		p.Series = []chart.Series{s}
		panels = append(panels, p)
	}
	title := "Memory against the state budget (a durable.Store alone)\n" +
		"peak RSS (VmHWM) of one process per row, parked set at 10× and 50× the budget; target ≤ 2 × budget + the idle footprint (dashed)\n" +
		strings.Join(res.Provenance.Caption(), "\n")
	return chart.SVG(title, panels...)
}
