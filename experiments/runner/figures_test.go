package runner

import (
	"bytes"
	"context"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"strata/core/train"
)

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
		c := &chart{yLabel: "y", series: []chartSeries{{label: "a", pts: []chartPoint{{1, tc.lo, 0, 1}, {2, tc.hi, 0, 1}}}}}
		svg, err := c.draw("svg")
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
		if got := errorBar(tc.interval, tc.sd, tc.n); math.Abs(got-tc.want) > 5e-5*math.Max(1, tc.want) {
			t.Errorf("errorBar(%s, %v, %d) = %v, want %v", tc.interval, tc.sd, tc.n, got, tc.want)
		}
	}
}

// TestPlotWording writes the reports of a one-seed and a two-seed
// experiment: ± wording and error bars only with two seeds, the 95%
// interval when the plot asks for it, axis labels from the metric docs.
func TestPlotWording(t *testing.T) {
	for _, tc := range []struct {
		seeds, interval string
		want, not       []string
	}{
		{"[0]", "", []string{"test accuracy", "One run per point"}, []string{"±", "standard deviation"}},
		{"[0, 1]", "", []string{"± std over seeds", "one standard deviation"}, []string{"95%"}},
		{"[0, 1]", "ci95", []string{"95% Student-t interval"}, []string{"one standard deviation"}},
	} {
		head := "name = \"w\"\nmetrics = [\"test_acc\", \"epoch_time_median_s\"]\nseeds = " + tc.seeds + `
[[axis]]
key = "model.hidden"
values = [8, 16]
`
		if tc.interval != "" {
			head += "[[plot]]\nx = \"model.hidden\"\ny = \"test_acc\"\nfile = \"acc.svg\"\ninterval = \"" + tc.interval + "\"\n"
		}
		p, err := NewPlan(context.Background(), mustParse(t, exp(head)), "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		recs := records(p, func(r *Run) *train.Result {
			return &train.Result{TestAcc: 0.5 + float64(r.Index)/100, EpochTimeMedianS: 1 + float64(r.Index)}
		})
		out := t.TempDir()
		if err := WriteReports(p, recs, out, time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
		// The same input gives byte-identical SVGs.
		again := t.TempDir()
		if err := WriteReports(p, recs, again, time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		svgs, _ := filepath.Glob(filepath.Join(out, "*.svg"))
		for _, f := range svgs {
			a, _ := os.ReadFile(f)
			b, err := os.ReadFile(filepath.Join(again, filepath.Base(f)))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: a second rendering differs (%v)", filepath.Base(f), err)
			}
		}
		for _, f := range append(svgs, filepath.Join(out, "report.html")) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(f, ".svg") {
				all.Write(b)
			} else if _, after, ok := strings.Cut(string(b), "<figure"); ok {
				all.WriteString(after) // the captions, not the table notes
			}
		}
		s := all.String()
		for _, w := range tc.want {
			if !strings.Contains(s, w) {
				t.Errorf("seeds %s interval %q: no %q in the plots", tc.seeds, tc.interval, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(s, w) {
				t.Errorf("seeds %s interval %q: %q in the plots", tc.seeds, tc.interval, w)
			}
		}
	}
}

// TestMetricLabel checks the axis labels taken from the metric docs.
func TestMetricLabel(t *testing.T) {
	e := &Experiment{Kind: kindByName("train")}
	for _, tc := range [][2]string{
		{"test_acc", "test accuracy"},
		{"epoch_time_median_s", "median wall time of one training epoch (s)"},
		{"peak_rss_bytes", "peak resident memory of the process (MiB)"},
		{"peak_tier_bytes.device0", "peak bytes allocated on a memory tier: device0 (MiB)"},
		{"no_such_metric", "no_such_metric"},
	} {
		if got, _ := e.yLabel(tc[0]); got != tc[1] {
			t.Errorf("yLabel(%s) = %q, want %q", tc[0], got, tc[1])
		}
	}
}

// TestBarFacets draws bar charts of few and many categories: many wrap
// into rows, so the SVG stays within an aspect ratio of 3, shows every
// category, and a short chart stays one row of the usual height.
func TestBarFacets(t *testing.T) {
	for _, n := range []int{3, 7, 8, 40} {
		c := &chart{bar: true, title: "t", xLabel: "x", yLabel: "y"}
		s := chartSeries{label: "a"}
		for i := range n {
			c.cats = append(c.cats, "aggregator-"+strconv.Itoa(i))
			s.pts = append(s.pts, chartPoint{float64(i), 0.5 + float64(i)/100, 0.01, 2})
		}
		c.series = []chartSeries{s, {label: "b", pts: s.pts}}
		svg, err := c.draw("svg")
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
		for _, cat := range c.cats {
			if !bytes.Contains(svg, []byte(">"+cat+"<")) {
				t.Errorf("%d bars: category %q not drawn", n, cat)
			}
		}
		if got := bytes.Count(svg, []byte(">t<")); got != 1 {
			t.Errorf("%d bars: the title is drawn %d times", n, got)
		}
	}
}

// TestPaperStyle writes a [[plot]] with style = "paper": its SVG is one
// column (3.5 in = 252 pt) wide, legend included, and carries no title;
// the same plot in the screen style does.
func TestPaperStyle(t *testing.T) {
	for _, style := range []string{"paper", "screen"} {
		p, err := NewPlan(context.Background(), mustParse(t, exp(`name = "w"
metrics = ["test_acc"]
seeds = [0, 1]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[plot]]
x = "model.hidden"
y = "test_acc"
series = "model.name"
file = "acc.svg"
style = "`+style+`"
`)), "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		recs := records(p, func(r *Run) *train.Result { return &train.Result{TestAcc: 0.5 + float64(r.Index)/100} })
		out := t.TempDir()
		if err := WriteReports(p, recs, out, time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
		svg, err := os.ReadFile(filepath.Join(out, "acc.svg"))
		if err != nil {
			t.Fatal(err)
		}
		var root struct {
			Width string `xml:"width,attr"`
		}
		if err := xml.Unmarshal(svg, &root); err != nil {
			t.Fatal(err)
		}
		title := bytes.Contains(svg, []byte(">w: test_acc by model.hidden"))
		switch {
		case style == "paper" && (root.Width != "252pt" || title):
			t.Errorf("paper: width %s (want 252pt), title drawn %v", root.Width, title)
		case style == "screen" && (root.Width == "252pt" || !title):
			t.Errorf("screen: width %s, title drawn %v", root.Width, title)
		}
	}
}
