package runner

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"strata/core/config"
)

// Plot is one [[plot]] of an experiment file: y (a metric or derived
// column) against x (an axis, or the seed), one line (or bar) per value of
// the series axes.
type Plot struct {
	X      string         // an axis key, or "seed"
	Y      string         // a collected metric or a derived column
	Series []string       // axis keys (or "seed"): one line per combination
	Where  map[string]any // axis key -> the value the plot keeps
	Kind   string         // "line" (default) or "bar"
	Title  string
	XLabel string
	YLabel string
	XLog   bool
	YLog   bool
	File   string // SVG file name in the results directory
	// Interval is "std" (default) or "ci95": what the error bars span.
	Interval string
	Paper    bool // style = "paper": column width, no title
	Line     int  // line of the [[plot]] header
}

var plotFileRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.svg$`)

// isDerived reports whether name is a derived column of the experiment.
func (e *Experiment) isDerived(name string) bool {
	return slices.ContainsFunc(e.Derived, func(d Derived) bool { return d.Name == name })
}

func (e *Experiment) axisIndex(key string) int {
	return slices.IndexFunc(e.Axes, func(a Axis) bool { return a.Key == key })
}

// plotAxis checks a plot's x or series entry: an axis key or "seed".
func (e *Experiment) plotAxis(el *errorList, ln int, what, key string) bool {
	if key == "seed" {
		if e.Seeds == nil {
			el.add(ln, "plot."+what, "plot %s = \"seed\": the experiment has no seeds list, so every point has one run with the base config's seed", what)
			return false
		}
		return true
	}
	if e.axisIndex(key) < 0 {
		msg := fmt.Sprintf("plot %s = %q is not an axis; the axes are %s", what, key, quoteList(append(axisNames(e.Axes), "seed")))
		if len(e.Axes) == 0 {
			msg = fmt.Sprintf("plot %s = %q is not an axis: the experiment has none (only \"seed\" can be plotted against)", what, key)
		}
		el.add(ln, "plot."+what, "%s", msg)
		return false
	}
	return true
}

// parsePlot checks the i-th [[plot]] against the experiment's axes,
// metrics and derived columns.
func (e *Experiment) parsePlot(el *errorList, t *plotTable, i int) Plot {
	p := Plot{X: t.X, Y: t.Y, Series: t.Series, Where: t.Where, Kind: t.Kind, Title: t.Title, XLabel: t.XLabel, YLabel: t.YLabel,
		XLog: t.XLog, YLog: t.YLog, Line: t.Line, Interval: t.Interval, Paper: t.Style == "paper"}
	if p.Kind == "" {
		p.Kind = "line"
	}
	if p.Interval == "" {
		p.Interval = "std"
	}
	if p.Where == nil && t.Has("where") && !el.bad(t.Pos, "where") {
		p.Where = map[string]any{}
	}

	// x
	xOK := false
	if !t.Has("x") {
		el.at(t.Pos, "", "[[plot]] #%d: x is required: the axis to plot against, one of %s", i+1, quoteList(append(axisNames(e.Axes), "seed")))
	} else if p.X != "" {
		xOK = e.plotAxis(el, t.KeyLine("x"), "x", p.X)
	}
	// y
	yDerived := false
	if !t.Has("y") {
		el.at(t.Pos, "", "[[plot]] #%d: y is required: a collected metric (%s) or a derived column", i+1, quoteList(e.Metrics))
	} else if p.Y != "" {
		switch {
		case slices.Contains(e.Metrics, p.Y):
		case e.isDerived(p.Y):
			yDerived = true
		case e.Kind.validMetric(p.Y):
			el.at(t.Pos, "y", "plot y = %q: the metric is not collected; add it to metrics", p.Y)
		default:
			msg := e.unknownMetric(p.Y)
			if len(e.Derived) > 0 {
				var names []string
				for _, d := range e.Derived {
					names = append(names, d.Name)
				}
				msg += "; derived columns: " + quoteList(names)
			}
			el.at(t.Pos, "y", "plot y: %s", msg)
		}
	}
	// series
	for j, s := range p.Series {
		if !e.plotAxis(el, t.KeyLine("series"), "series", s) {
			continue
		}
		if s == p.X {
			el.at(t.Pos, "series", "plot series %q is also x", s)
		} else if slices.Contains(p.Series[:j], s) {
			el.at(t.Pos, "series", "plot series %q is listed twice", s)
		}
	}
	if yDerived && (p.X == "seed" || slices.Contains(p.Series, "seed")) {
		el.at(t.Pos, "y", "plot y = %q is a derived column, computed from the means over the seeds: it cannot be plotted per seed", p.Y)
	}
	// where
	for _, k := range sortedKeys(p.Where, nil, "") {
		ai := e.axisIndex(k)
		switch {
		case ai < 0:
			el.at(t.Pos, "where", "plot where: %q is not an axis; the axes are %s", k, quoteList(axisNames(e.Axes)))
		case k == p.X || slices.Contains(p.Series, k):
			el.at(t.Pos, "where", "plot where: %q is plotted (x or series); it cannot also be fixed", k)
		case e.Axes[ai].index(p.Where[k]) < 0:
			el.at(t.Pos, "where", "plot where: %s = %s is not one of the axis values %s%s", k, config.TOMLValue(p.Where[k]), config.TOMLValue(e.Axes[ai].Values), labelsNote(e.Axes[ai]))
		}
	}
	// scales
	if p.XLog && xOK {
		if p.X == "seed" {
			for _, s := range e.Seeds {
				if s <= 0 {
					el.at(t.Pos, "x_log", "plot x_log: seed %d is not positive", s)
					break
				}
			}
		} else if ai := e.axisIndex(p.X); ai >= 0 {
			for _, v := range e.Axes[ai].Values {
				if f, ok := number(v); !ok || f <= 0 {
					el.at(t.Pos, "x_log", "plot x_log: axis %q has the value %s; a log scale needs positive numbers", p.X, config.TOMLValue(v))
					break
				}
			}
		}
	}
	if p.YLog && p.Kind == "bar" {
		el.at(t.Pos, "y_log", "plot y_log: bars start at 0, which a log scale cannot show; use kind = \"line\"")
	}
	// file
	if f := t.File; f != "" {
		if !plotFileRE.MatchString(f) {
			el.at(t.Pos, "file", "plot file = %q: a file name of letters, digits, '-', '_' and '.' ending in .svg", f)
		}
		p.File = f
	} else if p.X != "" && p.Y != "" {
		name := p.Y + "-by-" + p.X
		for _, k := range sortedKeys(p.Where, nil, "") {
			name += "-" + k + "=" + display(p.Where[k])
		}
		p.File = safeFileName(name) + ".svg"
	}
	return p
}

// checkPlotFiles reports plots that would write the same file.
func (e *Experiment) checkPlotFiles(el *errorList) {
	seen := map[string]Plot{}
	for _, p := range e.Plots {
		if p.File == "" {
			continue
		}
		if o, dup := seen[p.File]; dup {
			el.add(p.Line, "plot.file", "plot file %q is also written by the [[plot]] on line %d; set file = \"...\" on one of them", p.File, o.Line)
			continue
		}
		seen[p.File] = p
	}
}

// number returns a TOML number as a float.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// safeFileName replaces what is not a letter, digit, '-', '_' or '.' by
// '_'.
func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}
