package chart

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func TestTimeSeriesIsWellFormedAndDeterministic(t *testing.T) {
	p := LinePanel{Title: "RSS <a&b>", Format: "%.0f MiB", Lines: []Line{
		{Name: "member a", Color: "#1f77b4", Segments: [][]Point{{{0, 10}, {1, 12}}, {{2, 11}, {3, 40}}}},
		{Name: "member b", Color: "#ff7f0e"},
	}}
	svg := TimeSeries("soak\nnote <1>", 3, []Mark{{X: 1.5, Label: "drop <3>", Color: "#999"}}, p)
	wellFormed(t, svg)
	s := string(svg)
	if n := strings.Count(s, "<polyline"); n != 2 {
		t.Errorf("%d polylines, want one per segment (2)", n)
	}
	for _, want := range []string{"RSS &lt;a&amp;b&gt;", "50 MiB", "drop &lt;3&gt;", "member b", ">1 min<", ">3 min<", "note &lt;1&gt;"} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if !bytes.Equal(svg, TimeSeries("soak\nnote <1>", 3, []Mark{{X: 1.5, Label: "drop <3>", Color: "#999"}}, p)) {
		t.Error("the same input drew two different charts")
	}
}

// wellFormed fails the test unless svg is well-formed XML.
func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := d.Token(); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0, 1}, {0.3, 0.5}, {1, 1}, {1.1, 2}, {40, 50}, {51, 100}, {101, 200}} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
