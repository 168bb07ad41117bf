package chart

import (
	"bytes"
	"fmt"
	"html"
	"math"
)

// Point is one sample of a time series: X in minutes, Y in the panel's unit.
type Point struct{ X, Y float64 }

// Line is one series of a LinePanel. Segments are drawn apart: a gap
// between them (a process not running) stays blank.
type Line struct {
	Name     string
	Color    string
	Segments [][]Point
}

// Mark is a vertical line across every panel at X (minutes), e.g. a fault.
type Mark struct {
	X     float64
	Label string
	Color string
}

// LinePanel is one time-series chart; Y starts at 0.
type LinePanel struct {
	Title  string
	Format string // fmt verb of the y-axis labels, e.g. "%.0f MiB"
	Lines  []Line
}

const (
	linePanelH = 170
	plotLeft   = 80
	plotRight  = width - 20
)

// TimeSeries draws panels one under the other, sharing the x axis
// [0, xMax] minutes, with marks drawn across each panel. The title's first
// line is the heading; further lines are a smaller note under it.
func TimeSeries(title string, xMax float64, marks []Mark, panels ...LinePanel) []byte {
	lines := titleLines(title)
	top := 40 + 14*(len(lines)-1)
	h := top + len(panels)*(linePanelH+panelGap) + 20
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n", width, h, width, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", html.EscapeString(lines[0]))
	for i, l := range lines[1:] {
		fmt.Fprintf(&b, `<text x="10" y="%d" font-size="11">%s</text>`+"\n", 40+14*i, html.EscapeString(l))
	}
	xMax = max(xMax, 1e-9)
	y := top
	for _, p := range panels {
		p.draw(&b, y, xMax, marks)
		y += linePanelH + panelGap
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func (p LinePanel) draw(b *bytes.Buffer, y0 int, xMax float64, marks []Mark) {
	top, bottom := y0+titleH, y0+linePanelH-18
	yMax := 0.0
	for _, l := range p.Lines {
		for _, s := range l.Segments {
			for _, pt := range s {
				yMax = max(yMax, pt.Y)
			}
		}
	}
	yMax = niceCeil(yMax)
	px := func(x float64) float64 { return plotLeft + (plotRight-plotLeft)*x/xMax }
	py := func(v float64) float64 { return float64(bottom) - float64(bottom-top)*v/yMax }
	fmt.Fprintf(b, `<text x="10" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", y0+18, html.EscapeString(p.Title))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", plotLeft, top, plotRight-plotLeft, bottom-top)
	for _, f := range []float64{0, 0.5, 1} {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end">%s</text>`+"\n", plotLeft-4, py(f*yMax)+3, html.EscapeString(fmt.Sprintf(p.Format, f*yMax)))
	}
	step := niceCeil(xMax / 4)
	for x := 0.0; x <= xMax*(1+1e-9); x += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%g min</text>`+"\n", px(x), bottom+12, x)
	}
	for _, m := range marks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="3,3"><title>%s</title></line>`+"\n",
			px(m.X), top, px(m.X), bottom, m.Color, html.EscapeString(m.Label))
	}
	lx := plotLeft + 8
	for _, l := range p.Lines {
		for _, s := range l.Segments {
			b.WriteString(`<polyline fill="none" stroke-width="1.5" stroke="` + l.Color + `" points="`)
			for i, pt := range s {
				if i > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(b, "%.1f,%.1f", px(pt.X), py(pt.Y))
			}
			b.WriteString(`"/>` + "\n")
		}
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`+"\n", lx, top+4, l.Color, lx+14, top+13, html.EscapeString(l.Name))
		lx += 14 + 7*len(l.Name) + 16
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v ≤ 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}
