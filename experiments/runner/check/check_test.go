package check

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"strata/core/config"
	"strata/core/train"
	"strata/experiments/runner"
	"strata/experiments/runner/numerics"
	"strata/internal/testcache"
	_ "strata/plugins/all" // every built-in plugin
	"strata/plugins/wasm"
)

// tiny is a small experiment on the embedded Cora: GCN and GraphSAGE,
// 2 epochs, seed 0, GCN as its [check] subset.
const tiny = `name = "tiny"
metrics = ["test_acc", "final_loss"]
seeds = [0]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[check]
runs = [{ "model.name" = "gcn" }]
why = "the cheaper model"
[base.data]
dataset = "embedded:cora"
symmetrize = true
[base.model]
hidden = 8
[base.train]
epochs = 2
`

// trainCount trains for real and counts the runs.
type trainCount struct{ n atomic.Int32 }

func (c *trainCount) train(ctx context.Context, cfg *config.Config) (*train.Result, error) {
	c.n.Add(1)
	return train.Run(ctx, cfg, train.Options{Version: "test", Host: wasm.Host{Options: wasm.Options{CacheDir: testcache.MustWasmDir()}}})
}

// planOf loads and expands an experiment file.
func planOf(t *testing.T, file string) *runner.Plan {
	t.Helper()
	e, err := runner.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.NewPlan(context.Background(), e, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// committedTiny writes the tiny experiment into a new directory and
// produces its results (results/tiny beside it), once per test binary.
func committedTiny(t *testing.T) (file, results string) {
	t.Helper()
	dir := t.TempDir()
	file = filepath.Join(dir, "tiny.toml")
	if err := os.WriteFile(file, []byte(tiny), 0o644); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, file)
	var c trainCount
	if _, _, err := runner.Execute(context.Background(), p, runner.Options{Train: c.train, Binary: "b"}); err != nil {
		t.Fatal(err)
	}
	return file, runner.DefaultOutDir(p.Exp)
}

// editResult rewrites the stored result of the run with the axis value
// model.name = model.
func editResult(t *testing.T, results, model string, edit func(result map[string]any)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(results, "runs", "*.json"))
	for _, path := range files {
		b, _ := os.ReadFile(path)
		var rec map[string]any
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		if rec["axes"].(map[string]any)["model.name"] != model {
			continue
		}
		edit(rec["result"].(map[string]any))
		b, _ = json.MarshalIndent(rec, "", "  ")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no stored result of model.name=%s", model)
}

// TestCheck reruns the tiny experiment against committed results, some
// changed by hand: a changed checked column is a difference naming the
// run and the column; a changed timing is not.
func TestCheck(t *testing.T) {
	file, results := committedTiny(t)
	tests := []struct {
		name   string
		edit   func(t *testing.T, results string)
		subset bool
		runs   int32    // runs trained
		diffs  []string // "label: column: committed" of each difference
	}{
		{"unchanged", nil, false, 2, nil},
		{"test_acc changed", func(t *testing.T, r string) {
			editResult(t, r, "sage", func(m map[string]any) { m["test_acc"] = 0.123 })
		}, false, 2, []string{"model.name=sage seed=0: test_acc: 0.123"}},
		{"timing changed", func(t *testing.T, r string) {
			editResult(t, r, "gcn", func(m map[string]any) { m["epoch_time_median_s"] = 99.0; m["peak_rss_bytes"] = 1 })
		}, false, 2, nil},
		{"column removed", func(t *testing.T, r string) {
			editResult(t, r, "gcn", func(m map[string]any) { delete(m, "final_loss") })
		}, false, 2, []string{"model.name=gcn seed=0: final_loss: absent"}},
		{"subset leaves the other runs", func(t *testing.T, r string) {
			editResult(t, r, "sage", func(m map[string]any) { m["test_acc"] = 0.123 })
		}, true, 1, nil},
		{"subset compares its runs", func(t *testing.T, r string) {
			editResult(t, r, "gcn", func(m map[string]any) { m["params"] = 7.0 })
		}, true, 1, []string{"model.name=gcn seed=0: params: 7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			committed := copyDir(t, results)
			if tc.edit != nil {
				tc.edit(t, committed)
			}
			p := planOf(t, file)
			c, err := Load(p, committed)
			if err != nil {
				t.Fatal(err)
			}
			var tr trainCount
			rep, err := Run(context.Background(), p, c, Options{Subset: tc.subset, Train: tr.train, Binary: "b", TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if tr.n.Load() != tc.runs || rep.Runs != int(tc.runs) {
				t.Errorf("trained %d runs (report %d), want %d", tr.n.Load(), rep.Runs, tc.runs)
			}
			var got []string
			for _, d := range rep.Differences {
				got = append(got, d.Label+": "+d.Column+": "+d.Committed)
			}
			if strings.Join(got, "\n") != strings.Join(tc.diffs, "\n") {
				t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.diffs, "\n"))
			}
			if rep.OK != (len(tc.diffs) == 0) || rep.NotChecked == 0 || rep.Compared == 0 {
				t.Errorf("report %+v", rep)
			}
			if rep.OK == (rep.Rerun != "") {
				t.Errorf("rerun directory %q kept with ok=%v", rep.Rerun, rep.OK)
			}
			var line map[string]any
			if err := json.Unmarshal([]byte(rep.Line()), &line); err != nil || line["ok"] != rep.OK || line["differences"] != float64(len(tc.diffs)) {
				t.Errorf("JSON line %s (%v)", rep.Line(), err)
			}
		})
	}
	// The committed results were never written.
	if err := filepath.WalkDir(results, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp") {
			t.Errorf("a temporary file in the committed results: %s", path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestLoadBadInput: no committed results, results of another experiment
// file, or a file that now defines other runs are input errors naming the
// file and the fix.
func TestLoadBadInput(t *testing.T) {
	file, results := committedTiny(t)
	tests := []struct {
		name    string
		results func(t *testing.T) string
		text    string // the experiment file now ("" = as committed)
		want    []string
		warn    string
	}{
		{"no results", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, "",
			[]string{"tiny.toml has no committed results", filepath.Join("none", "provenance.json"), "strata experiment -c"}, ""},
		{"another experiment", func(t *testing.T) string {
			return editProvenance(t, copyDir(t, results), func(m map[string]any) { m["experiment"] = "other"; m["file"] = "other.toml" })
		}, "", []string{`holds the results of experiment "other" (file other.toml)`, "--out"}, ""},
		{"damaged provenance", func(t *testing.T) string {
			d := copyDir(t, results)
			if err := os.WriteFile(filepath.Join(d, "provenance.json"), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, "", []string{"not a provenance.json", "regenerate"}, ""},
		{"other runs", func(t *testing.T) string { return copyDir(t, results) },
			strings.Replace(tiny, `["gcn", "sage"]`, `["gcn", "sage", "gin"]`, 1),
			[]string{"defines other runs than its committed results", "1 of its 3 runs have no committed result (the first: model.name=gin seed=0)", "make experiments EXP="}, ""},
		{"file changed, runs did not", func(t *testing.T) string { return copyDir(t, results) },
			"# a comment\n" + tiny, nil, "changed since its results were made"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := file
			if tc.text != "" {
				f = filepath.Join(t.TempDir(), "tiny.toml")
				if err := os.WriteFile(f, []byte(tc.text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Load(planOf(t, f), tc.results(t))
			var ie *InputError
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], tc.warn) {
					t.Errorf("warnings %q, want %q", c.Warnings, tc.warn)
				}
				return
			}
			if !errors.As(err, &ie) {
				t.Fatalf("err %v, want an InputError", err)
			}
			for _, w := range append(tc.want, "tiny.toml") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCheckFailures: a committed expected failure that fails again
// matches; one that now succeeds, or a committed success that now fails,
// is a difference in status.
func TestCheckFailures(t *testing.T) {
	text := strings.Replace(tiny, "[check]", `[[expected_failure]]
runs = [{ "model.name" = "sage" }]
why = "diverges"
[check]`, 1)
	file := filepath.Join(t.TempDir(), "tiny.toml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := func(failing string) runner.RunFunc {
		return func(ctx context.Context, cfg *config.Config) (any, error) {
			if cfg.Model.Name == failing {
				return nil, errors.New("training diverged at epoch 2")
			}
			return map[string]any{"test_acc": 0.5}, nil
		}
	}
	p := planOf(t, file)
	if _, _, err := runner.Execute(context.Background(), p, runner.Options{Run: fake("sage"), Binary: "b"}); err != nil {
		t.Fatal(err)
	}
	results := runner.DefaultOutDir(p.Exp)
	tests := []struct {
		name    string
		failing string
		diffs   []string
	}{
		{"fails again", "sage", nil},
		{"now succeeds", "", []string{"model.name=sage seed=0: status: failed (training diverged at epoch 2) → ok"}},
		{"another fails", "gcn", []string{"model.name=gcn seed=0: status: ok → failed (training diverged at epoch 2)", "model.name=sage seed=0: status: failed (training diverged at epoch 2) → ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(p, results)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), p, c, Options{Run: fake(tc.failing), Binary: "b", TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range rep.Differences {
				got = append(got, d.Label+": "+d.Column+": "+d.Committed+" → "+d.Now)
			}
			if strings.Join(got, "\n") != strings.Join(tc.diffs, "\n") {
				t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.diffs, "\n"))
			}
		})
	}
}

// TestNumerics: results made before numerics were recorded check with
// the pinned ones, and say so.
func TestNumerics(t *testing.T) {
	file, results := committedTiny(t)
	d := editProvenance(t, copyDir(t, results), func(m map[string]any) { delete(m, "numerics") })
	c, err := Load(planOf(t, file), d)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Numerics(); n.EnvString() != numerics.Pinned().EnvString() || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "record no numerics") {
		t.Errorf("numerics %+v, warnings %q", n, c.Warnings)
	}
	c, err = Load(planOf(t, file), results)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Numerics(); n.BLASCore != numerics.Current(false).BLASCore || len(c.Warnings) != 0 {
		t.Errorf("recorded numerics %+v, warnings %q", n, c.Warnings)
	}
}

// editProvenance rewrites dir/provenance.json through edit.
func editProvenance(t *testing.T, dir string, edit func(map[string]any)) string {
	t.Helper()
	path := filepath.Join(dir, "provenance.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyDir copies a results directory into a new temporary one.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}
