package runner

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/safefile"
	"strata/core/train"
)

// TestExecuteStoreFailure makes storing one run's result fail (its file
// name is taken by a directory, as a full disk would fail the write): the
// run is reported failed, not ok, the reports are still written for what
// finished, no temporary file is left, and the next invocation runs it
// again.
func TestExecuteStoreFailure(t *testing.T) {
	out := t.TempDir()
	p := fakePlan(t)
	blocked := filepath.Join(out, "runs", p.Runs[0].ID+".json")
	if err := os.MkdirAll(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	var f fakeTrain
	sum, recs, err := Execute(context.Background(), p, Options{OutDir: out, Train: f.run})
	if err == nil || !strings.Contains(err.Error(), "storing a run result") {
		t.Fatalf("err = %v, want a storage error", err)
	}
	if sum.Failed != 1 || sum.Executed != 3 || recs[0].Status != "failed" || !strings.Contains(recs[0].Error, "storing the result") {
		t.Errorf("summary %+v, record %+v", sum, recs[0])
	}
	if _, err := os.Stat(filepath.Join(out, "summary.md")); err != nil {
		t.Errorf("no report for what finished: %v", err)
	}
	noTemp(t, out)
	os.Remove(blocked)
	var g fakeTrain
	sum, _, err = Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: g.run})
	if err != nil || sum.Executed != 1 || sum.Skipped != 3 || g.total() != 1 {
		t.Errorf("retry: %+v, %d calls, %v", sum, g.total(), err)
	}
}

// TestExecuteDiverged checks that a diverged run is a failed point, and
// that a result holding NaN is still stored and reported.
func TestExecuteDiverged(t *testing.T) {
	out := t.TempDir()
	run := func(ctx context.Context, cfg *config.Config) (*train.Result, error) {
		res := &train.Result{TestAcc: 0.5, FinalLoss: math.NaN(), Seed: cfg.Train.Seed}
		if cfg.Model.Hidden == 16 {
			res.Status = train.StatusDiverged
			return res, &train.DivergedError{Epoch: 3, What: "the loss", Value: math.Inf(1)}
		}
		return res, nil
	}
	sum, _, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: run})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 2 || sum.Executed != 2 {
		t.Errorf("summary %+v, want 2 diverged runs failed", sum)
	}
	stored, _ := filepath.Glob(filepath.Join(out, "runs", "*.json"))
	if len(stored) != 2 {
		t.Fatalf("%d stored results, want 2", len(stored))
	}
	b, _ := os.ReadFile(stored[0])
	if !strings.Contains(string(b), `"final_loss": "NaN"`) {
		t.Errorf("stored result does not encode NaN:\n%s", b)
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(md), "training diverged at epoch 3") {
		t.Errorf("summary.md does not report the divergence:\n%s", md)
	}
}

// TestExecuteLocked checks that a second invocation on the same results
// directory is refused, naming the holder.
func TestExecuteLocked(t *testing.T) {
	out := t.TempDir()
	l, err := safefile.Acquire(out)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	var f fakeTrain
	_, _, err = Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: f.run})
	if !errors.Is(err, safefile.ErrLocked) || !strings.Contains(err.Error(), "in use by process") || f.total() != 0 {
		t.Errorf("err = %v, %d runs", err, f.total())
	}
}

// TestFreshKeepsForeignFiles runs an experiment, puts files strata never
// wrote into its runs directory (notes, a JSON of another name, a
// directory, a link named like a run file), then reruns it with Fresh:
// every run runs again, the stored results of the first invocation are
// replaced, and every foreign entry is left in place and reported.
func TestFreshKeepsForeignFiles(t *testing.T) {
	out := t.TempDir()
	var f fakeTrain
	if _, _, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: f.run}); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(out, "runs")
	elsewhere := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(elsewhere, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := strings.Repeat("ab", 32) + ".json"
	foreign := map[string]func(string) error{
		"notes.txt":  func(p string) error { return os.WriteFile(p, []byte("my notes"), 0o644) },
		"extra.json": func(p string) error { return os.WriteFile(p, []byte("{}"), 0o644) },
		"ABCD.JSON":  func(p string) error { return os.WriteFile(p, []byte("{}"), 0o644) },
		"sub":        func(p string) error { return os.Mkdir(p, 0o755) },
		link:         func(p string) error { return os.Symlink(elsewhere, p) },
	}
	for name, mk := range foreign {
		if err := mk(filepath.Join(runs, name)); err != nil {
			t.Fatal(err)
		}
	}
	var g fakeTrain
	var progress strings.Builder
	sum, _, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: g.run, Fresh: true, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if g.total() != sum.Runs || sum.Executed != sum.Runs {
		t.Errorf("fresh ran %d of %d runs (summary %+v)", g.total(), sum.Runs, sum)
	}
	for name := range foreign {
		if _, err := os.Lstat(filepath.Join(runs, name)); err != nil {
			t.Errorf("--fresh removed %s, which strata did not write: %v", name, err)
		}
		if !slices.Contains(sum.Kept, name) || !strings.Contains(progress.String(), name) {
			t.Errorf("%s not reported as kept: %v; progress %q", name, sum.Kept, progress.String())
		}
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("the link's target is gone: %v", err)
	}
}
