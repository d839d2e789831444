package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"strata/experiments/runner/index"
)

// TestExperimentCheck: strata experiment --check on a small Cora
// experiment: 0 when every checked column matches, 1 with a line naming
// the run and the column when one was changed by hand, 2 on bad input
// (no results, results of another experiment, numerics that differ).
func TestExperimentCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "two.toml")
	text := `metrics = ["test_acc"]
seeds = [0]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[check]
runs = [{ "model.name" = "gcn" }]
why = "the cheaper model"
[base.data]
dataset = "embedded:cora"
[base.model]
hidden = 8
[base.train]
epochs = 2
`
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results", "two")
	if code, stdout, stderr := cli(t, "experiment", "-wasm-cache", wasmCache(), "-c", file); code != 0 {
		t.Fatalf("producing the results: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sageResult := func() string {
		var prov struct {
			Runs []struct {
				RunID string         `json:"run_id"`
				Axes  map[string]any `json:"axes"`
			} `json:"runs"`
		}
		b, _ := os.ReadFile(filepath.Join(results, "provenance.json"))
		if err := json.Unmarshal(b, &prov); err != nil {
			t.Fatal(err)
		}
		for _, r := range prov.Runs {
			if r.Axes["model.name"] == "sage" {
				return filepath.Join(results, "runs", r.RunID+".json")
			}
		}
		t.Fatal("no sage run")
		return ""
	}()
	original, _ := os.ReadFile(sageResult)
	other := filepath.Join(dir, "other.toml")
	if err := os.WriteFile(other, []byte(strings.Replace(text, "hidden = 8", "hidden = 16", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	provPath := filepath.Join(results, "provenance.json")
	provText, _ := os.ReadFile(provPath)
	tests := []struct {
		name   string
		setup  func(t *testing.T)
		args   []string
		code   int
		stderr []string
		ok     any // the JSON line's "ok" (nil: no JSON line)
	}{
		{"matches", nil, []string{"-c", file, "--check"}, 0, []string{"every checked column matches"}, true},
		{"subset", nil, []string{"-c", file, "--check", "--subset"}, 0, []string{"the [check] subset, 1 runs"}, true},
		{"changed by hand", func(t *testing.T) {
			writeFile(t, sageResult, strings.Replace(string(original), `"test_acc": `, `"test_acc": 0.5, "x": `, 1))
		}, []string{"-c", file, "--check"}, 1, []string{"DIFF [2/2] model.name=sage seed=0: test_acc: committed 0.5, now 0.", "differ from the committed results"}, false},
		{"changed outside the subset", nil, []string{"-c", file, "--check", "--subset"}, 0, nil, true},
		{"no committed results", nil, []string{"-c", file, "--check", "--out", filepath.Join(dir, "none")}, 2,
			[]string{"two.toml has no committed results", "strata experiment -c"}, nil},
		{"results of another experiment file", nil, []string{"-c", other, "--check", "--out", results}, 2,
			[]string{`holds the results of experiment "two" (file`, "other.toml"}, nil},
		{"numerics differ", func(t *testing.T) {
			writeFile(t, sageResult, string(original))
			var m map[string]any
			if err := json.Unmarshal(provText, &m); err != nil {
				t.Fatal(err)
			}
			m["numerics"] = map[string]any{"pinned": true, "env": map[string]any{"OPENBLAS_CORETYPE": "Sandybridge"}, "blas_core": "Sandybridge"}
			b, _ := json.Marshal(m)
			writeFile(t, provPath, string(b))
		}, []string{"-c", file, "--check"}, 2, []string{`OPENBLAS_CORETYPE: "Sandybridge" in the committed results, ` + coretypeHere() + " here", "OPENBLAS_CORETYPE=Sandybridge strata experiment", "--native-numerics"}, nil},
		{"numerics differ, compared anyway", nil, []string{"-c", file, "--check", "--native-numerics"}, 0,
			[]string{"warning: --native-numerics", "every checked column matches"}, true},
		{"subset without check", nil, []string{"-c", file, "--subset"}, 2, []string{"--subset selects the runs of --check"}, nil},
		{"check with fresh", nil, []string{"-c", file, "--check", "--fresh"}, 2, []string{"--check reruns into a temporary directory"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			code, stdout, stderr := cli(t, append([]string{"experiment", "-wasm-cache", wasmCache()}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.ok != nil {
				if s := lastJSON(t, stdout); s["ok"] != tc.ok || s["experiment"] != "two" {
					t.Errorf("JSON line %v", s)
				}
			}
		})
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExperimentIndex: --index rewrites the table between the markers of
// a README from the experiment files beside it, and leaves the prose.
func TestExperimentIndex(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "one.toml"), `mirrors = "a sanity check"
metrics = ["test_acc"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16]
[check]
runs = [{ "model.hidden" = 8, seed = 0 }]
why = "cheap"
[base.data]
dataset = "embedded:cora"
[base.train]
epochs = 2
`)
	readme := filepath.Join(dir, "README.md")
	writeFile(t, readme, "# Experiments\n\nprose before\n\n"+index.Begin+"\nold table\n"+index.End+"\n\nprose after\n")
	code, stdout, stderr := cli(t, "experiment", "--index", readme)
	if code != 0 || !strings.Contains(stdout, "index updated") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, _ := os.ReadFile(readme)
	got := string(b)
	for _, w := range []string{"prose before", "prose after", "| [one](one.toml) | a sanity check | model.hidden: 8, 16 × seeds 0, 1 | train | 4 | 1 | no results |"} {
		if !strings.Contains(got, w) {
			t.Errorf("README lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "old table") {
		t.Errorf("the old table is still there:\n%s", got)
	}
	if code, stdout, _ := cli(t, "experiment", "--index", readme); code != 0 || !strings.Contains(stdout, "index unchanged") {
		t.Errorf("second --index: exit %d, %s", code, stdout)
	}
	writeFile(t, readme, "# no markers\n")
	if code, _, stderr := cli(t, "experiment", "--index", readme); code != 2 || !strings.Contains(stderr, "README.md: the generated index needs its two marker lines") {
		t.Errorf("README without markers: exit %d, %s", code, stderr)
	}
}

// coretypeHere is how the check names this process's OPENBLAS_CORETYPE:
// "unset", or its value quoted (some machines set it for every process).
func coretypeHere() string {
	if v, ok := os.LookupEnv("OPENBLAS_CORETYPE"); ok {
		return strconv.Quote(v)
	}
	return "unset"
}
