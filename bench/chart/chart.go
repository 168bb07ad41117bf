package chart

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/signalbox/signalbox/bench/harness"
	"github.com/signalbox/signalbox/bench/report"
)

// Series is one set of bars in a panel, one value per label.
type Series struct {
	Name   string
	Color  string
	Values []float64
	Format string // fmt verb for the value label, e.g. "%.2f%%"
}

// Panel is one horizontal bar chart.
type Panel struct {
	Title  string
	Labels []string
	Series []Series
	Log    bool // log10 scale (values ≤ LogMin are drawn at LogMin)
	LogMin float64
	// Bound, when positive, is drawn as a dashed vertical line across the
	// panel at that value, labelled BoundLabel (a target's limit).
	Bound      float64
	BoundLabel string
}

const (
	width    = 760
	labelW   = 150
	valueW   = 110
	barH     = 14
	gap      = 8
	titleH   = 28
	panelGap = 18
)

// height is the panel's height in pixels.
func (p Panel) height() int {
	return titleH + len(p.Labels)*(len(p.Series)*barH+gap) + gap
}

// scale maps a value to a bar length in [0, plotW].
func (p Panel) scale(v, maxV float64, plotW int) float64 {
	if p.Log {
		lo := math.Log10(p.LogMin)
		hi := math.Log10(max(maxV, p.LogMin*10))
		return float64(plotW) * (math.Log10(max(v, p.LogMin)) - lo) / (hi - lo)
	}
	if maxV <= 0 {
		return 0
	}
	return float64(plotW) * v / maxV
}

func (p Panel) draw(b *bytes.Buffer, y int) {
	fmt.Fprintf(b, `<text x="10" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", y+18, html.EscapeString(p.Title))
	maxV := p.Bound
	for _, s := range p.Series {
		for _, v := range s.Values {
			maxV = max(maxV, v)
		}
	}
	plotW := width - labelW - valueW
	yy := y + titleH
	if p.Bound > 0 {
		x := float64(labelW) + p.scale(p.Bound, maxV, plotW)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333" stroke-dasharray="4,3"><title>%s</title></line>`+"\n", x, yy-4, x, y+p.height()-gap, html.EscapeString(p.BoundLabel))
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="10" text-anchor="end">%s</text>`+"\n", x-3, yy-4, html.EscapeString(p.BoundLabel))
	}
	for i, l := range p.Labels {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" text-anchor="end">%s</text>`+"\n", labelW-8, yy+barH*len(p.Series)/2+4, html.EscapeString(l))
		for _, s := range p.Series {
			v := s.Values[i]
			w := p.scale(v, maxV, plotW)
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n", labelW, yy, w, barH-2, s.Color, html.EscapeString(s.Name))
			fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="11">%s</text>`+"\n", float64(labelW)+w+4, yy+barH-4, html.EscapeString(fmt.Sprintf(s.Format, v)))
			yy += barH
		}
		yy += gap
	}
}

// SVG draws panels one under the other, with a legend per panel of several
// series. The title's first line is the heading; further lines are a
// smaller note under it (the command, machine, date and commit).
func SVG(title string, panels ...Panel) []byte {
	lines := titleLines(title)
	top := 40 + 14*(len(lines)-1)
	h := top
	for _, p := range panels {
		h += p.height() + panelGap
		if len(p.Series) > 1 {
			h += 16
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n", width, h, width, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", html.EscapeString(lines[0]))
	for i, l := range lines[1:] {
		fmt.Fprintf(&b, `<text x="10" y="%d" font-size="11">%s</text>`+"\n", 40+14*i, html.EscapeString(l))
	}
	y := top
	for _, p := range panels {
		p.draw(&b, y)
		y += p.height()
		if len(p.Series) > 1 {
			x := labelW
			for _, s := range p.Series {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`+"\n", x, y, s.Color, x+14, y+9, html.EscapeString(s.Name))
				x += 14 + 8*len(s.Name) + 16
			}
			y += 16
		}
		y += panelGap
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// noteChars is about how many characters of a note line fit the width.
const noteChars = 120

// titleLines splits a title into its heading and note lines, wrapping note
// lines longer than the chart is wide at spaces.
func titleLines(title string) []string {
	in := strings.Split(title, "\n")
	out := []string{in[0]}
	for _, l := range in[1:] {
		for len(l) > noteChars {
			i := strings.LastIndex(l[:noteChars], " ")
			if i <= 0 {
				break
			}
			out, l = append(out, l[:i]), "    "+l[i+1:]
		}
		out = append(out, l)
	}
	return out
}

// Report draws the benchmark report's three panels. The raw consumer's bar
// is called the ceiling only when no strategy replays faster than it.
func Report(r harness.Report) []byte {
	var labels []string
	var ooo, mean, p99, thr []float64
	fastest := 0.0
	for _, x := range r.Results {
		labels = append(labels, x.Strategy)
		ooo = append(ooo, x.OutOfOrderPct)
		mean = append(mean, x.LiveLatency.MeanMs)
		p99 = append(p99, x.LiveLatency.P99Ms)
		thr = append(thr, x.Throughput.PerSecond)
		fastest = max(fastest, x.Throughput.PerSecond)
	}
	panels := []Panel{
		{Title: "Out of order (% of timed records emitted; lower is better)", Labels: labels,
			Series: []Series{{Name: "out of order", Color: "#d62728", Values: ooo, Format: "%.2f%%"}}},
		{Title: "Live release latency beyond the delay (ms, log scale; lower is better)", Labels: labels, Log: true, LogMin: 0.1,
			Series: []Series{
				{Name: "mean", Color: "#1f77b4", Values: mean, Format: "%.1f ms"},
				{Name: "p99", Color: "#aec7e8", Values: p99, Format: "%.1f ms"},
			}},
	}
	if r.Ceiling.PerSecond > 0 {
		title := "Replay throughput (records/s); " + r.CeilingConsumer + ": no ordering, the ceiling"
		if fastest > r.Ceiling.PerSecond {
			title = "Replay throughput (records/s); " + r.CeilingConsumer + ": no ordering, NOT a ceiling (a strategy outruns it)"
		}
		panels = append(panels, Panel{Title: title, Labels: append(labels, r.CeilingConsumer),
			Series: []Series{{Name: "records/s", Color: "#2ca02c", Values: append(thr, r.Ceiling.PerSecond), Format: "%.0f/s"}}})
	}
	p := report.Provenance{Command: r.Command, Cores: r.Cores, CPU: r.CPU, Go: r.GoVersion, Date: r.Started.UTC().Format("2006-01-02 15:04 MST"), Commit: r.Commit}
	return SVG(fmt.Sprintf("signalbox: ordering strategies compared — seed %d\n", r.Seed)+strings.Join(p.Caption(), "\n"), panels...)
}

// Distinct is key of each of rows, first appearances only, in order: the
// panels, labels or series of a chart drawn from result rows.
func Distinct[T any, K comparable](rows []T, key func(T) K) []K {
	var out []K
	for _, r := range rows {
		if k := key(r); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
