package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"strata/core/config"
	"strata/core/train"
	"strata/internal/testcache"
	"strata/plugins/wasm"
)

// fakeTrain returns a result computed from the config, without training,
// and counts its calls per run label.
type fakeTrain struct {
	mu    sync.Mutex
	calls map[string]int
	fail  func(cfg *config.Config) error
}

func (f *fakeTrain) run(ctx context.Context, cfg *config.Config) (*train.Result, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[fmt.Sprintf("h%d s%d", cfg.Model.Hidden, cfg.Train.Seed)]++
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(cfg); err != nil {
			return nil, err
		}
	}
	return &train.Result{
		Model:            cfg.Model.Name,
		TestAcc:          float64(cfg.Model.Hidden)/100 + float64(cfg.Train.Seed)/1000,
		EpochTimeMedianS: float64(cfg.Model.Hidden),
		Seed:             cfg.Train.Seed,
	}, nil
}

func (f *fakeTrain) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

const fakeHead = `
name = "fake"
metrics = ["test_acc", "epoch_time_median_s"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16]
`

func fakePlan(t *testing.T) *Plan {
	t.Helper()
	p, err := NewPlan(context.Background(), mustParse(t, exp(fakeHead)), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// noTemp fails when a temporary file of an atomic write is left in dir.
func noTemp(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", path)
		}
		return nil
	})
}

func TestExecuteAndResumeFake(t *testing.T) {
	out := t.TempDir()
	var f fakeTrain
	var progress bytes.Buffer
	sum, recs, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: f.run, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Runs != 4 || sum.Executed != 4 || sum.Skipped != 0 || sum.Failed != 0 || f.total() != 4 {
		t.Fatalf("summary %+v, %d calls", sum, f.total())
	}
	if len(recs) != 4 || recs[3].Status != "ok" || recs[3].Result.(*train.Result).TestAcc != 0.161 {
		t.Errorf("records: %+v", recs[3])
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "[1/4] model.hidden=8 seed=0: ok test_acc=0.08") || !strings.Contains(lines[3], "ETA") {
		t.Errorf("progress:\n%s", progress.String())
	}
	for _, name := range []string{"runs.jsonl", "results.csv", "summary.csv", "summary.md", "provenance.json", "test_acc.svg", "epoch_time_median_s.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	stored, _ := filepath.Glob(filepath.Join(out, "runs", "*.json"))
	if len(stored) != 4 {
		t.Fatalf("%d stored results, want 4", len(stored))
	}
	noTemp(t, out)

	// Everything done: nothing runs; a temporary file that a killed
	// invocation left is removed (the write gate's name, a dead pid); a
	// file of the user's that merely looks temporary stays.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "runs", fmt.Sprintf(".x.json.strata-%d-1.tmp", dead.Process.Pid)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(out, "runs", ".notes.tmp")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	var g fakeTrain
	sum, _, err = Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: g.run})
	if err != nil || sum.Skipped != 4 || sum.Executed != 0 || g.total() != 0 {
		t.Fatalf("rerun: %+v, %d calls, %v", sum, g.total(), err)
	}
	if err := os.Remove(notes); err != nil {
		t.Errorf("the user's %s: %v", notes, err)
	}
	noTemp(t, out)
	// One result deleted: only that run executes.
	p := fakePlan(t)
	if err := os.Remove(filepath.Join(out, "runs", p.Runs[2].ID+".json")); err != nil {
		t.Fatal(err)
	}
	var h fakeTrain
	sum, _, err = Execute(context.Background(), p, Options{OutDir: out, Train: h.run})
	if err != nil || sum.Skipped != 3 || sum.Executed != 1 || h.total() != 1 || h.calls["h16 s0"] != 1 {
		t.Fatalf("resume: %+v, calls %v, %v", sum, h.calls, err)
	}
	// A corrupt result file is run again, not trusted.
	if err := os.WriteFile(filepath.Join(out, "runs", p.Runs[0].ID+".json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	var k fakeTrain
	if sum, _, _ = Execute(context.Background(), p, Options{OutDir: out, Train: k.run}); sum.Executed != 1 || k.calls["h8 s0"] != 1 {
		t.Errorf("corrupt result: %+v, calls %v", sum, k.calls)
	}
}

func TestExecuteFailures(t *testing.T) {
	out := t.TempDir()
	f := fakeTrain{fail: func(cfg *config.Config) error {
		switch {
		case cfg.Model.Hidden == 16 && cfg.Train.Seed == 1:
			return errors.New("out of memory")
		case cfg.Model.Hidden == 8 && cfg.Train.Seed == 1:
			panic("kernel bug")
		}
		return nil
	}}
	sum, recs, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: f.run})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 2 || sum.Executed != 2 || f.total() != 4 {
		t.Fatalf("summary %+v, %d calls", sum, f.total())
	}
	if recs[3].Status != "failed" || recs[3].Error != "out of memory" || !strings.Contains(recs[1].Error, "panic: kernel bug") {
		t.Errorf("records %+v %+v", recs[1], recs[3])
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(md), "1 (1 failed)") || !strings.Contains(string(md), "model.hidden=16 seed=1: out of memory") {
		t.Errorf("summary.md does not report the failures:\n%s", md)
	}
	jl, _ := os.ReadFile(filepath.Join(out, "runs.jsonl"))
	if !strings.Contains(string(jl), `"status":"failed","error":"out of memory"`) {
		t.Errorf("runs.jsonl:\n%s", jl)
	}
	// Failed runs are not stored: the next invocation retries them only.
	var g fakeTrain
	sum, _, err = Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: g.run})
	if err != nil || sum.Executed != 2 || sum.Skipped != 2 || sum.Failed != 0 || g.calls["h16 s1"] != 1 || g.calls["h8 s1"] != 1 {
		t.Errorf("retry: %+v, calls %v, %v", sum, g.calls, err)
	}
}

// TestExecuteParallel: --jobs gives the same results as a sequence, each
// run once, with the cores split between the jobs.
func TestExecuteParallel(t *testing.T) {
	seq, par := t.TempDir(), t.TempDir()
	var f, g fakeTrain
	if _, _, err := Execute(context.Background(), fakePlan(t), Options{OutDir: seq, Train: f.run}); err != nil {
		t.Fatal(err)
	}
	sum, recs, err := Execute(context.Background(), fakePlan(t), Options{OutDir: par, Train: g.run, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Executed != 4 || g.total() != 4 || len(g.calls) != 4 {
		t.Fatalf("summary %+v, calls %v", sum, g.calls)
	}
	if recs[0].Threads < 1 {
		t.Errorf("threads %d: the jobs should split the cores", recs[0].Threads)
	}
	for _, name := range []string{"summary.csv", "summary.md", "test_acc.svg"} {
		a, _ := os.ReadFile(filepath.Join(seq, name))
		b, _ := os.ReadFile(filepath.Join(par, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between --jobs 1 and --jobs 3", name)
		}
	}
	noTemp(t, par)
}

// TestExecuteInterrupted: on cancellation the finished runs are kept and
// the next invocation runs the others.
func TestExecuteInterrupted(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	f := fakeTrain{fail: func(cfg *config.Config) error {
		if n.Add(1) == 2 {
			cancel()
			return ctx.Err()
		}
		return nil
	}}
	sum, _, err := Execute(ctx, fakePlan(t), Options{OutDir: out, Train: f.run})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if sum.Executed != 1 || sum.Failed != 0 {
		t.Errorf("summary %+v", sum)
	}
	var g fakeTrain
	sum, _, err = Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: g.run})
	if err != nil || sum.Skipped != 1 || sum.Executed != 3 || g.total() != 3 {
		t.Errorf("resume: %+v, %d calls, %v", sum, g.total(), err)
	}
	noTemp(t, out)
}

// TestResumeTraining is the resume test with real training: a tiny
// experiment (2 epochs on Cora), one result deleted, only that run again.
func TestResumeTraining(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	e := mustParse(t, exp(`
name = "tiny"
metrics = ["test_acc", "best_valid_acc"]
seeds = [0, 1]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
`))
	p, err := NewPlan(context.Background(), e, "test", check)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	var ran []string
	var mu sync.Mutex
	trainFn := func(ctx context.Context, cfg *config.Config) (*train.Result, error) {
		calls.Add(1)
		mu.Lock()
		ran = append(ran, fmt.Sprintf("%s/%d", cfg.Model.Name, cfg.Train.Seed))
		mu.Unlock()
		return train.Run(ctx, cfg, train.Options{Version: "test", Host: wasm.Host{Options: wasm.Options{CacheDir: testcache.MustWasmDir()}}})
	}
	out := t.TempDir()
	sum, recs, err := Execute(context.Background(), p, Options{OutDir: out, Train: trainFn})
	if err != nil || sum.Executed != 4 || calls.Load() != 4 {
		t.Fatalf("first invocation: %+v, %d calls, %v", sum, calls.Load(), err)
	}
	for _, r := range recs {
		if res, _ := r.Result.(*train.Result); r.Status != "ok" || res.Epochs != 2 || res.TestAcc <= 0 {
			t.Fatalf("record %+v", r)
		}
	}
	before, _ := os.ReadFile(filepath.Join(out, "runs", p.Runs[1].ID+".json"))
	if err := os.Remove(filepath.Join(out, "runs", p.Runs[2].ID+".json")); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	ran = nil
	sum, _, err = Execute(context.Background(), p, Options{OutDir: out, Train: trainFn})
	if err != nil || calls.Load() != 1 || len(ran) != 1 || ran[0] != "sage/0" || sum.Skipped != 3 || sum.Executed != 1 {
		t.Fatalf("resume: %+v, ran %v, %v", sum, ran, err)
	}
	after, _ := os.ReadFile(filepath.Join(out, "runs", p.Runs[1].ID+".json"))
	if !bytes.Equal(before, after) {
		t.Error("a skipped run's stored result was rewritten")
	}
	var rec Record
	b, _ := os.ReadFile(filepath.Join(out, "runs", p.Runs[2].ID+".json"))
	if err := json.Unmarshal(b, &rec); err != nil || rec.RunID != p.Runs[2].ID || rec.Axes["model.name"] != "sage" || rec.Seed != 0 {
		t.Errorf("stored record %+v (%v)", rec, err)
	}
	lines := bytes.Count(mustRead(t, filepath.Join(out, "runs.jsonl")), []byte("\n"))
	if lines != 4 {
		t.Errorf("runs.jsonl has %d lines, want 4", lines)
	}
	noTemp(t, out)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProvenanceRevisions checks that each run records the revision it ran
// at, that the reports list the revisions, and that a resume that runs
// nothing leaves provenance.json and report.html byte for byte as they were.
func TestProvenanceRevisions(t *testing.T) {
	out := t.TempDir()
	var f fakeTrain
	if _, _, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: f.run}); err != nil {
		t.Fatal(err)
	}
	want := sourceRevision(".") // the experiment file lies in the working directory
	stored, _ := filepath.Glob(filepath.Join(out, "runs", "*.json"))
	for _, path := range stored {
		var rec Record
		if err := json.Unmarshal(mustRead(t, path), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Revision != want.Revision || dirtyKey(rec.Dirty) != dirtyKey(want.Dirty) {
			t.Errorf("%s: revision %q dirty %s, want %q %s", path, rec.Revision, dirtyKey(rec.Dirty), want.Revision, dirtyKey(want.Dirty))
		}
	}
	pv := ReadProvenance(filepath.Join(out, "provenance.json"))
	if pv == nil || len(pv.Revisions) != 1 || pv.Revisions[0].Runs != 4 || pv.Revisions[0].Revision != want.Revision {
		t.Fatalf("provenance revisions %+v", pv)
	}
	if pv.Runs[0].Revision != want.Revision {
		t.Errorf("provenance run revision %q", pv.Runs[0].Revision)
	}
	label := revisionLabel(want.Revision, want.Dirty)
	if md := string(mustRead(t, filepath.Join(out, "summary.md"))); !strings.Contains(md, "Revisions the runs ran at: "+label+" (4 runs).") {
		t.Errorf("summary.md does not list the revision %s:\n%s", label, md)
	}
	if html := string(mustRead(t, filepath.Join(out, "report.html"))); !strings.Contains(html, "revisions of the runs") || !strings.Contains(html, want.Revision[:min(12, len(want.Revision))]) || !strings.Contains(html, " (4 runs)") {
		t.Errorf("report.html does not list the revision %s", label)
	}

	// Resume with everything done: the reports do not change.
	before := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, path := range files {
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			before[path] = mustRead(t, path)
		}
	}
	var g fakeTrain
	if sum, _, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: g.run}); err != nil || sum.Executed != 0 {
		t.Fatalf("resume: %+v %v", sum, err)
	}
	for path, b := range before {
		if !bytes.Equal(mustRead(t, path), b) {
			t.Errorf("%s changed although no run executed", filepath.Base(path))
		}
	}
}

// TestBuildRevision: outside a git work tree the revision comes from the
// binary's VCS stamp (none in a test binary), never from git.
func TestBuildRevision(t *testing.T) {
	r := sourceRevision(t.TempDir())
	if r.Source == "git" || r != buildRevision() {
		t.Errorf("outside git: %+v, want the build stamp %+v", r, buildRevision())
	}
}

// TestReportsOnly rewrites the reports from results of other code and
// runs nothing; a run without a stored result is an error naming it.
func TestReportsOnly(t *testing.T) {
	out := t.TempDir()
	var f fakeTrain
	if _, _, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: f.run}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, "summary.md")); err != nil {
		t.Fatal(err)
	}
	made := ReadProvenance(filepath.Join(out, "provenance.json"))
	var g fakeTrain
	other := Options{OutDir: out, Train: g.run, ReportsOnly: true, Binary: "other-code"}
	sum, _, err := Execute(context.Background(), fakePlan(t), other)
	if err != nil || sum.Executed != 0 || g.total() != 0 || sum.Skipped != sum.Runs {
		t.Fatalf("reports only: %+v, %d calls, %v", sum, g.total(), err)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.md")); err != nil {
		t.Errorf("the reports were not rewritten: %v", err)
	}
	if prov := ReadProvenance(filepath.Join(out, "provenance.json")); prov == nil || made == nil || prov.End != made.End || prov.Start != made.Start {
		t.Errorf("provenance.json lost the invocation that made the results: %+v, was %+v", prov, made)
	}
	p := fakePlan(t)
	if err := os.Remove(filepath.Join(out, "runs", p.Runs[1].ID+".json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Execute(context.Background(), p, other); err == nil || !strings.Contains(err.Error(), "1 of 4 runs have no stored result") || g.total() != 0 {
		t.Errorf("a missing result: %v (%d calls), want an error naming it and no run", err, g.total())
	}
}
