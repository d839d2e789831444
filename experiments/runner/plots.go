package runner

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotFile is the name of the SVG plot of a metric in the results
// directory.
func PlotFile(metric string) string { return metric + ".svg" }

// errPoints are the means of a series with their standard deviations.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// series is one line of a plot: the cells that share the values of the
// dimensions other than the x dimension.
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
			parts[j] = display(e.Axes[a].Values[i])
		}
		xs = append(xs, strings.Join(parts, " / "))
		switch v := e.Axes[d.axes[0]].Values[i].(type) {
		case int64:
			if numeric != nil {
				numeric[i] = float64(v)
			}
		case float64:
			if numeric != nil {
				numeric[i] = v
			}
		default:
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
				parts = append(parts, e.Axes[a].Key+"="+display(c.Values[a]))
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

// writePlots writes one SVG per metric: the metric's mean against the
// first axis, one series per combination of the other axes, error bars of
// one standard deviation.
func writePlots(p *Plan, rows []*Row, out string) error {
	for m, name := range p.Exp.Metrics {
		b, err := plotImage(p, rows, m, "svg")
		if err != nil {
			return fmt.Errorf("plot of %s: %w", name, err)
		}
		if b == nil {
			continue
		}
		if err := writeFile(filepath.Join(out, PlotFile(name)), b); err != nil {
			return err
		}
	}
	return nil
}

// plotImage renders the plot of metric m in format ("svg", "png"); nil
// when no cell has a value.
func plotImage(p *Plan, rows []*Row, m int, format string) ([]byte, error) {
	e := p.Exp
	xdim, xs, numeric, list := p.plotLayout()
	pl := plot.New()
	pl.Title.Text = e.Name + ": " + e.Metrics[m] + " (mean ± std over seeds)"
	pl.Y.Label.Text = e.Metrics[m]
	pl.Y.Tick.Marker = ticks{}
	scale := 1.0
	if strings.HasSuffix(e.Metrics[m], "_bytes") {
		scale = 1 << 20
		pl.Y.Label.Text += " (MiB)"
	}
	if xdim >= 0 {
		var keys []string
		for _, a := range p.dims[xdim].axes {
			keys = append(keys, e.Axes[a].Key)
		}
		pl.X.Label.Text = strings.Join(keys, " / ")
	}
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	entries := 0
	pl.Add(plotter.NewGrid())
	if numeric == nil {
		pl.NominalX(xs...)
	} else {
		ticks := make([]plot.Tick, len(numeric))
		for i, x := range numeric {
			ticks[i] = plot.Tick{Value: x, Label: xs[i]}
		}
		pl.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	drawn := false
	for si, s := range list {
		var pts errPoints
		for _, c := range s.cells {
			st := rows[c.Index].Stats[m]
			if st.N == 0 || math.IsNaN(st.Mean) {
				continue
			}
			x := 0.0
			if xdim >= 0 {
				x = float64(c.Coord[xdim])
				if numeric != nil {
					x = numeric[c.Coord[xdim]]
				}
			}
			sd := st.Std
			if math.IsNaN(sd) {
				sd = 0
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: st.Mean / scale})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{sd / scale, sd / scale})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		drawn = true
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(si)
		line.Dashes = plotutil.Dashes(si)
		points.Color = plotutil.Color(si)
		points.Shape = plotutil.Shape(si)
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(si)
		pl.Add(line, points, bars)
		if s.label != "" {
			leg.Add(s.label, line, points)
			entries++
		}
	}
	if !drawn {
		return nil, nil
	}
	// Margins, so that no point sits on the frame.
	pad := func(a *plot.Axis, f float64) {
		d := a.Max - a.Min
		if d == 0 {
			d = math.Max(math.Abs(a.Max), 1)
		}
		a.Min -= f * d
		a.Max += f * d
	}
	pad(&pl.X, 0.06)
	pad(&pl.Y, 0.08)
	// The legend goes to the right of the plot, where it hides no data.
	w, h := 6*vg.Inch, 4*vg.Inch
	var legW vg.Length
	if entries > 0 {
		probe, err := draw.NewFormattedCanvas(w, h, format)
		if err != nil {
			return nil, err
		}
		legW = leg.Rectangle(draw.New(probe)).Size().X + vg.Points(12)
		w += legW
	}
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(c)
	pl.Draw(draw.Crop(dc, 0, -legW, 0, 0))
	if legW > 0 {
		leg.YOffs = -vg.Points(24)
		leg.Draw(draw.Crop(dc, w-legW, 0, 0, 0))
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
			ts[i].Label = strconv.FormatFloat(t.Value, 'f', max(0, -int(math.Floor(math.Log10(step)))), 64)
		}
	}
	return ts
}
