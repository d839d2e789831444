package chart

import (
	"bytes"
	"encoding/xml"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// TestBarFacets draws bar charts of few and many categories: many wrap
// into rows, so the SVG stays within an aspect ratio of 3, shows every
// category, and a short chart stays one row of the usual height.
func TestBarFacets(t *testing.T) {
	for _, n := range []int{3, 7, 8, 40} {
		c := &Chart{Bar: true, Title: "t", XLabel: "x", YLabel: "y"}
		s := Series{Label: "a"}
		for i := range n {
			c.Cats = append(c.Cats, "aggregator-"+strconv.Itoa(i))
			s.Points = append(s.Points, Point{float64(i), 0.5 + float64(i)/100, 0.01, 2})
		}
		c.Series = []Series{s, {Label: "b", Points: s.Points}}
		svg, err := c.Draw("svg")
		if err != nil {
			t.Fatal(err)
		}
		var root struct {
			Width  string `xml:"width,attr"`
			Height string `xml:"height,attr"`
		}
		if err := xml.Unmarshal(svg, &root); err != nil {
			t.Fatal(err)
		}
		w, _ := strconv.ParseFloat(strings.TrimSuffix(root.Width, "pt"), 64)
		h, _ := strconv.ParseFloat(strings.TrimSuffix(root.Height, "pt"), 64)
		if w/h > 3 || h/w > 3 {
			t.Errorf("%d bars: %v x %v pt, aspect ratio over 3", n, w, h)
		}
		rows := (n + c.rowCats() - 1) / c.rowCats()
		if n == 40 && rows < 4 || n == 3 && rows != 1 {
			t.Errorf("%d bars of %d per row: %d rows", n, c.rowCats(), rows)
		}
		if want := float64(rows) * 4 * 72; math.Abs(h-want) > 0.5 {
			t.Errorf("%d bars: height %v pt, want %d rows of 4 in (%v pt)", n, h, rows, want)
		}
		for _, cat := range c.Cats {
			if !bytes.Contains(svg, []byte(">"+cat+"<")) {
				t.Errorf("%d bars: category %q not drawn", n, cat)
			}
		}
		if got := bytes.Count(svg, []byte(">t<")); got != 1 {
			t.Errorf("%d bars: the title is drawn %d times", n, got)
		}
	}
}

// TestErrorBar checks the error bar half-widths against Student-t table
// values (t_{0.975} with 1 and 4 degrees of freedom) and that a single
// value has none.
func TestErrorBar(t *testing.T) {
	for _, tc := range []struct {
		interval string
		sd       float64
		n        int
		want     float64
	}{
		{"std", 0.5, 2, 0.5},
		{"std", 0.5, 1, 0},
		{"ci95", 0.5, 1, 0},
		{"ci95", 1, 2, 12.7062 / math.Sqrt2},
		{"ci95", 2, 5, 2.7764 * 2 / math.Sqrt(5)},
		{"std", math.NaN(), 3, 0},
	} {
		// The table values carry 4 decimals: 5e-5 relative is their rounding.
		if got := ErrorBar(tc.interval, tc.sd, tc.n); math.Abs(got-tc.want) > 5e-5*math.Max(1, tc.want) {
			t.Errorf("errorBar(%s, %v, %d) = %v, want %v", tc.interval, tc.sd, tc.n, got, tc.want)
		}
	}
}

// TestTickLabelsMatchPositions draws charts over y ranges whose ticks need
// more digits than their step's leading one, and checks on the SVG that
// every y tick label equals its position (by the line through the first
// and last label) to the printed precision, and that no two are equal.
func TestTickLabelsMatchPositions(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string // a label that must appear
	}{
		{0.752, 0.823, "0.775"},
		{0.1, 0.9, "0.5"},
		{12.5, 13.6, "13.0"},
		{1.1e8, 1.9e8, "1.5e+08"},
		{-0.026, 0.026, "0"},
	} {
		c := &Chart{YLabel: "y", Series: []Series{{Label: "a", Points: []Point{{1, tc.lo, 0, 1}, {2, tc.hi, 0, 1}}}}}
		svg, err := c.Draw("svg")
		if err != nil {
			t.Fatal(err)
		}
		labels, ys := svgTickLabels(t, svg)
		if len(labels) < 3 || !strings.Contains(strings.Join(labels, " "), tc.want) {
			t.Errorf("[%v, %v]: y tick labels %q, want at least 3 and %q", tc.lo, tc.hi, labels, tc.want)
			continue
		}
		v0, _ := strconv.ParseFloat(labels[0], 64)
		v1, _ := strconv.ParseFloat(labels[len(labels)-1], 64)
		seen := map[string]bool{}
		for i, l := range labels {
			if seen[l] {
				t.Errorf("[%v, %v]: label %q repeats in %q", tc.lo, tc.hi, l, labels)
			}
			seen[l] = true
			v, _ := strconv.ParseFloat(l, 64)
			at := v0 + (v1-v0)*(ys[i]-ys[0])/(ys[len(ys)-1]-ys[0])
			// Half a unit of the last printed digit; the SVG prints the
			// coordinates to 5 significant digits, whose error is far below.
			if math.Abs(v-at) > 0.5*lastDigit(l) {
				t.Errorf("[%v, %v]: label %q sits at %v", tc.lo, tc.hi, l, at)
			}
		}
	}
}

// TestPlotProperties checks how plots are drawn: fonts with fallbacks,
// dodged series, legend titles, bar baselines, deterministic PDF bytes.
func TestPlotProperties(t *testing.T) {
	two := &Chart{Title: "t", LegendTitle: "model.name", Series: []Series{
		{Label: "gcn", Points: []Point{{1, 0.5, 0.1, 2}, {2, 0.6, 0.1, 2}}},
		{Label: "sage", Points: []Point{{1, 0.5, 0.1, 2}, {2, 0.6, 0.1, 2}}},
	}}
	svg, err := two.Draw("svg")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(svg, []byte("font-family:Liberation Serif;")) || !bytes.Contains(svg, []byte("serif;")) {
		t.Errorf("SVG names a font family without a generic fallback")
	}
	if !bytes.Contains(svg, []byte("model.name:")) {
		t.Errorf("SVG has no legend title")
	}
	// The error bars of the two series at x = 1 are drawn at different x:
	// the vertical strokes of series 0 and 1 (by colour) do not overlap.
	xs := errorBarXs(t, two)
	if len(xs[0]) == 0 || len(xs[1]) == 0 {
		t.Fatalf("no error bars found: %v", xs)
	}
	for _, a := range xs[0] {
		for _, b := range xs[1] {
			if math.Abs(float64(a-b)) < 1 {
				t.Errorf("series 0 and 1 draw an error bar at the same x %.1f", a)
			}
		}
	}
	if d := dodge(0, 1); d != 0 {
		t.Errorf("a single series is offset by %v", d)
	}

	// Bars: values close together start at a round baseline, others at 0.
	close := &Chart{Bar: true, Cats: []string{"a", "b"}, Series: []Series{{Points: []Point{{0, 0.81, 0.01, 2}, {1, 0.84, 0.01, 2}}}}}
	if base, ok := close.barBase(); !ok || base <= 0 || base >= 0.80 {
		t.Errorf("close values: baseline %v %v, want in (0, 0.80)", base, ok)
	}
	if !strings.Contains(close.Note(), "not 0") {
		t.Errorf("caption note %q does not say the bars do not start at 0", close.Note())
	}
	far := &Chart{Bar: true, Cats: []string{"a", "b"}, Series: []Series{{Points: []Point{{0, 0.1, 0, 1}, {1, 0.9, 0, 1}}}}}
	if base, ok := far.barBase(); ok {
		t.Errorf("spread values: baseline %v, want 0", base)
	}
	// The PDF is the same bytes every time.
	a, err := close.Draw("pdf")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the next second: a date would differ
	b, _ := close.Draw("pdf")
	if !bytes.Equal(a, b) {
		t.Errorf("two renderings of the same PDF differ")
	}
}

// TestTicks: neighbouring tick labels differ, whatever the magnitude.
func TestTicks(t *testing.T) {
	for _, r := range [][2]float64{{2.0e8, 2.3e8}, {0.76, 0.83}, {0.00001, 0.00003}, {1, 1000}, {-5, 5}} {
		seen := map[string]bool{}
		n := 0
		for _, tk := range (ticks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			n++
			if seen[tk.Label] {
				t.Errorf("range %v: label %q repeats", r, tk.Label)
			}
			seen[tk.Label] = true
		}
		if n < 2 {
			t.Errorf("range %v: %d labelled ticks", r, n)
		}
	}
}

// TestLogTicks: a log axis labels 1, 2 and 5 times each power of ten.
func TestLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks{}).Ticks(8, 500) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"10", "20", "50", "100", "200", "500"}; !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
}

// svgTickLabels returns the y tick labels of an SVG plot: the numeric
// texts that share the left-most x, with the baseline y of each.
func svgTickLabels(t *testing.T, svg []byte) (labels []string, ys []float64) {
	t.Helper()
	type text struct {
		X, Y float64 `xml:",attr"`
		Body string  `xml:",chardata"`
	}
	var all []text
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "text" {
			var tx text
			if err := d.DecodeElement(&tx, &se); err != nil {
				t.Fatal(err)
			}
			if _, err := strconv.ParseFloat(strings.TrimSpace(tx.Body), 64); err == nil {
				all = append(all, tx)
			}
		}
	}
	minX := math.Inf(1)
	for _, tx := range all {
		minX = math.Min(minX, tx.X)
	}
	for _, tx := range all {
		if tx.X == minX {
			labels = append(labels, strings.TrimSpace(tx.Body))
			ys = append(ys, tx.Y)
		}
	}
	return labels, ys
}

// lastDigit is the value of one unit in the last printed digit of a
// number's text.
func lastDigit(s string) float64 {
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	if _, frac, ok := strings.Cut(mant, "."); ok {
		e -= len(frac)
	}
	return math.Pow(10, float64(e))
}

// errorBarXs draws c and returns, per series colour, the x of every
// vertical stroke in that colour (the error bars).
func errorBarXs(t *testing.T, c *Chart) map[int][]vg.Length {
	t.Helper()
	pl, err := c.plotOnly()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder.Canvas{}
	pl.Draw(draw.NewCanvas(rec, 6*vg.Inch, 4*vg.Inch))
	out := map[int][]vg.Length{}
	cur := -1
	for _, a := range rec.Actions {
		switch x := a.(type) {
		case *recorder.SetColor:
			cur = -1
			for si := range c.Series {
				if colorEq(x.Color, plotutil.Color(si)) {
					cur = si
				}
			}
		case *recorder.Stroke:
			p := x.Path
			if cur >= 0 && len(p) == 2 && p[0].Pos.X == p[1].Pos.X && p[0].Pos.Y != p[1].Pos.Y {
				out[cur] = append(out[cur], p[0].Pos.X)
			}
		}
	}
	return out
}

// colorEq reports whether two colours are the same.
func colorEq(a, b color.Color) bool {
	if a == nil || b == nil {
		return false
	}
	r1, g1, b1, a1 := a.RGBA()
	r2, g2, b2, a2 := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
}
