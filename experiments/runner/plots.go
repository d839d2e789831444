package runner

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"

	"strata/experiments/runner/chart"
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
func (rp *renderedPlot) render(c *chart.Chart) (bool, error) {
	var err error
	if rp.svg, err = c.Draw("svg"); err != nil || rp.svg == nil {
		return false, err
	}
	if rp.png, err = c.Draw("png"); err != nil {
		return false, err
	}
	if rp.pdf, err = c.Draw("pdf"); err != nil {
		return false, err
	}
	return true, nil
}

// siblingFile is the file of a plot in another format: "x.svg" -> "x.png".
func siblingFile(svgFile, ext string) string {
	return strings.TrimSuffix(svgFile, ".svg") + ext
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
			if c.Aggregated() {
				_, caption = chart.Spread("std")
			}
			rp := &renderedPlot{name: name, file: PlotFile(name), title: c.Title,
				caption: caption + "; one line per combination of the other axes." + c.Note()}
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
		rp := &renderedPlot{name: spec.Y + " by " + spec.X, file: spec.File, title: c.Title, caption: caption + c.Note()}
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
func (p *Plan) defaultChart(rows []*Row, m int) *chart.Chart {
	e := p.Exp
	xdim, xs, numeric, list := p.plotLayout()
	label, scale := e.yLabel(e.Metrics[m])
	c := &chart.Chart{YLabel: label}
	if xdim >= 0 {
		var keys []string
		for _, a := range p.dims[xdim].axes {
			keys = append(keys, e.Axes[a].Key)
		}
		c.XLabel = strings.Join(keys, " / ")
	}
	if numeric == nil {
		c.Cats = xs
	} else {
		for i, x := range numeric {
			c.XTicks = append(c.XTicks, plot.Tick{Value: x, Label: xs[i]})
		}
	}
	if len(list) > 1 && !strings.Contains(list[0].label, " ") {
		// One other axis: the legend is titled with its key and its
		// entries are the values.
		key, _, _ := strings.Cut(list[0].label, "=")
		c.LegendTitle = key
		for i := range list {
			list[i].label = strings.TrimPrefix(list[i].label, key+"=")
		}
	}
	for _, s := range list {
		cs := chart.Series{Label: s.label}
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
			cs.Points = append(cs.Points, chart.Point{X: x, Mean: st.Mean / scale, Std: chart.ErrorBar("std", st.Std, st.N) / scale, N: st.N})
		}
		c.Series = append(c.Series, cs)
	}
	c.Title = e.Name + ": " + e.Metrics[m]
	if c.Aggregated() {
		t, _ := chart.Spread("std")
		c.Title += " (" + t + ")"
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
func (p *Plan) specChart(spec Plot, rows []*Row, records []*Record) (*chart.Chart, string) {
	e := p.Exp
	c := &chart.Chart{Bar: spec.Kind == "bar", XLog: spec.XLog, YLog: spec.YLog, Paper: spec.Paper}
	scale, xNum := p.specAxes(c, spec)
	xPos := func(i int) float64 {
		if c.Cats != nil {
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
		cs := chart.Series{Label: g.label}
		idx := make([]int, 0, len(g.vals))
		for xi := range g.vals {
			idx = append(idx, xi)
		}
		slices.Sort(idx)
		for _, xi := range idx {
			st := NewStat(g.vals[xi])
			cs.Points = append(cs.Points, chart.Point{X: xPos(xi), Mean: st.Mean / scale, Std: chart.ErrorBar(spec.Interval, st.Std, st.N) / scale, N: st.N})
		}
		c.Series = append(c.Series, cs)
	}

	return c, p.labelSpec(c, spec, di, splitKeys)
}

// specAxes sets the axis labels and the x categories or ticks of the
// chart of a [[plot]]; it returns the scale of the y values (MiB) and the
// numeric x values (nil for categories).
func (p *Plan) specAxes(c *chart.Chart, spec Plot) (float64, []float64) {
	e := p.Exp
	label, scale := e.yLabel(spec.Y)
	c.YLabel = label
	if e.isDerived(spec.Y) {
		c.YLabel, scale = spec.Y, 1
	}
	if spec.YLabel != "" {
		c.YLabel = spec.YLabel
		if scale != 1 && !strings.Contains(spec.YLabel, "MiB") {
			c.YLabel += " (MiB)"
		}
	}
	c.XLabel = spec.X
	if spec.XLabel != "" {
		c.XLabel = spec.XLabel
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
	if xNum == nil || c.Bar {
		c.Cats = xLabels
	} else {
		for i, x := range xNum {
			c.XTicks = append(c.XTicks, plot.Tick{Value: x, Label: xLabels[i]})
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
func (p *Plan) labelSpec(c *chart.Chart, spec Plot, di int, splitKeys []string) string {
	e := p.Exp
	c.Title = spec.Title
	if c.Title == "" {
		c.Title = e.Name + ": " + spec.Y + " by " + spec.X
		if len(spec.Series) > 0 {
			c.Title += " and " + strings.Join(spec.Series, ", ")
		}
	}
	var where []string
	for _, k := range sortedKeys(spec.Where, nil, "") {
		ai := e.axisIndex(k)
		where = append(where, k+" = "+e.Axes[ai].Label(e.Axes[ai].index(spec.Where[k])))
	}
	if spec.Title == "" && len(where) > 0 {
		c.Title += " (" + strings.Join(where, ", ") + ")"
	}
	_, caption := chart.Spread(spec.Interval)
	switch {
	case di >= 0:
		d := e.Derived[di]
		caption = fmt.Sprintf("%s: %s of the mean %s against %s (%s)", d.Name, d.Kind, d.Metric, baselineText(e, d), derivedFormula[d.Kind])
	case spec.X == "seed" || slices.Contains(spec.Series, "seed"):
		caption = "One point per run"
	case !c.Aggregated():
		caption = "One run per point"
	}
	if len(splitKeys) > 0 {
		caption += "; one " + map[bool]string{true: "bar", false: "line"}[c.Bar] + " per " + strings.Join(splitKeys, " × ")
		if len(splitKeys) == 1 {
			c.LegendTitle = splitKeys[0] // the labels are its values
		}
	}
	if len(where) > 0 {
		caption += "; only the runs with " + strings.Join(where, ", ")
	}
	return caption + "."
}
