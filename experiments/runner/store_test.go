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
	"slices"
	"strings"
	"testing"

	"strata/core/config"
	"strata/experiments/runner/numerics"
)

// TestCodeKey: a stored result is reused only under the code key it was
// made with; a result of another binary, other numerics, or one that
// records no key runs again, with a line saying why, and is never mixed
// into the reports with the new ones.
func TestCodeKey(t *testing.T) {
	num := numerics.Numerics{Env: map[string]string{"OPENBLAS_CORETYPE": "Haswell"}, BLASCore: "Haswell"}
	other := numerics.Numerics{BLASCore: "SkylakeX"}
	tests := []struct {
		name     string
		binary   string
		numerics numerics.Numerics
		edit     func(t *testing.T, out string) // on the stored results before the second invocation
		runs     int                            // runs the second invocation executes
		why      string                         // in its progress
	}{
		{"same code", "bin-a", num, nil, 0, ""},
		{"another binary", "bin-b", num, nil, 4, "the strata binary or its libraries changed"},
		{"other numerics", "bin-a", other, nil, 4, "the numerics changed (OPENBLAS_CORETYPE=Haswell, OpenBLAS Haswell → unpinned, OpenBLAS SkylakeX)"},
		{"no code key", "bin-a", num, func(t *testing.T, out string) { editRecords(t, out, func(m map[string]any) { delete(m, "code") }) }, 4, "record no code key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			var f fakeTrain
			if _, _, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: f.run, Binary: "bin-a", Numerics: &num}); err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(t, out)
			}
			var g fakeTrain
			var progress bytes.Buffer
			n := tc.numerics
			sum, recs, err := Execute(context.Background(), fakePlan(t), Options{OutDir: out, Train: g.run, Binary: tc.binary, Numerics: &n, Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			if g.total() != tc.runs || sum.Executed != tc.runs || sum.Stale != tc.runs {
				t.Errorf("executed %d (summary %+v), want %d", g.total(), sum, tc.runs)
			}
			if tc.why != "" && !strings.Contains(progress.String(), tc.why) {
				t.Errorf("progress does not say %q:\n%s", tc.why, progress.String())
			}
			for _, rec := range recs {
				if rec.Binary != tc.binary || rec.Numerics.Key() != n.Key() {
					t.Errorf("a record of binary %q numerics %+v in the result set of %q %+v", rec.Binary, rec.Numerics, tc.binary, n)
				}
			}
			pv := ReadProvenance(filepath.Join(out, "provenance.json"))
			if pv == nil || pv.Binary != tc.binary || pv.Numerics == nil || pv.Numerics.Key() != n.Key() {
				t.Errorf("provenance does not record binary %q and numerics %+v", tc.binary, n)
			}
		})
	}
}

// editRecords rewrites every stored result of out through edit.
func editRecords(t *testing.T, out string, edit func(map[string]any)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "runs", "*.json"))
	for _, path := range files {
		var m map[string]any
		if err := json.Unmarshal(mustRead(t, path), &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExpectedFailures: a declared failure is stored, does not count as
// failed and is not run again; an undeclared one still fails the sweep;
// a declared failure that succeeds is reported.
func TestExpectedFailures(t *testing.T) {
	plan := func(t *testing.T) *Plan {
		p, err := NewPlan(context.Background(), mustParse(t, exp(fakeHead+`
[[expected_failure]]
runs = [{ "model.hidden" = 16, seed = 1 }]
why = "diverges at this width"
`)), "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	failing := func(which ...string) func(cfg *config.Config) error {
		return func(cfg *config.Config) error {
			if slices.Contains(which, fmt.Sprintf("h%d s%d", cfg.Model.Hidden, cfg.Train.Seed)) {
				return errors.New("training diverged at epoch 3")
			}
			return nil
		}
	}
	out := t.TempDir()
	f := fakeTrain{fail: failing("h16 s1")}
	sum, _, err := Execute(context.Background(), plan(t), Options{OutDir: out, Train: f.run, Binary: "b"})
	if err != nil || sum.Failed != 0 || sum.ExpectedFailed != 1 || sum.Executed != 3 {
		t.Fatalf("declared failure: %+v %v", sum, err)
	}
	md := string(mustRead(t, filepath.Join(out, "summary.md")))
	if !strings.Contains(md, "training diverged at epoch 3 (expected: diverges at this width)") {
		t.Errorf("summary.md does not mark the expected failure:\n%s", md)
	}
	// Stored: the next invocation runs nothing.
	var g fakeTrain
	if sum, _, err = Execute(context.Background(), plan(t), Options{OutDir: out, Train: g.run, Binary: "b"}); err != nil || g.total() != 0 || sum.ExpectedFailed != 1 {
		t.Errorf("resume: %+v, %d calls, %v", sum, g.total(), err)
	}
	// An undeclared failure counts; the declared run now succeeds.
	out2 := t.TempDir()
	h := fakeTrain{fail: failing("h8 s0")}
	sum, _, err = Execute(context.Background(), plan(t), Options{OutDir: out2, Train: h.run, Binary: "b"})
	if err != nil || sum.Failed != 1 || sum.ExpectedFailed != 0 || len(sum.Succeeded) != 1 || sum.Succeeded[0] != "model.hidden=16 seed=1" {
		t.Errorf("undeclared failure and a declared one that succeeds: %+v %v", sum, err)
	}
}

// TestSelect: Options.Select runs only the runs it accepts.
func TestSelect(t *testing.T) {
	var f fakeTrain
	sum, recs, err := Execute(context.Background(), fakePlan(t), Options{OutDir: t.TempDir(), Train: f.run, Binary: "b", SkipReports: true,
		Select: func(r *Run) bool { return r.Seed == 1 }})
	if err != nil || sum.Runs != 2 || f.total() != 2 || f.calls["h8 s1"] != 1 || f.calls["h16 s1"] != 1 || recs[0] != nil {
		t.Errorf("selected: %+v, calls %v, %v", sum, f.calls, err)
	}
}

// TestPublishGate: in a git work tree, results are written only from a
// clean tree (the results directories aside) by a binary built at HEAD,
// unless forced.
func TestPublishGate(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return strings.TrimSpace(string(b))
	}
	git("init", "-q")
	file := filepath.Join(repo, "fake.toml")
	if err := os.WriteFile(file, []byte(exp(fakeHead)), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "experiment")
	head := Revision{Revision: git("rev-parse", "HEAD")}
	plan := func() *Plan { return loadPlan(t, file) }
	run := func(stamp Revision, force bool) (*Summary, error) {
		var f fakeTrain
		sum, _, err := Execute(context.Background(), plan(), Options{Train: f.run, Binary: "b", Force: force, Stamp: &stamp})
		return sum, err
	}
	if _, err := run(head, false); err != nil {
		t.Fatalf("clean tree: %v", err)
	}
	pv := ReadProvenance(filepath.Join(repo, "results", "fake", "provenance.json"))
	if pv == nil || pv.GitRevision != head.Revision || pv.GitDirty == nil || *pv.GitDirty {
		t.Fatalf("provenance of a clean tree: %+v", pv)
	}
	// Its own results (untracked now) do not make the tree dirty.
	if _, err := run(head, false); err != nil {
		t.Errorf("resume over its own results: %v", err)
	}
	if err := os.WriteFile(filepath.Join(repo, "notes.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stamp Revision
		force bool
		want  []string // in the error; nil = no error
	}{
		{"untracked file", head, false, []string{"refusing to write results into", "uncommitted: ?? notes.go", "git stash -u", "--force"}},
		{"forced", head, true, nil},
	}
	for _, tc := range tests {
		_, err := run(tc.stamp, tc.force)
		var pe *PublishError
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != nil && !errors.As(err, &pe):
			t.Errorf("%s: err %v, want a PublishError", tc.name, err)
		case tc.want != nil:
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %q lacks %q", tc.name, err, w)
				}
			}
		}
	}
	os.Remove(filepath.Join(repo, "notes.go"))
	for _, stamp := range []Revision{{}, {Revision: "0123456789abcdef"}} {
		if _, err := run(stamp, false); err == nil || !strings.Contains(err.Error(), "make build") {
			t.Errorf("binary stamped %q: err %v, want a refusal naming make build", stamp.Revision, err)
		}
	}
}
