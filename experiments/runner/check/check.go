package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"strata/core/safefile"
	"strata/experiments/runner"
	"strata/experiments/runner/numerics"
)

// Options are the settings of a check.
type Options struct {
	// Subset reruns only the runs the experiment's [check] table
	// selects; otherwise every run.
	Subset bool
	// Jobs, Train, Run, Progress, Binary and Numerics are passed to
	// runner.Execute for the rerun.
	Jobs     int
	Train    runner.TrainFunc
	Run      runner.RunFunc
	Progress io.Writer
	Binary   string
	Numerics *numerics.Numerics
	// TempDir is where the rerun's directory is made ("" = os.TempDir()).
	TempDir string
}

// Difference is one checked column whose value now differs from the
// committed one.
type Difference struct {
	Run       int    `json:"run"` // 1-based run number
	Label     string `json:"label"`
	Column    string `json:"column"`
	Committed string `json:"committed"` // JSON text, or "absent"
	Now       string `json:"now"`
}

// Report is the outcome of a check; its JSON is the last stdout line of
// `strata experiment --check`.
type Report struct {
	Experiment  string       `json:"experiment"`
	Subset      bool         `json:"subset"`
	Runs        int          `json:"runs"`      // runs rerun and compared
	Matching    int          `json:"matching"`  // runs whose checked columns all match
	Differing   int          `json:"differing"` // runs with a difference
	Compared    int          `json:"columns_compared"`
	NotChecked  int          `json:"columns_not_checked"` // timing, RSS, ... (declared)
	NDiffs      int          `json:"differences"`
	Differences []Difference `json:"-"`
	Notes       []string     `json:"-"` // config differences, warnings
	Numerics    string       `json:"numerics"`
	Results     string       `json:"results"`
	Rerun       string       `json:"rerun,omitempty"` // kept when a run differs
	WallS       float64      `json:"wall_s"`
	OK          bool         `json:"ok"`
}

// Run reruns the experiment's runs (or its subset) into a new temporary
// directory and compares them with the committed results c. It never
// writes into c.Dir. The rerun's directory is removed when every run
// matches and kept (Report.Rerun) otherwise.
func Run(ctx context.Context, p *runner.Plan, c *Committed, opts Options) (*Report, error) {
	start := time.Now()
	runs := p.Runs
	if opts.Subset {
		if runs = p.Subset(); len(runs) == 0 {
			return nil, inputf("experiment --check --subset: %s declares no [check] runs: add a [check] table with runs = [{ ... }] selecting cheap runs and why = \"...\" (docs/experiments.md)", p.Exp.File)
		}
	}
	tmp, err := os.MkdirTemp(opts.TempDir, "strata-check-"+p.Exp.Name+"-")
	if err != nil {
		return nil, err
	}
	selected := map[int]bool{}
	for _, r := range runs {
		selected[r.Index] = true
	}
	_, recs, err := runner.Execute(ctx, p, runner.Options{
		OutDir: tmp, Jobs: opts.Jobs, Train: opts.Train, Run: opts.Run, Progress: opts.Progress,
		Select: func(r *runner.Run) bool { return selected[r.Index] }, SkipReports: true, Fresh: true,
		Binary: opts.Binary, Numerics: opts.Numerics, Force: true,
	})
	if err != nil {
		_ = safefile.RemoveTree(tmp)
		return nil, err
	}
	rep := &Report{Experiment: p.Exp.Name, Subset: opts.Subset, Runs: len(runs), Results: c.Dir, Notes: slices.Clone(c.Warnings)}
	if opts.Numerics != nil {
		rep.Numerics = opts.Numerics.EnvString()
	}
	for _, r := range runs {
		if err := rep.compare(p, r, c.outcomes[runKey(r.Axes(), r.Seed)], recs[r.Index]); err != nil {
			return nil, err
		}
	}
	rep.NDiffs = len(rep.Differences)
	rep.OK = rep.NDiffs == 0
	if rep.OK {
		_ = safefile.RemoveTree(tmp)
	} else {
		rep.Rerun = tmp
	}
	rep.WallS = time.Since(start).Seconds()
	return rep, nil
}

// compare adds the differences between a run's committed outcome and its
// rerun.
func (rep *Report) compare(p *runner.Plan, r *runner.Run, was *outcome, now *runner.Record) error {
	n0 := len(rep.Differences)
	diff := func(col, committed, now string) {
		rep.Differences = append(rep.Differences, Difference{Run: r.Index + 1, Label: r.Label(), Column: col, Committed: committed, Now: now})
	}
	switch {
	case now == nil:
		return fmt.Errorf("run %s did not finish", r.Label())
	case was == nil || was.Status == "not run":
		diff("status", "absent (no committed result)", now.Status)
	case was.Status != now.Status:
		diff("status", was.Status+errorNote(was.Error), now.Status+errorNote(now.Error))
	case now.Status != "ok":
		if was.Error != now.Error {
			diff("error", was.Error, now.Error)
		}
	default:
		if err := rep.compareResults(p, r, was.Result, now.Result, diff); err != nil {
			return err
		}
	}
	if was != nil && was.Config != "" && was.Config != now.Config {
		rep.Notes = append(rep.Notes, fmt.Sprintf("[%d/%d] %s: the resolved config differs from the committed one: %s", r.Index+1, len(p.Runs), r.Label(), configDiff(was.Config, now.Config)))
	}
	if len(rep.Differences) > n0 {
		rep.Differing++
	} else {
		rep.Matching++
	}
	return nil
}

// compareResults compares the checked columns of two results: every
// leaf either has must be in both, equal.
func (rep *Report) compareResults(p *runner.Plan, r *runner.Run, was json.RawMessage, now any, diff func(col, committed, now string)) error {
	a, err := runner.Leaves(was)
	if err != nil {
		return fmt.Errorf("committed result of %s: %w", r.Label(), err)
	}
	b, err := runner.Leaves(now)
	if err != nil {
		return fmt.Errorf("result of %s: %w", r.Label(), err)
	}
	cols := make([]string, 0, len(a)+len(b))
	for k := range a {
		cols = append(cols, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			cols = append(cols, k)
		}
	}
	slices.Sort(cols)
	for _, col := range cols {
		if !p.Exp.ClassOf(col).Checked {
			rep.NotChecked++
			continue
		}
		rep.Compared++
		x, inA := a[col]
		y, inB := b[col]
		switch {
		case !inA:
			diff(col, "absent", string(y))
		case !inB:
			diff(col, string(x), "absent")
		case !runner.SameLeaf(x, y):
			diff(col, string(x), string(y))
		}
	}
	return nil
}

func errorNote(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}

// Print writes the differences, one line each, then the notes and a
// sentence of totals.
func (rep *Report) Print(w io.Writer, runs int) {
	for _, d := range rep.Differences {
		fmt.Fprintf(w, "DIFF [%d/%d] %s: %s: committed %s, now %s\n", d.Run, runs, d.Label, d.Column, d.Committed, d.Now)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	verdict := "every checked column matches"
	if !rep.OK {
		verdict = fmt.Sprintf("%d differences in %d runs; the rerun's results are in %s", rep.NDiffs, rep.Differing, rep.Rerun)
	}
	what := "every run"
	if rep.Subset {
		what = "the [check] subset"
	}
	fmt.Fprintf(w, "experiment %s --check (%s, %d runs, %d columns compared, %d not checked, %.0f s): %s\n",
		rep.Experiment, what, rep.Runs, rep.Compared, rep.NotChecked, rep.WallS, verdict)
}

// Line is the report's one-line JSON.
func (rep *Report) Line() string {
	b, _ := json.Marshal(rep)
	return strings.TrimSpace(string(b))
}
