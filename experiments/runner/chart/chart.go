// Package chart draws the experiments' figures with gonum/plot: series
// of points (mean ± an error bar) over a numeric or categorical x, as
// lines or bars, faceted when there are many categories, in SVG, PNG and
// PDF (reproducible: the PDF dates are fixed), on screen or paper sizes.
package chart

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart is a plot to draw: series of points (mean ± std) over a numeric
// or categorical x.
type Chart struct {
	Title, XLabel, YLabel string
	Cats                  []string    // categorical x labels; nil for a numeric x
	XTicks                []plot.Tick // numeric x: a tick at every value
	XLog, YLog, Bar       bool
	Series                []Series
	LegendTitle           string // what the series labels are values of
	Paper                 bool   // paper style: no title, paperWidth wide, small fonts
}

// Note is a sentence for the caption about how the chart is drawn: a bar
// chart whose axis does not start at 0, series drawn side by side.
func (c *Chart) Note() string {
	var s string
	if base, ok := c.barBase(); ok {
		s += fmt.Sprintf(" The bars start at %s, not 0, as the values lie close together.", strconv.FormatFloat(base, 'g', -1, 64))
	}
	if !c.Bar && c.drawnSeries() > 1 {
		s += " Series that share an x value are drawn slightly apart so that their error bars do not hide each other."
	}
	return s
}

// drawnSeries counts the series with points.
func (c *Chart) drawnSeries() int {
	n := 0
	for _, s := range c.Series {
		if len(s.Points) > 0 {
			n++
		}
	}
	return n
}

// barBase is the baseline of a bar chart whose values are all positive and
// close together (the spread of mean ± std under a quarter of the largest
// value): a round number below the smallest, so that the differences are
// visible. ok is false when the bars start at 0.
func (c *Chart) barBase() (base float64, ok bool) {
	if !c.Bar || c.YLog {
		return 0, false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, pt := range s.Points {
			std := pt.Std
			if math.IsNaN(std) {
				std = 0
			}
			lo, hi = math.Min(lo, pt.Mean-std), math.Max(hi, pt.Mean+std)
		}
	}
	if !(lo > 0) || hi <= lo || hi-lo >= 0.25*hi {
		return 0, false
	}
	step := math.Pow(10, math.Floor(math.Log10(hi-lo)))
	base = math.Floor((lo-0.15*(hi-lo))/step) * step
	if base <= 0 {
		return 0, false
	}
	return base, true
}

// dodgeStep is the horizontal distance between series drawn at the same x.
const dodgeStep = 4 // points

// dodge returns the offset of series i of n: centred on the true x, a
// dodgeStep apart, at most 24 points in all.
func dodge(i, n int) vg.Length {
	if n < 2 {
		return 0
	}
	step := min(vg.Points(dodgeStep), vg.Points(24)/vg.Length(n-1))
	return step * (vg.Length(i) - vg.Length(n-1)/2)
}

// dodged draws a plotter shifted sideways by dx.
type dodged struct {
	plot.Plotter
	dx vg.Length
}

func (d dodged) Plot(c draw.Canvas, plt *plot.Plot) {
	d.Plotter.Plot(draw.Crop(c, d.dx, d.dx, 0, 0), plt)
}

// DataRange passes the inner plotter's range on.
func (d dodged) DataRange() (xmin, xmax, ymin, ymax float64) {
	if r, ok := d.Plotter.(plot.DataRanger); ok {
		return r.DataRange()
	}
	return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
}

type Series struct {
	Label  string
	Points []Point
}

// Point is a point of a series: std is the half-width of its error
// bar (errorBar), n the runs it aggregates.
type Point struct {
	X, Mean, Std float64
	N            int
}

// ErrorBar is the half-width of the error bar of a mean over n values of
// sample standard deviation sd: sd itself, or for interval "ci95" the 95%
// Student-t interval of the mean (n−1 degrees of freedom); 0 below two
// values, which have no spread.
func ErrorBar(interval string, sd float64, n int) float64 {
	if n < 2 || math.IsNaN(sd) {
		return 0
	}
	if interval == "ci95" {
		return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975) * sd / math.Sqrt(float64(n))
	}
	return sd
}

// Spread names what the error bars of interval span, for titles and
// captions.
func Spread(interval string) (title, caption string) {
	if interval == "ci95" {
		return "mean ± 95% CI over seeds", "Mean over the seeds, error bars of the 95% Student-t interval of the mean (n−1 degrees of freedom)"
	}
	return "mean ± std over seeds", "Mean over the seeds, error bars of one standard deviation"
}

// Aggregated reports whether some point of the chart is a mean over two
// runs or more: only then do ± wording and error bars belong on it.
func (c *Chart) Aggregated() bool {
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if pt.N >= 2 {
				return true
			}
		}
	}
	return false
}

// assemble builds the plot and its legend, and the canvas size without
// the legend.
func (c *Chart) assemble() (pl *plot.Plot, leg plot.Legend, entries int, w, h vg.Length, err error) {
	pl = plot.New()
	pl.Title.Text = c.Title
	pl.X.Label.Text = c.XLabel
	pl.Y.Label.Text = c.YLabel
	pl.Y.Tick.Marker = ticks{}
	if c.YLog {
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = logTicks{}
	}
	pl.Title.TextStyle.Font.Size = vg.Points(13)
	pl.Title.Padding = vg.Points(6) // room above the title: its ascenders were cut
	pl.X.Label.TextStyle.Font.Size = vg.Points(12)
	pl.Y.Label.TextStyle.Font.Size = vg.Points(12)
	leg = plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.Padding = vg.Points(3)
	leg.TextStyle.Font.Size = vg.Points(11)
	if c.LegendTitle != "" && c.drawnSeries() > 0 {
		leg.Add(c.LegendTitle + ":") // the title: an entry without a thumbnail
	}
	pl.Add(plotter.NewGrid())
	if c.Cats != nil {
		pl.NominalX(c.Cats...)
	} else {
		pl.X.Tick.Marker = plot.ConstantTicks(c.XTicks)
		if c.XLog {
			pl.X.Scale = plot.LogScale{}
		}
	}
	if c.Paper {
		c.paperStyle(pl, &leg)
	}
	n := len(c.Series)
	// Bar width: the categories share about 5.2 inches of plot width.
	// Width: 6 inches, more when the categories need room for their
	// labels (about 6 points a character at 10 points) or their bars.
	w, h = 6*vg.Inch, 4*vg.Inch
	var per vg.Length // room of one category
	if c.Paper {
		w, h = paperWidth, paperHeight
	}
	if c.Cats != nil {
		per = c.catRoom()
		if !c.Paper {
			w = max(w, per*vg.Length(len(c.Cats))+0.8*vg.Inch)
		}
		per = (w - 0.8*vg.Inch) / vg.Length(max(len(c.Cats), 1))
	}
	var barW vg.Length
	if c.Bar {
		barW = min(per*0.8/vg.Length(max(n, 1)), vg.Points(36))
	}
	drawnIdx := 0 // index among the series with points, for the dodge
	for si, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		dx := dodge(drawnIdx, c.drawnSeries())
		drawnIdx++
		col := plotutil.Color(si)
		if c.Bar {
			vals := make(plotter.Values, len(c.Cats))
			errs := make([]Point, 0, len(s.Points))
			for _, pt := range s.Points {
				vals[int(pt.X)] = pt.Mean
				errs = append(errs, pt)
			}
			bars, err := plotter.NewBarChart(vals, barW)
			if err != nil {
				return nil, leg, 0, 0, 0, err
			}
			bars.Color = col
			bars.LineStyle.Width = 0
			bars.Offset = barW * (vg.Length(si) - vg.Length(n-1)/2)
			pl.Add(bars, &barErrors{pts: errs, offset: bars.Offset})
			if s.Label != "" {
				leg.Add(s.Label, bars)
				entries++
			}
			continue
		}
		line, points, ok, err := c.lineSeries(pl, s, si, dx)
		if err != nil {
			return nil, leg, 0, 0, 0, err
		}
		if !ok {
			continue
		}
		if s.Label != "" {
			leg.Add(s.Label, line, points)
			entries++
		}
	}
	c.margins(pl)
	return pl, leg, entries, w, h, nil
}

// catRoom is the room one category of a categorical x needs: its longest
// label (about 6 points a character at 10 points) or its bars.
func (c *Chart) catRoom() vg.Length {
	longest := 0
	for _, l := range c.Cats {
		longest = max(longest, len([]rune(l)))
	}
	per := vg.Points(6*float64(longest) + 12)
	if c.Bar {
		per = max(per, vg.Length(max(len(c.Series), 1))*vg.Points(14)+vg.Points(12))
	}
	return per
}

// maxRowWidth bounds the plot width of one row of a bar chart: more
// categories wrap into rows (facets) of one y range, so that a chart of
// many categories keeps a sane aspect ratio (a row is 4 in high).
const maxRowWidth = 10 * vg.Inch

// rowCats is the most categories one row of the bar chart holds.
func (c *Chart) rowCats() int {
	if c.Paper {
		return max(1, int((paperWidth-0.8*vg.Inch)/c.catRoom()))
	}
	return max(1, int((maxRowWidth-0.8*vg.Inch)/c.catRoom()))
}

// The paper style's size: one column of a two-column paper.
const (
	paperWidth  = 3.5 * vg.Inch
	paperHeight = 2.4 * vg.Inch
)

// paperStyle drops the title (the paper's caption says it) and sizes the
// fonts for a figure printed paperWidth wide: 8 points for the axis
// labels, 7 for ticks and legend.
func (c *Chart) paperStyle(pl *plot.Plot, leg *plot.Legend) {
	pl.Title.Text = ""
	for _, a := range []*plot.Axis{&pl.X, &pl.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(8)
		a.Tick.Label.Font.Size = vg.Points(7)
	}
	leg.TextStyle.Font.Size = vg.Points(7)
}

// facets splits a bar chart wider than maxRowWidth into balanced rows of
// at most rowCats categories; the title stays on the first row, the x
// label on the last. Any other chart is its own single facet.
func (c *Chart) facets() []*Chart {
	maxCats := c.rowCats()
	if !c.Bar || len(c.Cats) <= maxCats {
		return []*Chart{c}
	}
	rows := (len(c.Cats) + maxCats - 1) / maxCats
	per := (len(c.Cats) + rows - 1) / rows
	var out []*Chart
	for lo := 0; lo < len(c.Cats); lo += per {
		hi := min(lo+per, len(c.Cats))
		f := *c
		f.Cats, f.Series = c.Cats[lo:hi], nil
		if lo > 0 {
			f.Title = ""
		}
		if hi < len(c.Cats) {
			f.XLabel = ""
		}
		for _, s := range c.Series {
			fs := Series{Label: s.Label}
			for _, pt := range s.Points {
				if i := int(pt.X); i >= lo && i < hi {
					pt.X -= float64(lo)
					fs.Points = append(fs.Points, pt)
				}
			}
			f.Series = append(f.Series, fs)
		}
		out = append(out, &f)
	}
	return out
}

// facetPlots assembles the chart's facets with one y range, and the size
// of one row: the widest facet's width.
func (c *Chart) facetPlots() (pls []*plot.Plot, w, h vg.Length, err error) {
	for _, f := range c.facets() {
		pl, _, _, fw, fh, err := f.assemble()
		if err != nil {
			return nil, 0, 0, err
		}
		pls = append(pls, pl)
		w, h = max(w, fw), fh
	}
	lo, hi := pls[0].Y.Min, pls[0].Y.Max
	for _, pl := range pls {
		lo, hi = math.Min(lo, pl.Y.Min), math.Max(hi, pl.Y.Max)
	}
	for _, pl := range pls {
		pl.Y.Min, pl.Y.Max = lo, hi
	}
	return pls, w, h, nil
}

// margins pads the plot's ranges so that no point sits on the frame; bars
// start at 0 or the round baseline of barBase.
func (c *Chart) margins(pl *plot.Plot) {
	pad := func(a *plot.Axis, f float64, log bool) {
		if log {
			a.Min /= 1 + 3*f
			a.Max *= 1 + 3*f
			return
		}
		d := a.Max - a.Min
		if d == 0 {
			d = math.Max(math.Abs(a.Max), 1)
		}
		a.Min -= f * d
		a.Max += f * d
	}
	if c.Cats == nil {
		pad(&pl.X, 0.06, c.XLog)
	}
	if c.Bar {
		pl.Y.Min = math.Min(pl.Y.Min, 0)
		if base, ok := c.barBase(); ok {
			pl.Y.Min = base
		}
		pl.Y.Max += 0.08 * (pl.Y.Max - pl.Y.Min)
		if pl.Y.Max == pl.Y.Min {
			pl.Y.Max = pl.Y.Min + 1
		}
	} else {
		pad(&pl.Y, 0.08, c.YLog)
	}
}

// lineSeries adds series s (the si-th, dodged by dx) to the plot as a
// line with points and error bars; ok is false when it has no point to
// draw (on a log scale, none above 0).
func (c *Chart) lineSeries(pl *plot.Plot, s Series, si int, dx vg.Length) (line *plotter.Line, points *plotter.Scatter, ok bool, err error) {
	col := plotutil.Color(si)
	var xy plotter.XYs
	var ye plotter.YErrors
	for _, pt := range s.Points {
		if c.YLog && pt.Mean <= 0 {
			continue // not on a log scale
		}
		lo := pt.Std
		if c.YLog && pt.Mean-lo <= 0 {
			lo = pt.Mean / 2
		}
		xy = append(xy, plotter.XY{X: pt.X, Y: pt.Mean})
		ye = append(ye, struct{ Low, High float64 }{lo, pt.Std})
	}
	if len(xy) == 0 {
		return nil, nil, false, nil
	}
	line, points, err = plotter.NewLinePoints(xy)
	if err != nil {
		return nil, nil, false, err
	}
	line.Color = col
	line.Width = vg.Points(1.5)
	line.Dashes = plotutil.Dashes(si)
	points.Color = col
	points.Shape = plotutil.Shape(si)
	points.Radius = vg.Points(3)
	eb, err := plotter.NewYErrorBars(errPoints{xy, ye})
	if err != nil {
		return nil, nil, false, err
	}
	eb.Color = col
	pl.Add(dodged{line, dx}, dodged{points, dx}, dodged{eb, dx})
	return line, points, true, nil
}

// plotOnly is the chart's plot without the legend (for tests).
func (c *Chart) plotOnly() (*plot.Plot, error) {
	pl, _, _, _, _, err := c.assemble()
	return pl, err
}

// Draw renders the chart in format ("svg", "png", "pdf"); nil when it
// has no point.
func (c *Chart) Draw(format string) ([]byte, error) {
	drawn := false
	for _, s := range c.Series {
		if len(s.Points) > 0 {
			drawn = true
		}
	}
	if !drawn {
		return nil, nil
	}
	pls, w, h, err := c.facetPlots()
	if err != nil {
		return nil, err
	}
	_, leg, entries, _, _, err := c.assemble() // the legend of every series
	if err != nil {
		return nil, err
	}
	rowH := h
	h *= vg.Length(len(pls))
	// The legend goes to the right of the plot, where it hides no data.
	var legW vg.Length
	if entries > 0 {
		probe, err := draw.NewFormattedCanvas(w, h, format)
		if err != nil {
			return nil, err
		}
		legW = leg.Rectangle(draw.New(probe)).Size().X + vg.Points(12)
		if !c.Paper { // a paper figure keeps its width: the plot narrows
			w += legW
		}
	}
	cv, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(cv)
	for i, pl := range pls {
		pl.Draw(draw.Crop(dc, 0, -legW, h-rowH*vg.Length(i+1), -rowH*vg.Length(i)))
	}
	if legW > 0 {
		leg.YOffs = -vg.Points(24)
		leg.Draw(draw.Crop(dc, w-legW, 0, 0, 0))
	}
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return nil, err
	}
	switch format {
	case "svg":
		return svgFontFallback(buf.Bytes()), nil
	case "pdf":
		// A fixed date of the same length (the cross-reference offsets
		// stay valid): the same results give the same bytes.
		return pdfDateRE.ReplaceAll(buf.Bytes(), []byte("${1}20000101000000")), nil
	}
	return buf.Bytes(), nil
}

// pdfDateRE matches the dates fpdf writes into a PDF's information
// dictionary.
var pdfDateRE = regexp.MustCompile(`(/(?:CreationDate|ModDate) \(D:)[0-9]{14}`)

// svgFontFallback gives every font family of an SVG a fallback list:
// gonum measures text with the Liberation fonts, so a viewer without them
// would substitute its default font, often wider, and clip the legend.
// Liberation Serif, Sans and Mono are metric-compatible with Times New
// Roman, Arial and Courier New, so those come next, then the generic
// family. (Embedding the fonts instead would add about 400 KiB to every
// SVG; see docs/decisions.md.)
func svgFontFallback(svg []byte) []byte {
	for _, f := range [...][2]string{
		{"Liberation Serif", "'Liberation Serif','Times New Roman',Times,serif"},
		{"Liberation Sans", "'Liberation Sans',Arial,Helvetica,sans-serif"},
		{"Liberation Mono", "'Liberation Mono','Courier New',Courier,monospace"},
	} {
		svg = bytes.ReplaceAll(svg, []byte("font-family:"+f[0]+";"), []byte("font-family:"+f[1]+";"))
	}
	return svg
}

// errPoints are the means of a series with their standard deviations.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// barErrors draws error bars on the bars of one series of a bar chart,
// which sit offset from their category.
type barErrors struct {
	pts    []Point
	offset vg.Length
}

// DataRange makes room for the error bars.
func (b *barErrors) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, pt := range b.pts {
		xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
		ymin, ymax = math.Min(ymin, math.Min(0, pt.Mean-pt.Std)), math.Max(ymax, pt.Mean+pt.Std)
	}
	return
}

func (b *barErrors) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	sty := plotter.DefaultLineStyle
	cap := vg.Points(3)
	for _, pt := range b.pts {
		if pt.Std == 0 || math.IsNaN(pt.Std) {
			continue
		}
		x := trX(pt.X) + b.offset
		lo, hi := trY(pt.Mean-pt.Std), trY(pt.Mean+pt.Std)
		c.StrokeLine2(sty, x, lo, x, hi)
		c.StrokeLine2(sty, x-cap, lo, x+cap, lo)
		c.StrokeLine2(sty, x-cap, hi, x+cap, hi)
	}
}

// logTicks label 1, 2 and 5 times the powers of ten in range (gonum's
// LogTicks label the powers only, often a single tick), with unlabelled
// minor ticks at the other multiples.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			out = append(out, t)
		}
	}
	return out
}

// tickDecimals is the fewest decimals, no fewer than the step's leading
// digit needs, that print every major tick exactly (0.025 apart: 0.750,
// 0.775, not 0.75, 0.78). A tick counts as exact when scaling it leaves an
// integer up to a relative 1e-9: the ticks are multiples of the step
// computed in float64, off by a few ulps (~1e-16), far below that.
func tickDecimals(major []float64, step float64) int {
	d := max(0, -int(math.Floor(math.Log10(step))))
	for ; d < 15; d++ {
		p := math.Pow(10, float64(d))
		if !slices.ContainsFunc(major, func(v float64) bool {
			s := v * p
			return math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, math.Abs(s))
		}) {
			break
		}
	}
	return d
}

// ticks are gonum's default ticks with labels precise enough to tell
// neighbouring ticks apart (the default prints 2e+08 for 2.1e8 and 2.2e8).
type ticks struct{}

func (ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	var major []float64
	for _, t := range ts {
		if t.Label != "" {
			major = append(major, t.Value)
		}
	}
	step := math.Abs(hi - lo)
	if len(major) > 1 {
		step = major[1] - major[0]
	}
	big := math.Max(math.Abs(lo), math.Abs(hi))
	for i, t := range ts {
		if t.Label == "" {
			continue
		}
		switch {
		case t.Value == 0:
			ts[i].Label = "0"
		case big >= 1e7 || big < 1e-4:
			ts[i].Label = strconv.FormatFloat(t.Value, 'g', max(1, int(math.Ceil(math.Log10(big/step)))+1), 64)
		default:
			ts[i].Label = strconv.FormatFloat(t.Value, 'f', tickDecimals(major, step), 64)
		}
	}
	return ts
}
