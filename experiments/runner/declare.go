package runner

import (
	"fmt"
	"path"
	"strings"

	"strata/core/config"
)

// CheckSpec is the experiment's [check] table: the runs that
// `strata experiment --check --subset` reruns (CI's bounded subset) and
// the result columns --check does not compare in this experiment.
type CheckSpec struct {
	Runs    []Selector
	Why     string // why these runs: what makes them cheap and telling
	Exclude []Exclusion
	Line    int
}

// Exclusion is one [[check.exclude]]: a result column (or a pattern of
// them, "peak_tier_bytes.*") that --check does not compare, and why.
type Exclusion struct {
	Column string
	Why    string
	Line   int
}

// ExpectedFailure is one [[expected_failure]]: runs the experiment
// expects to fail (a diverging model), and why. Such a failure is stored
// like a result and does not fail the sweep; if one of these runs
// succeeds, the sweep reports it.
type ExpectedFailure struct {
	Runs []Selector
	Why  string
	Line int
}

// Selector picks runs by axis values (or their labels) and optionally
// the seed: { "model.name" = "gcn", seed = 0 }. A key it does not name
// matches every value.
type Selector struct {
	Values map[string]any
	Line   int
}

// checkTable is [check].
type checkTable struct {
	config.Pos
	Runs    selectorList   `toml:"runs" example:"[{ \"model.name\" = \"gcn\", seed = 0 }]" doc:"the runs of the subset that --check --subset reruns: inline tables of axis values (or labels) and seed"`
	Why     string         `toml:"why" doc:"why these runs were chosen (required with runs)"`
	Exclude []excludeTable `toml:"exclude" doc:"result columns --check does not compare in this experiment, each with why"`
}

// excludeTable is one [[check.exclude]].
type excludeTable struct {
	config.Pos
	Column string `toml:"column" required:"true" example:"peak_tier_bytes.device0" doc:"a result column, or a pattern (\"peak_tier_bytes.*\")"`
	Why    string `toml:"why" required:"true" doc:"why the column does not reproduce in this experiment"`
}

// expectFailTable is one [[expected_failure]].
type expectFailTable struct {
	config.Pos
	Runs selectorList `toml:"runs" required:"true" example:"[{ model = \"mul\", seed = 2 }]" doc:"the runs expected to fail: inline tables of axis values (or labels) and seed"`
	Why  string       `toml:"why" required:"true" doc:"why they fail"`
}

// selectorList is an array of inline tables, each selecting runs.
type selectorList []map[string]any

func (l *selectorList) DecodeTOML(key string, v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s: expected an array of inline tables such as [{ \"model.name\" = \"gcn\", seed = 0 }], got %s", key, config.DescribeValue(v))
	}
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: expected inline tables of axis values and seed, such as { \"model.name\" = \"gcn\", seed = 0 }, got %s", key, config.DescribeValue(e))
		}
		*l = append(*l, m)
	}
	return nil
}

// parseDeclarations checks [check] and [[expected_failure]]; the axes and
// seeds must be parsed first.
func (e *Experiment) parseDeclarations(el *errorList, f *expFile) {
	e.Mirrors = f.Mirrors
	c := f.Check
	e.Check.Line = c.Line
	if c.Has("runs") && !el.bad(c.Pos, "runs") {
		if len(c.Runs) == 0 {
			el.at(c.Pos, "runs", "check.runs must not be empty: select at least one cheap run, e.g. [{ seed = 0 }]")
		}
		e.Check.Runs = e.parseSelectors(el, c.Pos, "runs", c.Runs)
		if strings.TrimSpace(c.Why) == "" && !el.bad(c.Pos, "why") {
			el.at(c.Pos, "runs", "[check] runs needs why = \"...\": say why these runs were chosen (what they cover, what they cost)")
		}
	}
	e.Check.Why = c.Why
	for _, x := range c.Exclude {
		if !x.Has("column") || el.bad(x.Pos, "column") {
			continue
		}
		if _, err := path.Match(x.Column, ""); err != nil || !e.Kind.validMetric(x.Column) {
			el.at(x.Pos, "column", "check.exclude column %q: not a result column of kind %q; give a metric name or a pattern of one (\"peak_tier_bytes.*\")", x.Column, e.Kind.Name)
			continue
		}
		if strings.TrimSpace(x.Why) == "" && !el.bad(x.Pos, "why") {
			el.at(x.Pos, "why", "check.exclude column %q: why must say why the column does not reproduce", x.Column)
		}
		e.Check.Exclude = append(e.Check.Exclude, Exclusion{Column: x.Column, Why: x.Why, Line: x.KeyLine("column")})
	}
	for _, x := range f.ExpectedFailure {
		if !x.Has("runs") || el.bad(x.Pos, "runs") {
			continue
		}
		if strings.TrimSpace(x.Why) == "" && !el.bad(x.Pos, "why") {
			el.at(x.Pos, "why", "expected_failure: why must say why these runs fail")
		}
		e.ExpectedFailures = append(e.ExpectedFailures, ExpectedFailure{Runs: e.parseSelectors(el, x.Pos, "runs", x.Runs), Why: x.Why, Line: x.KeyLine("runs")})
	}
}

// parseSelectors checks that every key of each selector is an axis or
// "seed", and every value one of the axis's values or labels (or seeds).
func (e *Experiment) parseSelectors(el *errorList, p config.Pos, key string, list selectorList) []Selector {
	out := make([]Selector, 0, len(list))
	for _, m := range list {
		ok := true
		for _, k := range sortedKeys(m, nil, "") {
			v := m[k]
			if k == "seed" {
				s, isInt := v.(int64)
				switch {
				case !isInt:
					el.at(p, key, "%s: seed = %s: expected an integer", p.Path(key), config.TOMLValue(v))
					ok = false
				case e.Seeds != nil && !containsSeed(e.Seeds, s):
					el.at(p, key, "%s: seed = %d is not one of seeds %s", p.Path(key), s, seedList(e.Seeds))
					ok = false
				}
				continue
			}
			ai := e.axisIndex(k)
			if ai < 0 {
				el.at(p, key, "%s: %q is not an axis (nor \"seed\"); the axes are %s", p.Path(key), k, quoteList(axisNames(e.Axes)))
				ok = false
				continue
			}
			if e.Axes[ai].index(v) < 0 {
				el.at(p, key, "%s: %s = %s is not one of the axis values %s%s", p.Path(key), k, config.TOMLValue(v), config.TOMLValue(e.Axes[ai].Values), labelsNote(e.Axes[ai]))
				ok = false
			}
		}
		if ok {
			out = append(out, Selector{Values: m, Line: p.KeyLine(key)})
		}
	}
	return out
}

// seedList spells seeds as TOML: [0, 1].
func seedList(seeds []int64) string {
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprint(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func containsSeed(seeds []int64, s int64) bool {
	for _, x := range seeds {
		if x == s {
			return true
		}
	}
	return false
}

// Matches reports whether the selector picks r.
func (s Selector) Matches(e *Experiment, r *Run) bool {
	for k, v := range s.Values {
		if k == "seed" {
			if sv, ok := v.(int64); !ok || sv != r.Seed {
				return false
			}
			continue
		}
		ai := e.axisIndex(k)
		if ai < 0 || !axisMatches(&e.Axes[ai], v, r.Cell.Values[ai], r.Cell.Labels[ai]) {
			return false
		}
	}
	return true
}

// axisMatches reports whether a selector's value v picks a cell whose
// value of the axis is value, shown as label: v is one of the axis's
// values (compared as values), or else one of its labels (compared with
// the cell's label, so that a label picks its own point of a zip group
// whose values repeat).
func axisMatches(a *Axis, v, value any, label string) bool {
	t := config.TOMLValue(v)
	for _, x := range a.Values {
		if config.TOMLValue(x) == t {
			return config.TOMLValue(value) == t
		}
	}
	s, ok := v.(string)
	return ok && s == label
}

// String is the selector as written: { key = value, ... }.
func (s Selector) String() string {
	parts := make([]string, 0, len(s.Values))
	for _, k := range sortedKeys(s.Values, nil, "") {
		parts = append(parts, config.TOMLValue(k)+" = "+config.TOMLValue(s.Values[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// Subset lists the runs of the plan that [check] runs selects, in run
// order (nil when the experiment declares none).
func (p *Plan) Subset() []*Run {
	var out []*Run
	for _, r := range p.Runs {
		for _, s := range p.Exp.Check.Runs {
			if s.Matches(p.Exp, r) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// ExpectedFailure returns the declaration that expects r to fail, or nil.
func (e *Experiment) ExpectedFailure(r *Run) *ExpectedFailure {
	for i := range e.ExpectedFailures {
		for _, s := range e.ExpectedFailures[i].Runs {
			if s.Matches(e, r) {
				return &e.ExpectedFailures[i]
			}
		}
	}
	return nil
}

// ClassOf is the class of a result column in this experiment: not
// checked when a [[check.exclude]] names it, else the kind's class.
func (e *Experiment) ClassOf(column string) Class {
	slashed := strings.ReplaceAll(column, ".", "/")
	for _, x := range e.Check.Exclude {
		if ok, _ := path.Match(strings.ReplaceAll(x.Column, ".", "/"), slashed); ok {
			return Class{Why: "excluded by the experiment file (line " + fmt.Sprint(x.Line) + "): " + x.Why}
		}
	}
	return e.Kind.ClassOf(column)
}

// checkSelections reports, at its line, a selector that picks no run of
// the plan (a seed key without seeds can miss the base config's seed).
func (p *Plan) checkSelections() error {
	el := &errorList{file: p.Exp.File}
	all := append([]Selector(nil), p.Exp.Check.Runs...)
	for _, f := range p.Exp.ExpectedFailures {
		all = append(all, f.Runs...)
	}
	for _, s := range all {
		found := false
		for _, r := range p.Runs {
			if s.Matches(p.Exp, r) {
				found = true
				break
			}
		}
		if !found {
			el.add(s.Line, "", "selector %s picks no run of the experiment; `strata experiment --dry-run` lists the runs", s)
		}
	}
	return el.err()
}
