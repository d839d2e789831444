// Package check implements `strata experiment --check`: it reruns an
// experiment, or the subset its [check] table declares, into a
// temporary directory and compares every checked column of each run's
// result with the committed results (docs/experiments.md, "--check").
package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"strata/core/safefile"
	"strata/experiments/runner"
	"strata/experiments/runner/numerics"
)

// InputError is a check that cannot be made as asked: no committed
// results, results of another experiment file, numerics that differ.
// The CLI exits with code 2.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// Committed are the committed results of an experiment.
type Committed struct {
	Dir  string
	Prov *runner.Provenance
	// Warnings are things the check notes but does not refuse: an
	// experiment file changed without changing its runs, results made
	// before numerics were recorded.
	Warnings []string
	outcomes map[string]*outcome // by runKey
}

// outcome is what the committed results hold for one run.
type outcome struct {
	Run      int    // 1-based, in the committed run order
	RunID    string `json:"run_id"`
	Status   string `json:"status"`
	Error    string `json:"error"`
	Expected string `json:"expected_failure"`
	Config   string `json:"config"`
	// Result is the run's result JSON as stored (numbers as written).
	Result json.RawMessage `json:"result"`
}

// Load reads the committed results of the plan's experiment in dir and
// checks that they are this experiment's: an *InputError names the file
// and the fix when there are none, or when they come from another
// experiment file or from other runs of this one.
func Load(p *runner.Plan, dir string) (*Committed, error) {
	e := p.Exp
	provPath := filepath.Join(dir, "provenance.json")
	b, err := safefile.ReadFile(provPath, runner.MaxResultBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, inputf("experiment --check: %s has no committed results of experiment %q (no %s): produce them with `strata experiment -c %s` (make experiments EXP=%s), commit them, then check", e.File, e.Name, provPath, e.File, e.File)
	}
	if err != nil {
		return nil, inputf("experiment --check: reading the committed results: %v", err)
	}
	var prov runner.Provenance
	if err := json.Unmarshal(b, &prov); err != nil {
		return nil, inputf("experiment --check: %s: not a provenance.json (%v): regenerate the results with `strata experiment -c %s`", provPath, err, e.File)
	}
	if prov.Experiment != e.Name || filepath.Base(prov.File) != filepath.Base(e.File) {
		return nil, inputf("experiment --check: %s holds the results of experiment %q (file %s), not of %s (experiment %q): give this experiment's results directory with --out, or produce them with `strata experiment -c %s`", dir, prov.Experiment, prov.File, e.File, e.Name, e.File)
	}
	c := &Committed{Dir: dir, Prov: &prov, outcomes: map[string]*outcome{}}
	if err := c.checkRuns(p); err != nil {
		return nil, err
	}
	if err := c.readOutcomes(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkRuns compares the runs of the committed results with the plan's:
// a changed experiment file is fine as long as it defines the same runs
// (a comment, a plot or its [check] table changed).
func (c *Committed) checkRuns(p *runner.Plan) error {
	e := p.Exp
	committed := map[string]bool{}
	for _, r := range c.Prov.Runs {
		committed[runKey(r.Axes, r.Seed)] = true
	}
	var missing []string
	for _, r := range p.Runs {
		k := runKey(r.Axes(), r.Seed)
		if !committed[k] {
			missing = append(missing, r.Label())
		}
		delete(committed, k)
	}
	if len(missing) == 0 && len(committed) == 0 {
		if c.Prov.FileSHA256 != e.SHA256 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s changed since its results were made (sha256 %s in provenance.json, %s now), its runs did not: comparing them", e.File, shortHash(c.Prov.FileSHA256), shortHash(e.SHA256)))
		}
		return nil
	}
	what := fmt.Sprintf("%d of its %d runs have no committed result", len(missing), len(p.Runs))
	if len(missing) > 0 {
		what += " (the first: " + missing[0] + ")"
	}
	if len(committed) > 0 {
		what += fmt.Sprintf(", and %d committed runs are not in it", len(committed))
	}
	return inputf("experiment --check: %s defines other runs than its committed results in %s (sha256 %s there, %s now): %s; regenerate the results (make experiments EXP=%s), or check out the file they were made from (git log -- %s)",
		e.File, c.Dir, shortHash(c.Prov.FileSHA256), shortHash(e.SHA256), what, e.File, e.File)
}

// readOutcomes reads each committed run's stored result (runs/<id>.json)
// and, for a failed run that was not stored, its error (runs.jsonl).
func (c *Committed) readOutcomes() error {
	errs, err := jsonlErrors(filepath.Join(c.Dir, "runs.jsonl"))
	if err != nil {
		return inputf("experiment --check: %v", err)
	}
	for _, r := range c.Prov.Runs {
		o := &outcome{Run: r.Run, RunID: r.RunID, Status: r.Status, Expected: r.ExpectedFailure}
		path := filepath.Join(c.Dir, "runs", r.RunID+".json")
		b, err := safefile.ReadFile(path, runner.MaxResultBytes)
		switch {
		case err == nil:
			if err := json.Unmarshal(b, o); err != nil {
				return inputf("experiment --check: %s: %v: the committed results are damaged; restore them from git (git checkout -- %s)", path, err, c.Dir)
			}
		case r.Status == "ok":
			return inputf("experiment --check: %s: provenance.json lists run %d (%s) as finished but its result is missing: restore it from git (git checkout -- %s) or regenerate the results", path, r.Run, r.RunID, c.Dir)
		default:
			o.Error = errs[r.RunID]
		}
		c.outcomes[runKey(r.Axes, r.Seed)] = o
	}
	return nil
}

// jsonlErrors reads the error of every failed run in runs.jsonl, by run
// ID (none when the file is absent).
func jsonlErrors(path string) (map[string]string, error) {
	out := map[string]string{}
	b, err := safefile.ReadFile(path, runner.MaxResultBytes)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var line struct {
			RunID string `json:"run_id"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if line.Error != "" {
			out[line.RunID] = line.Error
		}
	}
	return out, sc.Err()
}

// Numerics returns the numerics the committed runs ran with; for results
// made before they were recorded, the pinned ones (with a warning).
func (c *Committed) Numerics() numerics.Numerics {
	if c.Prov.Numerics != nil {
		return *c.Prov.Numerics
	}
	c.Warnings = append(c.Warnings, "the committed results record no numerics (made before they were recorded): rerunning with the pinned ones ("+numerics.Pinned().EnvString()+"); a difference in the last digits may come from the kernels")
	return numerics.Pinned()
}

// runKey identifies a run by its axis values and seed, as JSON.
func runKey(axes map[string]any, seed int64) string {
	b, _ := json.Marshal(axes)
	return string(b) + " seed=" + strconv.FormatInt(seed, 10)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "(none)"
	}
	return h
}

// configDiff lists the lines of the canonical config that only one side
// has, a few of each ("" when the configs are the same).
func configDiff(committed, now string) string {
	a, b := lineSet(committed), lineSet(now)
	var only []string
	for _, l := range strings.Split(committed, "\n") {
		if l != "" && !b[l] {
			only = append(only, "- "+l)
		}
	}
	for _, l := range strings.Split(now, "\n") {
		if l != "" && !a[l] {
			only = append(only, "+ "+l)
		}
	}
	if len(only) > 6 {
		only = append(only[:6], fmt.Sprintf("(%d more lines)", len(only)-6))
	}
	return strings.Join(only, "; ")
}

func lineSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		m[l] = true
	}
	return m
}
