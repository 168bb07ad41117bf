package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/bench/report"
)

// TestAppendState: -json creates the results file with the first row and
// appends the next, redrawing the chart each time; the chart draws the
// bound from the idle row of the same budget.
func TestAppendState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	idle := stateRow{Shape: "idle", Budget: 16 << 20, PeakRSS: 35 << 20}
	held := stateRow{Shape: "held", Budget: 16 << 20, Factor: 10, PeakRSS: 52 << 20}
	for _, r := range []stateRow{idle, held} {
		if err := appendState(path, r, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	res, err := report.ReadResults[stateResults](path)
	if err != nil || len(res.Rows) != 2 || res.Rows[1].Shape != "held" || res.Provenance.Command != stateCommand || res.Rows[1].Date == "" {
		t.Fatalf("results %+v, %v; want the idle and held rows under the command", res, err)
	}
	svg, err := os.ReadFile(report.SVGPath(path))
	if err != nil || !bytes.Equal(svg, stateChart(res)) {
		t.Fatalf("the chart beside the results is not drawn from them (%v)", err)
	}
	if !strings.Contains(string(svg), "bound 2 × budget + idle = 67.0 MiB") || !strings.Contains(string(svg), "held, 10× parked") {
		t.Errorf("chart lacks the bound (2 × 16 + 35 MiB) or the held row:\n%s", svg)
	}
}

// TestDocsChartIsDrawnFromItsResults: docs/state.svg is exactly the chart
// of docs/state.json, so it can neither drift from its data nor be edited
// by hand. Redraw it with go run ./bench/cmd/memtest -replot docs/state.json
func TestDocsChartIsDrawnFromItsResults(t *testing.T) {
	if err := report.CheckChart("../../../docs/state.json", stateChart); err != nil {
		t.Fatal(err)
	}
}
