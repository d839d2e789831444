package runner

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"strata/core/config"
	"strata/core/safefile"
)

// Run is one training run of an experiment: a point of the axes and a seed.
type Run struct {
	Index  int   // 0-based, in expansion order
	Cell   *Cell // the axis point it belongs to
	Seed   int64 // train.seed of the run
	Config *config.Config
	// ID is the content hash that names the stored result: the SHA-256 of
	// the canonical resolved config and the strata version.
	ID string
}

// Label describes the run: its axis values and seed.
func (r *Run) Label() string {
	l := r.Cell.Label()
	if l != "" {
		l += " "
	}
	return l + "seed=" + strconv.FormatInt(r.Seed, 10)
}

// Cell is one point of the axes: a summary row, repeated over the seeds.
type Cell struct {
	Index  int
	Coord  []int    // index into each dimension
	Values []any    // the value of each axis (Experiment.Axes order)
	Labels []string // how each value is shown (Axis.Label)
	Runs   []*Run
	axes   []Axis
}

// Label is "key=value ..." over the axes.
func (c *Cell) Label() string {
	parts := make([]string, len(c.Values))
	for i := range c.Values {
		parts[i] = c.axes[i].Key + "=" + c.Labels[i]
	}
	return strings.Join(parts, " ")
}

// dim is one dimension of the product: a lone axis or a zip group.
type dim struct {
	axes []int // indexes into Experiment.Axes
	n    int   // number of values
}

// Plan is an expanded, validated experiment.
type Plan struct {
	Exp *Experiment
	// Version is the strata release that run identities hash: results
	// stay valid across commits of one release.
	Version string
	// Build is the full version of the binary (release and VCS revision),
	// recorded in the results and provenance; "" = Version.
	Build string
	Cells []*Cell
	Runs  []*Run
	dims  []dim
}

func (p *Plan) build() string {
	if p.Build != "" {
		return p.Build
	}
	return p.Version
}

// CheckFunc validates a generated config beyond parsing (train.Check with
// skipData in the CLI).
type CheckFunc func(ctx context.Context, cfg *config.Config) error

// dims groups the axes into dimensions, in order of first appearance.
func (e *Experiment) dims() []dim {
	var out []dim
	group := map[string]int{}
	for i, a := range e.Axes {
		if a.Zip != "" {
			if g, ok := group[a.Zip]; ok {
				out[g].axes = append(out[g].axes, i)
				continue
			}
			group[a.Zip] = len(out)
		}
		out = append(out, dim{axes: []int{i}, n: len(a.Values)})
	}
	return out
}

// MaxRuns is the most runs an experiment may have: axes × seeds beyond
// it are refused before anything is expanded (3 axes of 200 values are
// 8 million runs, gigabytes of plan before the first run).
const MaxRuns = 100_000

// runCount checks the number of runs of the experiment (the product of
// its dimensions' sizes and its seeds) against MaxRuns before anything is
// expanded: an error names the sizes and the fix. Each product is checked
// before it is taken, so it never overflows.
func (e *Experiment) runCount() *config.Error {
	dims := e.dims()
	total := max(len(e.Seeds), 1)
	over := false
	for _, d := range dims {
		if d.n == 0 {
			return nil
		}
		if total > MaxRuns/d.n {
			over = true // keep looking for an empty axis: zero runs
			continue
		}
		total *= d.n
		over = over || total > MaxRuns
	}
	if !over && total <= MaxRuns {
		return nil
	}
	parts := make([]string, 0, min(len(dims), 8)+1)
	for i, d := range dims {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("%d more axes", len(dims)-8))
			break
		}
		parts = append(parts, fmt.Sprintf("axis %q: %d values", e.Axes[d.axes[0]].Key, d.n))
	}
	if len(e.Seeds) > 0 {
		parts = append(parts, fmt.Sprintf("%d seeds", len(e.Seeds)))
	}
	line := 0
	if len(e.Axes) > 0 {
		line = e.Axes[0].Line
	}
	return &config.Error{File: e.File, Line: line, Key: "axis", Msg: fmt.Sprintf(
		"the experiment has more than %d runs (runner.MaxRuns): %s multiply to more; split it into several experiment files, or zip axes that advance together (zip = \"group\" on their [[axis]] tables, docs/experiments.md)",
		MaxRuns, strings.Join(parts, " × "))}
}

// Expand lists the cells of the experiment: the cartesian product of its
// dimensions (lone axes and zip groups), the first dimension varying
// slowest. Call it only for an experiment within MaxRuns (runCount).
func (e *Experiment) Expand() []*Cell {
	dims := e.dims()
	total := 1
	for _, d := range dims {
		total *= d.n
	}
	cells := make([]*Cell, 0, total)
	coord := make([]int, len(dims))
	for i := 0; i < total; i++ {
		rem := i
		for j := len(dims) - 1; j >= 0; j-- {
			coord[j] = rem % dims[j].n
			rem /= dims[j].n
		}
		c := &Cell{Index: i, Coord: slices.Clone(coord), Values: make([]any, len(e.Axes)), Labels: make([]string, len(e.Axes)), axes: e.Axes}
		for j, d := range dims {
			for _, a := range d.axes {
				c.Values[a] = e.Axes[a].Values[coord[j]]
				c.Labels[a] = e.Axes[a].Label(coord[j])
			}
		}
		cells = append(cells, c)
	}
	return cells
}

// NewPlan expands the experiment and parses and checks every generated
// config before anything runs. All the problems are reported at once, one
// per line, each naming the axis values of the runs it affects; a problem
// of an axis value is located at the axis's line of the experiment file.
func NewPlan(ctx context.Context, e *Experiment, version string, check CheckFunc) (*Plan, error) {
	if err := e.runCount(); err != nil {
		return nil, err
	}
	p := &Plan{Exp: e, Version: version, Cells: e.Expand(), dims: e.dims()}
	var baseData []byte
	if e.BasePath != "" {
		var err error
		if baseData, err = safefile.ReadFile(e.BasePath, config.MaxConfigBytes); err != nil {
			return nil, &config.Error{File: e.File, Line: e.BaseLine, Key: "base", Msg: "cannot read base config: " + err.Error()}
		}
	}
	var problems []problem
	for _, c := range p.Cells {
		// overrides for the axis values, and where each one comes from
		sets := make([]string, 0, len(e.Axes)+1)
		where := map[string]*Axis{}
		for i := range e.Axes {
			a := &e.Axes[i]
			s := a.Key + "=" + config.TOMLValue(e.resolveValue(*a, c.Values[i]))
			sets = append(sets, s)
			where["--set "+s] = a
		}
		seeds := e.Seeds
		if seeds == nil {
			seeds = []int64{-1} // placeholder: the base config's seed
		}
		for si, seed := range seeds {
			runSets := sets
			if e.Seeds != nil {
				s := "train.seed=" + strconv.FormatInt(seed, 10)
				runSets = append(slices.Clone(sets), s)
				where["--set "+s] = &Axis{Key: "train.seed", KeyLine: e.seedsLine, ValuesLine: e.seedsLine}
			}
			var cfg *config.Config
			var err error
			if e.BasePath != "" {
				cfg, err = config.Parse(e.BasePath, baseData, runSets...)
			} else {
				cfg, err = config.ParseTable(e.File, e.Text, "base", runSets...)
			}
			if err == nil && si == 0 && e.Kind.check != nil {
				err = e.Kind.check(cfg)
			}
			if err == nil && si == 0 && check != nil {
				// Seeds change no setting that a check looks at: check
				// each point once.
				err = check(ctx, cfg)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
			}
			if err != nil {
				problems = append(problems, e.locate(err, where, c)...)
				continue
			}
			cfg.Output.Progress = "off"
			cfg.Output.CSV = ""
			id, err := e.runID(cfg, version)
			if err != nil {
				return nil, err
			}
			r := &Run{Index: len(p.Runs), Cell: c, Seed: cfg.Train.Seed, Config: cfg, ID: id}
			c.Runs = append(c.Runs, r)
			p.Runs = append(p.Runs, r)
		}
	}
	if len(problems) > 0 {
		return nil, joinProblems(e.File, problems, len(p.Cells))
	}
	seen := map[string]*Run{}
	for _, r := range p.Runs {
		if o, dup := seen[r.ID]; dup {
			return nil, &config.Error{File: e.File, Msg: fmt.Sprintf("runs %q and %q resolve to the same config; an axis value changes nothing", o.Label(), r.Label())}
		}
		seen[r.ID] = r
	}
	if err := p.checkSelections(); err != nil {
		return nil, err
	}
	return p, nil
}

// resolveValue makes a relative path value of data.dataset or model.module
// relative to the experiment file, as a config's own paths are relative
// to the config.
func (e *Experiment) resolveValue(a Axis, v any) any {
	s, ok := v.(string)
	if !ok || (a.Key != "data.dataset" && a.Key != "model.module") {
		return v
	}
	if s == "" || filepath.IsAbs(s) || strings.Contains(s, ":") || strings.HasPrefix(s, "rmat-") {
		return v
	}
	return filepath.Join(filepath.Dir(e.File), s)
}

// runID hashes the canonical config and the strata version, and for a
// kind other than train the kind and its options: a run's identity is
// what it computes.
func (e *Experiment) runID(cfg *config.Config, version string) (string, error) {
	b, err := cfg.Canonical()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(b)
	fmt.Fprintf(h, "\n# strata %s\n", version)
	if e.Kind != nil && e.Kind.Name != "train" {
		fmt.Fprintf(h, "# kind %s\n", e.Kind.Name)
		if e.Kind.Name == "hitratio" {
			fmt.Fprintf(h, "# hitratio.synth_train %v traffic %v\n", e.HitRatio.SynthTrain, e.measuresTraffic())
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// problem is one validation error and the cell it was found in.
type problem struct {
	err  error
	cell *Cell
}

// locate moves the errors that an axis override caused to the axis's
// lines of the experiment file: an unknown key to the line of its key, a
// bad value to the line of its values.
func (e *Experiment) locate(err error, where map[string]*Axis, c *Cell) []problem {
	ces := config.Errors(err)
	if len(ces) == 0 {
		return []problem{{err, c}}
	}
	out := make([]problem, 0, len(ces))
	for _, ce := range ces {
		if a, ok := where[ce.Override]; ok {
			what := strings.TrimPrefix(ce.Override, "--set ")
			ce.Override, ce.File, ce.Line, ce.Col = "", e.File, a.ValuesLine, 0
			if strings.HasPrefix(ce.Msg, "unknown key") || strings.Contains(ce.Msg, "malformed key") {
				ce.Line = a.KeyLine // the same for every value: merged by joinProblems
			} else if !strings.Contains(ce.Msg, what) {
				ce.Msg += " (from " + what + ")"
			}
		}
		out = append(out, problem{ce, c})
	}
	return out
}

// joinProblems merges identical errors found in several cells and names
// the cells of each; at most MaxErrors are listed (file names the rest).
func joinProblems(file string, ps []problem, cells int) error {
	type group struct {
		err   error
		cells []*Cell
	}
	var groups []*group
	byText := map[string]*group{}
	for _, p := range ps {
		t := p.err.Error()
		g, ok := byText[t]
		if !ok {
			g = &group{err: p.err}
			byText[t] = g
			groups = append(groups, g)
		}
		// ps is in cell order: a cell already counted is the last one.
		if n := len(g.cells); n == 0 || g.cells[n-1] != p.cell {
			g.cells = append(g.cells, p.cell)
		}
	}
	// In the order of the file: the lines of the experiment (or base)
	// file, then the errors without a line.
	line := func(err error) int {
		if ces := config.Errors(err); len(ces) == 1 && ces[0].Line > 0 {
			return ces[0].Line
		}
		return math.MaxInt
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return cmp.Compare(line(a.err), line(b.err)) })
	list := make([]error, len(groups))
	for i, g := range groups {
		where := g.cells[0].Label()
		switch {
		case where == "":
			where = "the base config"
		case len(g.cells) == cells && cells > 1:
			where = "every run"
		case len(g.cells) > 1:
			where += fmt.Sprintf(", and %d more", len(g.cells)-1)
		}
		list[i] = &runError{err: g.err, where: where}
	}
	if len(list) == 1 {
		return list[0]
	}
	return errors.Join(capErrors(file, list)...)
}

// runError is a validation error of the runs at an axis point.
type runError struct {
	err   error
	where string
}

func (e *runError) Error() string {
	if e.where == "every run" || e.where == "the base config" {
		return e.err.Error() + " [" + e.where + "]"
	}
	return e.err.Error() + " [run " + e.where + "]"
}
func (e *runError) Unwrap() error { return e.err }

// Axes are the run's axis values, by key.
func (r *Run) Axes() map[string]any { return axisMap(r.Cell) }
