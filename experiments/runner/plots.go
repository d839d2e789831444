package runner

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotFile is the name of the default SVG plot of a metric in the results
// directory (experiments without [[plot]]).
func PlotFile(metric string) string { return safeFileName(metric) + ".svg" }

// renderedPlot is one SVG plot of the results.
type renderedPlot struct {
	name    string // what it shows, for links ("test_acc", "hit_ratio by cache.capacity")
	file    string
	title   string
	caption string // how to read it: what the points and bars are
	svg     []byte
	png     []byte // the same plot as PNG and PDF, written next to the SVG
	pdf     []byte
}

// render draws c as SVG, PNG and PDF into rp; false when c has no value.
func (rp *renderedPlot) render(c *chart) (bool, error) {
	var err error
	if rp.svg, err = c.draw("svg"); err != nil || rp.svg == nil {
		return false, err
	}
	if rp.png, err = c.draw("png"); err != nil {
		return false, err
	}
	if rp.pdf, err = c.draw("pdf"); err != nil {
		return false, err
	}
	return true, nil
}

// siblingFile is the file of a plot in another format: "x.svg" -> "x.png".
func siblingFile(svgFile, ext string) string {
	return strings.TrimSuffix(svgFile, ".svg") + ext
}

// chart is a plot to draw: series of points (mean ± std) over a numeric
// or categorical x.
type chart struct {
	title, xLabel, yLabel string
	cats                  []string    // categorical x labels; nil for a numeric x
	xTicks                []plot.Tick // numeric x: a tick at every value
	xLog, yLog, bar       bool
	series                []chartSeries
	legendTitle           string // what the series labels are values of
	paper                 bool   // paper style: no title, paperWidth wide, small fonts
}

// note is a sentence for the caption about how the chart is drawn: a bar
// chart whose axis does not start at 0, series drawn side by side.
func (c *chart) note() string {
	var s string
	if base, ok := c.barBase(); ok {
		s += fmt.Sprintf(" The bars start at %s, not 0, as the values lie close together.", strconv.FormatFloat(base, 'g', -1, 64))
	}
	if !c.bar && c.drawnSeries() > 1 {
		s += " Series that share an x value are drawn slightly apart so that their error bars do not hide each other."
	}
	return s
}

// drawnSeries counts the series with points.
func (c *chart) drawnSeries() int {
	n := 0
	for _, s := range c.series {
		if len(s.pts) > 0 {
			n++
		}
	}
	return n
}

// barBase is the baseline of a bar chart whose values are all positive and
// close together (the spread of mean ± std under a quarter of the largest
// value): a round number below the smallest, so that the differences are
// visible. ok is false when the bars start at 0.
func (c *chart) barBase() (base float64, ok bool) {
	if !c.bar || c.yLog {
		return 0, false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		for _, pt := range s.pts {
			std := pt.std
			if math.IsNaN(std) {
				std = 0
			}
			lo, hi = math.Min(lo, pt.mean-std), math.Max(hi, pt.mean+std)
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

type chartSeries struct {
	label string
	pts   []chartPoint
}

// chartPoint is a point of a series: std is the half-width of its error
// bar (errorBar), n the runs it aggregates.
type chartPoint struct {
	x, mean, std float64
	n            int
}

// errorBar is the half-width of the error bar of a mean over n values of
// sample standard deviation sd: sd itself, or for interval "ci95" the 95%
// Student-t interval of the mean (n−1 degrees of freedom); 0 below two
// values, which have no spread.
func errorBar(interval string, sd float64, n int) float64 {
	if n < 2 || math.IsNaN(sd) {
		return 0
	}
	if interval == "ci95" {
		return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975) * sd / math.Sqrt(float64(n))
	}
	return sd
}

// spread names what the error bars of interval span, for titles and
// captions.
func spread(interval string) (title, caption string) {
	if interval == "ci95" {
		return "mean ± 95% CI over seeds", "Mean over the seeds, error bars of the 95% Student-t interval of the mean (n−1 degrees of freedom)"
	}
	return "mean ± std over seeds", "Mean over the seeds, error bars of one standard deviation"
}

// aggregated reports whether some point of the chart is a mean over two
// runs or more: only then do ± wording and error bars belong on it.
func (c *chart) aggregated() bool {
	for _, s := range c.series {
		for _, pt := range s.pts {
			if pt.n >= 2 {
				return true
			}
		}
	}
	return false
}

// renderPlots draws the experiment's [[plot]]s, or without any, one plot
// per metric against the first axis. A plot without any value is left
// out.
func renderPlots(p *Plan, rows []*Row, records []*Record) ([]*renderedPlot, error) {
	var out []*renderedPlot
	if len(p.Exp.Plots) == 0 {
		for m, name := range p.Exp.Metrics {
			c := p.defaultChart(rows, m)
			caption := "One run per point"
			if c.aggregated() {
				_, caption = spread("std")
			}
			rp := &renderedPlot{name: name, file: PlotFile(name), title: c.title,
				caption: caption + "; one line per combination of the other axes." + c.note()}
			ok, err := rp.render(c)
			if err != nil {
				return nil, fmt.Errorf("plot of %s: %w", name, err)
			}
			if ok {
				out = append(out, rp)
			}
		}
		return out, nil
	}
	for _, spec := range p.Exp.Plots {
		c, caption := p.specChart(spec, rows, records)
		rp := &renderedPlot{name: spec.Y + " by " + spec.X, file: spec.File, title: c.title, caption: caption + c.note()}
		ok, err := rp.render(c)
		if err != nil {
			return nil, fmt.Errorf("[[plot]] on line %d: %w", spec.Line, err)
		}
		if ok {
			out = append(out, rp)
		}
	}
	return out, nil
}

// yLabel is a metric's axis label (metricLabel), in MiB for _bytes
// metrics, and the scale that converts the values to it.
func (e *Experiment) yLabel(metric string) (string, float64) {
	label := e.metricLabel(metric)
	if s := mibScale(metric); s != 1 {
		return label + " (MiB)", s
	}
	return label, 1
}

// mibScale is 1 MiB for a _bytes metric (shown in MiB), else 1.
func mibScale(metric string) float64 {
	if strings.HasSuffix(metric, "_bytes") || strings.Contains(metric, "_bytes.") || strings.HasSuffix(metric, ".bytes") {
		return 1 << 20
	}
	return 1
}

// metricLabel is a metric's human label, from its doc up to the first
// qualifying clause ("test accuracy at the epoch of ..." gives "test
// accuracy"), with " (s)" for a doc ending in ", seconds" and the member
// of a family ("...: device0"); the key itself when the kind documents
// nothing.
func (e *Experiment) metricLabel(metric string) string {
	if e.Kind == nil {
		return metric
	}
	doc := e.Kind.metricDoc(metric)
	if doc == "" {
		return metric
	}
	unit := ""
	if strings.HasSuffix(doc, ", seconds") {
		unit = " (s)"
	}
	for _, sep := range []string{",", ";", " (", " at the epoch", " over the ", " by its own", " during the"} {
		if i := strings.Index(doc, sep); i > 0 {
			doc = doc[:i]
		}
	}
	if _, own := e.Kind.docs[metric]; !own {
		if _, member, ok := strings.Cut(metric, "."); ok {
			doc += ": " + member
		}
	}
	return doc + unit
}

// defaultChart is metric m against the first axis (and the axes zipped
// with it), one series per combination of the other axes.
func (p *Plan) defaultChart(rows []*Row, m int) *chart {
	e := p.Exp
	xdim, xs, numeric, list := p.plotLayout()
	label, scale := e.yLabel(e.Metrics[m])
	c := &chart{yLabel: label}
	if xdim >= 0 {
		var keys []string
		for _, a := range p.dims[xdim].axes {
			keys = append(keys, e.Axes[a].Key)
		}
		c.xLabel = strings.Join(keys, " / ")
	}
	if numeric == nil {
		c.cats = xs
	} else {
		for i, x := range numeric {
			c.xTicks = append(c.xTicks, plot.Tick{Value: x, Label: xs[i]})
		}
	}
	if len(list) > 1 && !strings.Contains(list[0].label, " ") {
		// One other axis: the legend is titled with its key and its
		// entries are the values.
		key, _, _ := strings.Cut(list[0].label, "=")
		c.legendTitle = key
		for i := range list {
			list[i].label = strings.TrimPrefix(list[i].label, key+"=")
		}
	}
	for _, s := range list {
		cs := chartSeries{label: s.label}
		for _, cell := range s.cells {
			st := rows[cell.Index].Stats[m]
			if st.N == 0 || math.IsNaN(st.Mean) {
				continue
			}
			x := 0.0
			if xdim >= 0 {
				x = float64(cell.Coord[xdim])
				if numeric != nil {
					x = numeric[cell.Coord[xdim]]
				}
			}
			cs.pts = append(cs.pts, chartPoint{x: x, mean: st.Mean / scale, std: errorBar("std", st.Std, st.N) / scale, n: st.N})
		}
		c.series = append(c.series, cs)
	}
	c.title = e.Name + ": " + e.Metrics[m]
	if c.aggregated() {
		t, _ := spread("std")
		c.title += " (" + t + ")"
	}
	return c
}

// series is one line of a default plot: the cells that share the values
// of the dimensions other than the x dimension.
type series struct {
	label string
	cells []*Cell // in x order
}

// plotLayout splits the cells into the x dimension (the one holding the
// first axis) and series (one per combination of the other dimensions).
func (p *Plan) plotLayout() (xdim int, xs []string, numeric []float64, list []series) {
	e := p.Exp
	if len(e.Axes) == 0 || len(p.dims) == 0 {
		return -1, []string{"all"}, nil, []series{{label: "", cells: p.Cells}}
	}
	xdim = 0 // the first axis is in the first dimension
	d := p.dims[xdim]
	numeric = make([]float64, d.n)
	for i := range d.n {
		parts := make([]string, len(d.axes))
		for j, a := range d.axes {
			parts[j] = e.Axes[a].Label(i)
		}
		xs = append(xs, strings.Join(parts, " / "))
		if f, ok := number(e.Axes[d.axes[0]].Values[i]); ok && numeric != nil {
			numeric[i] = f
		} else {
			numeric = nil // categorical x
		}
	}
	byKey := map[string]int{}
	for _, c := range p.Cells {
		var parts []string
		for j, dd := range p.dims {
			if j == xdim {
				continue
			}
			for _, a := range dd.axes {
				parts = append(parts, e.Axes[a].Key+"="+c.Labels[a])
			}
		}
		key := strings.Join(parts, " ")
		i, ok := byKey[key]
		if !ok {
			i = len(list)
			byKey[key] = i
			list = append(list, series{label: key})
		}
		list[i].cells = append(list[i].cells, c)
	}
	for i := range list {
		slices.SortFunc(list[i].cells, func(a, b *Cell) int { return a.Coord[xdim] - b.Coord[xdim] })
	}
	return xdim, xs, numeric, list
}

// specChart builds the chart of a [[plot]]: the cells that the where
// table keeps, grouped by the series axes (and any axis the plot does
// not name, which then splits the series too), y over x.
func (p *Plan) specChart(spec Plot, rows []*Row, records []*Record) (*chart, string) {
	e := p.Exp
	c := &chart{bar: spec.Kind == "bar", xLog: spec.XLog, yLog: spec.YLog, paper: spec.Paper}
	scale, xNum := p.specAxes(c, spec)
	xPos := func(i int) float64 {
		if c.cats != nil {
			return float64(i)
		}
		return xNum[i]
	}

	splitKeys := p.splitKeys(spec)
	keep := func(cell *Cell) bool {
		for k, v := range spec.Where {
			ai := e.axisIndex(k)
			if vi := e.Axes[ai].index(v); vi < 0 || cell.Labels[ai] != e.Axes[ai].Label(vi) {
				return false
			}
		}
		return true
	}
	xIndex := func(cell *Cell, r *Run) int {
		if spec.X == "seed" {
			return slices.Index(e.Seeds, r.Seed)
		}
		ai := e.axisIndex(spec.X)
		for j, d := range p.dims {
			if slices.Contains(d.axes, ai) {
				return cell.Coord[j]
			}
		}
		return 0
	}
	seriesLabel := func(cell *Cell, r *Run) string {
		var parts []string
		for _, k := range splitKeys {
			v := ""
			if k == "seed" {
				v = strconv.FormatInt(r.Seed, 10)
			} else {
				v = cell.Labels[e.axisIndex(k)]
			}
			if len(splitKeys) == 1 {
				parts = append(parts, v)
			} else {
				parts = append(parts, k+"="+v)
			}
		}
		return strings.Join(parts, " ")
	}

	type group struct {
		label string
		vals  map[int][]float64 // x index -> values
	}
	var groups []*group
	byLabel := map[string]*group{}
	add := func(label string, xi int, v float64) {
		g, ok := byLabel[label]
		if !ok {
			g = &group{label: label, vals: map[int][]float64{}}
			byLabel[label] = g
			groups = append(groups, g)
		}
		g.vals[xi] = append(g.vals[xi], v)
	}
	di := slices.IndexFunc(e.Derived, func(d Derived) bool { return d.Name == spec.Y })
	for _, cell := range p.Cells {
		if !keep(cell) {
			continue
		}
		if di >= 0 {
			if len(cell.Runs) == 0 {
				continue
			}
			if v := rows[cell.Index].Derived[di]; !math.IsNaN(v) {
				add(seriesLabel(cell, cell.Runs[0]), xIndex(cell, cell.Runs[0]), v)
			}
			continue
		}
		for _, r := range cell.Runs {
			rec := records[r.Index]
			if rec == nil || rec.Status != "ok" {
				continue
			}
			if v, ok := rec.Metric(spec.Y); ok {
				add(seriesLabel(cell, r), xIndex(cell, r), v)
			}
		}
	}
	for _, g := range groups {
		cs := chartSeries{label: g.label}
		idx := make([]int, 0, len(g.vals))
		for xi := range g.vals {
			idx = append(idx, xi)
		}
		slices.Sort(idx)
		for _, xi := range idx {
			st := NewStat(g.vals[xi])
			cs.pts = append(cs.pts, chartPoint{x: xPos(xi), mean: st.Mean / scale, std: errorBar(spec.Interval, st.Std, st.N) / scale, n: st.N})
		}
		c.series = append(c.series, cs)
	}

	return c, p.labelSpec(c, spec, di, splitKeys)
}

// specAxes sets the axis labels and the x categories or ticks of the
// chart of a [[plot]]; it returns the scale of the y values (MiB) and the
// numeric x values (nil for categories).
func (p *Plan) specAxes(c *chart, spec Plot) (float64, []float64) {
	e := p.Exp
	label, scale := e.yLabel(spec.Y)
	c.yLabel = label
	if e.isDerived(spec.Y) {
		c.yLabel, scale = spec.Y, 1
	}
	if spec.YLabel != "" {
		c.yLabel = spec.YLabel
		if scale != 1 && !strings.Contains(spec.YLabel, "MiB") {
			c.yLabel += " (MiB)"
		}
	}
	c.xLabel = spec.X
	if spec.XLabel != "" {
		c.xLabel = spec.XLabel
	}

	// x values
	var xLabels []string
	var xNum []float64
	if spec.X == "seed" {
		for _, s := range e.Seeds {
			xLabels = append(xLabels, strconv.FormatInt(s, 10))
			xNum = append(xNum, float64(s))
		}
	} else {
		a := e.Axes[e.axisIndex(spec.X)]
		numeric := true
		for i, v := range a.Values {
			xLabels = append(xLabels, a.Label(i))
			f, ok := number(v)
			numeric = numeric && ok
			xNum = append(xNum, f)
		}
		if !numeric {
			xNum = nil
		}
	}
	if xNum == nil || c.bar {
		c.cats = xLabels
	} else {
		for i, x := range xNum {
			c.xTicks = append(c.xTicks, plot.Tick{Value: x, Label: xLabels[i]})
		}
	}
	return scale, xNum
}

// splitKeys are the axes that split the series of a [[plot]]: the named
// ones, then the dimensions that neither x, series nor where determine.
func (p *Plan) splitKeys(spec Plot) []string {
	e := p.Exp
	determined := map[int]bool{}
	mark := func(key string) {
		if ai := e.axisIndex(key); ai >= 0 {
			for j, d := range p.dims {
				if slices.Contains(d.axes, ai) {
					determined[j] = true
				}
			}
		}
	}
	mark(spec.X)
	for _, s := range spec.Series {
		mark(s)
	}
	for k := range spec.Where {
		mark(k)
	}
	splitKeys := slices.Clone(spec.Series)
	for j, d := range p.dims {
		if !determined[j] {
			splitKeys = append(splitKeys, e.Axes[d.axes[0]].Key)
		}
	}
	return splitKeys
}

// labelSpec sets the title (and legend title) of the chart of a [[plot]]
// and returns its caption: what a point is (a mean with its error bars,
// one run, a derived column di), what splits the series (splitKeys), what
// the where table keeps.
func (p *Plan) labelSpec(c *chart, spec Plot, di int, splitKeys []string) string {
	e := p.Exp
	c.title = spec.Title
	if c.title == "" {
		c.title = e.Name + ": " + spec.Y + " by " + spec.X
		if len(spec.Series) > 0 {
			c.title += " and " + strings.Join(spec.Series, ", ")
		}
	}
	var where []string
	for _, k := range sortedKeys(spec.Where, nil, "") {
		ai := e.axisIndex(k)
		where = append(where, k+" = "+e.Axes[ai].Label(e.Axes[ai].index(spec.Where[k])))
	}
	if spec.Title == "" && len(where) > 0 {
		c.title += " (" + strings.Join(where, ", ") + ")"
	}
	_, caption := spread(spec.Interval)
	switch {
	case di >= 0:
		d := e.Derived[di]
		caption = fmt.Sprintf("%s: %s of the mean %s against %s (%s)", d.Name, d.Kind, d.Metric, baselineText(e, d), derivedFormula[d.Kind])
	case spec.X == "seed" || slices.Contains(spec.Series, "seed"):
		caption = "One point per run"
	case !c.aggregated():
		caption = "One run per point"
	}
	if len(splitKeys) > 0 {
		caption += "; one " + map[bool]string{true: "bar", false: "line"}[c.bar] + " per " + strings.Join(splitKeys, " × ")
		if len(splitKeys) == 1 {
			c.legendTitle = splitKeys[0] // the labels are its values
		}
	}
	if len(where) > 0 {
		caption += "; only the runs with " + strings.Join(where, ", ")
	}
	return caption + "."
}

// draw renders the chart in format ("svg", "png"); nil when it has no
// point.
// assemble builds the plot and its legend, and the canvas size without
// the legend.
func (c *chart) assemble() (pl *plot.Plot, leg plot.Legend, entries int, w, h vg.Length, err error) {
	pl = plot.New()
	pl.Title.Text = c.title
	pl.X.Label.Text = c.xLabel
	pl.Y.Label.Text = c.yLabel
	pl.Y.Tick.Marker = ticks{}
	if c.yLog {
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
	if c.legendTitle != "" && c.drawnSeries() > 0 {
		leg.Add(c.legendTitle + ":") // the title: an entry without a thumbnail
	}
	pl.Add(plotter.NewGrid())
	if c.cats != nil {
		pl.NominalX(c.cats...)
	} else {
		pl.X.Tick.Marker = plot.ConstantTicks(c.xTicks)
		if c.xLog {
			pl.X.Scale = plot.LogScale{}
		}
	}
	if c.paper {
		c.paperStyle(pl, &leg)
	}
	n := len(c.series)
	// Bar width: the categories share about 5.2 inches of plot width.
	// Width: 6 inches, more when the categories need room for their
	// labels (about 6 points a character at 10 points) or their bars.
	w, h = 6*vg.Inch, 4*vg.Inch
	var per vg.Length // room of one category
	if c.paper {
		w, h = paperWidth, paperHeight
	}
	if c.cats != nil {
		per = c.catRoom()
		if !c.paper {
			w = max(w, per*vg.Length(len(c.cats))+0.8*vg.Inch)
		}
		per = (w - 0.8*vg.Inch) / vg.Length(max(len(c.cats), 1))
	}
	var barW vg.Length
	if c.bar {
		barW = min(per*0.8/vg.Length(max(n, 1)), vg.Points(36))
	}
	drawnIdx := 0 // index among the series with points, for the dodge
	for si, s := range c.series {
		if len(s.pts) == 0 {
			continue
		}
		dx := dodge(drawnIdx, c.drawnSeries())
		drawnIdx++
		col := plotutil.Color(si)
		if c.bar {
			vals := make(plotter.Values, len(c.cats))
			errs := make([]chartPoint, 0, len(s.pts))
			for _, pt := range s.pts {
				vals[int(pt.x)] = pt.mean
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
			if s.label != "" {
				leg.Add(s.label, bars)
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
		if s.label != "" {
			leg.Add(s.label, line, points)
			entries++
		}
	}
	c.margins(pl)
	return pl, leg, entries, w, h, nil
}

// catRoom is the room one category of a categorical x needs: its longest
// label (about 6 points a character at 10 points) or its bars.
func (c *chart) catRoom() vg.Length {
	longest := 0
	for _, l := range c.cats {
		longest = max(longest, len([]rune(l)))
	}
	per := vg.Points(6*float64(longest) + 12)
	if c.bar {
		per = max(per, vg.Length(max(len(c.series), 1))*vg.Points(14)+vg.Points(12))
	}
	return per
}

// maxRowWidth bounds the plot width of one row of a bar chart: more
// categories wrap into rows (facets) of one y range, so that a chart of
// many categories keeps a sane aspect ratio (a row is 4 in high).
const maxRowWidth = 10 * vg.Inch

// rowCats is the most categories one row of the bar chart holds.
func (c *chart) rowCats() int {
	if c.paper {
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
func (c *chart) paperStyle(pl *plot.Plot, leg *plot.Legend) {
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
func (c *chart) facets() []*chart {
	maxCats := c.rowCats()
	if !c.bar || len(c.cats) <= maxCats {
		return []*chart{c}
	}
	rows := (len(c.cats) + maxCats - 1) / maxCats
	per := (len(c.cats) + rows - 1) / rows
	var out []*chart
	for lo := 0; lo < len(c.cats); lo += per {
		hi := min(lo+per, len(c.cats))
		f := *c
		f.cats, f.series = c.cats[lo:hi], nil
		if lo > 0 {
			f.title = ""
		}
		if hi < len(c.cats) {
			f.xLabel = ""
		}
		for _, s := range c.series {
			fs := chartSeries{label: s.label}
			for _, pt := range s.pts {
				if i := int(pt.x); i >= lo && i < hi {
					pt.x -= float64(lo)
					fs.pts = append(fs.pts, pt)
				}
			}
			f.series = append(f.series, fs)
		}
		out = append(out, &f)
	}
	return out
}

// facetPlots assembles the chart's facets with one y range, and the size
// of one row: the widest facet's width.
func (c *chart) facetPlots() (pls []*plot.Plot, w, h vg.Length, err error) {
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
func (c *chart) margins(pl *plot.Plot) {
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
	if c.cats == nil {
		pad(&pl.X, 0.06, c.xLog)
	}
	if c.bar {
		pl.Y.Min = math.Min(pl.Y.Min, 0)
		if base, ok := c.barBase(); ok {
			pl.Y.Min = base
		}
		pl.Y.Max += 0.08 * (pl.Y.Max - pl.Y.Min)
		if pl.Y.Max == pl.Y.Min {
			pl.Y.Max = pl.Y.Min + 1
		}
	} else {
		pad(&pl.Y, 0.08, c.yLog)
	}
}

// lineSeries adds series s (the si-th, dodged by dx) to the plot as a
// line with points and error bars; ok is false when it has no point to
// draw (on a log scale, none above 0).
func (c *chart) lineSeries(pl *plot.Plot, s chartSeries, si int, dx vg.Length) (line *plotter.Line, points *plotter.Scatter, ok bool, err error) {
	col := plotutil.Color(si)
	var xy plotter.XYs
	var ye plotter.YErrors
	for _, pt := range s.pts {
		if c.yLog && pt.mean <= 0 {
			continue // not on a log scale
		}
		lo := pt.std
		if c.yLog && pt.mean-lo <= 0 {
			lo = pt.mean / 2
		}
		xy = append(xy, plotter.XY{X: pt.x, Y: pt.mean})
		ye = append(ye, struct{ Low, High float64 }{lo, pt.std})
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
func (c *chart) plotOnly() (*plot.Plot, error) {
	pl, _, _, _, _, err := c.assemble()
	return pl, err
}

func (c *chart) draw(format string) ([]byte, error) {
	drawn := false
	for _, s := range c.series {
		if len(s.pts) > 0 {
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
		if !c.paper { // a paper figure keeps its width: the plot narrows
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
	pts    []chartPoint
	offset vg.Length
}

// DataRange makes room for the error bars.
func (b *barErrors) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, pt := range b.pts {
		xmin, xmax = math.Min(xmin, pt.x), math.Max(xmax, pt.x)
		ymin, ymax = math.Min(ymin, math.Min(0, pt.mean-pt.std)), math.Max(ymax, pt.mean+pt.std)
	}
	return
}

func (b *barErrors) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	sty := plotter.DefaultLineStyle
	cap := vg.Points(3)
	for _, pt := range b.pts {
		if pt.std == 0 || math.IsNaN(pt.std) {
			continue
		}
		x := trX(pt.x) + b.offset
		lo, hi := trY(pt.mean-pt.std), trY(pt.mean+pt.std)
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
