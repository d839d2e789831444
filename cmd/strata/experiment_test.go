package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lastJSON decodes the last line of stdout.
func lastJSON(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last stdout line is not JSON: %v\n%s", err, stdout)
	}
	return m
}

func TestExperimentDryRun(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "sweep.toml")
	bad := filepath.Join(dir, "bad.toml")
	base := `
[base.data]
dataset = "embedded:cora"
[base.model]
name = "gcn"
[base.train]
epochs = 2
`
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(good, `metrics = ["test_acc"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16]
`+base)
	write(bad, `metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, "wide"]
[[axis]]
key = "train.optimizer"
values = ["adam", "lion"]
`+base)

	modes := filepath.Join(dir, "modes.toml")
	write(modes, `metrics = ["test_acc"]
[[axis]]
key = "train.mode"
values = ["fullgraph", "minibatch"]
`+base)

	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  []string
		stderr  []string
		summary map[string]any
	}{
		{"dry run", []string{"-c", good, "--dry-run"}, 0,
			[]string{"[1/4] model.hidden=8 seed=0", "[4/4] model.hidden=16 seed=1", "to run"}, nil,
			map[string]any{"experiment": "sweep", "runs": 4.0, "skipped": 0.0, "failed": 0.0, "dry_run": true, "out": filepath.Join(dir, "results", "sweep")}},
		{"out dir", []string{"-c", good, "--dry-run", "--out", filepath.Join(dir, "elsewhere")}, 0, nil, nil,
			map[string]any{"out": filepath.Join(dir, "elsewhere")}},
		{"shipped cora-hidden", []string{"-c", "../../experiments/cora-hidden.toml", "--dry-run"}, 0,
			[]string{"[8/8] model.hidden=64 model.name=sage seed=1"}, nil, map[string]any{"runs": 8.0}},
		{"shipped betty-microbatch", []string{"-c", "../../experiments/betty-microbatch.toml", "--dry-run"}, 0,
			[]string{"[9/9] train.micro_batches=8 partition.name=betty-reg seed=0"}, nil, map[string]any{"runs": 9.0}},
		{"invalid runs", []string{"-c", bad, "--dry-run"}, 2, nil,
			[]string{"bad.toml:4:", `"wide"`, "[run model.hidden=wide", "bad.toml:7:", "lion", "[run model.hidden=8 train.optimizer=lion"}, nil},
		{"invalid runs, not a dry run", []string{"-c", bad}, 2, nil, []string{"bad.toml:4:"}, nil},
		// The dry run checks every run as train would: a mini-batch run
		// without a sampler fails here, not during the sweep.
		{"mode axis without a sampler", []string{"-c", modes, "--dry-run"}, 2, nil,
			[]string{"train.mode=minibatch", `train.mode = "minibatch" needs a neighbour sampler`}, nil},
		{"missing -c", []string{"--dry-run"}, 2, nil, []string{"-c FILE is required"}, nil},
		{"bad jobs", []string{"-c", good, "--jobs", "0"}, 2, nil, []string{"--jobs must be at least 1"}, nil},
		{"missing file", []string{"-c", filepath.Join(dir, "nope.toml")}, 2, nil, []string{"nope.toml", "cannot read experiment"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"experiment", "-wasm-cache", wasmCache()}, tc.args...)
			code, stdout, stderr := cli(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.summary != nil {
				got := lastJSON(t, stdout)
				for k, v := range tc.summary {
					if got[k] != v {
						t.Errorf("summary %s = %v, want %v (%s)", k, got[k], v, stdout)
					}
				}
			}
		})
	}
	// A dry run writes nothing.
	if _, err := os.Stat(filepath.Join(dir, "results")); !os.IsNotExist(err) {
		t.Errorf("dry run created the results directory (%v)", err)
	}
}

// TestExperimentRun runs a one-run experiment end to end, then again: the
// second invocation skips it.
func TestExperimentRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "one.toml")
	text := `metrics = ["test_acc"]
[base.data]
dataset = "embedded:cora"
[base.model]
name = "gcn"
[base.train]
epochs = 2
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, "experiment", "-wasm-cache", wasmCache(), "-c", path)
	if code != 0 || !strings.Contains(stderr, "[1/1] seed=0: ok test_acc=") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if s := lastJSON(t, stdout); s["executed"] != 1.0 || s["skipped"] != 0.0 {
		t.Errorf("summary %v", s)
	}
	for _, f := range []string{"summary.md", "summary.csv", "runs.jsonl", "provenance.json", "test_acc.svg", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, "results", "one", f)); err != nil {
			t.Error(err)
		}
	}
	code, stdout, _ = cli(t, "experiment", "-wasm-cache", wasmCache(), "-c", path)
	if s := lastJSON(t, stdout); code != 0 || s["executed"] != 0.0 || s["skipped"] != 1.0 {
		t.Errorf("rerun: exit %d, summary %v", code, s)
	}
}

// TestExperimentsShipped: every published experiment validates (a dry run
// checks every generated config, without data).
func TestExperimentsShipped(t *testing.T) {
	files, _ := filepath.Glob("../../experiments/*.toml")
	if len(files) < 8 {
		t.Fatalf("%d experiment files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, stdout, stderr := cli(t, "experiment", "-wasm-cache", wasmCache(), "-c", f, "--dry-run", "--out", t.TempDir())
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if s := lastJSON(t, stdout); s["runs"].(float64) < 2 {
				t.Errorf("summary %v", s)
			}
		})
	}
}

// TestExperimentValidationBeforeRun: a bad axis key, a value outside the
// allowed set, a plot of a metric that does not exist... each stops the
// experiment before anything runs (exit 2, no results directory), with the
// line of the experiment file that causes it.
func TestExperimentValidationBeforeRun(t *testing.T) {
	base := `
[base.data]
dataset = "embedded:cora"
[base.model]
name = "gcn"
[base.train]
epochs = 2
`
	tests := []struct {
		name, text string
		want       []string
	}{
		{"unknown axis key", `metrics = ["test_acc"]
[[axis]]
key = "model.hiden"
values = [8, 16]
`, []string{"bad.toml:3:", "hiden", `did you mean "model.hidden"`, "[every run]"}},
		{"unknown axis section", `metrics = ["test_acc"]
[[axis]]
key = "modle.hidden"
values = [8, 16]
`, []string{"bad.toml:3:", `unknown config section "modle"`}},
		{"enum value", `metrics = ["test_acc"]
[[axis]]
key = "train.optimizer"
values = ["adam", "lion"]
`, []string{"bad.toml:4:", `"lion"`, `"adam", "adamw", "sgd"`, "[run train.optimizer=lion]"}},
		{"unknown plugin", `metrics = ["test_acc"]
[[axis]]
key = "model.name"
values = ["gcn", "gnc"]
`, []string{"bad.toml:4:", "gnc", "[run model.name=gnc]"}},
		{"plot of an unknown metric", `metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[plot]]
x = "model.hidden"
y = "test_accuracy"
`, []string{"bad.toml:7:", `unknown metric "test_accuracy"`, `"test_acc"`}},
		{"plot against a key that is not an axis", `metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[plot]]
x = "train.lr"
y = "test_acc"
`, []string{"bad.toml:6:", `plot x = "train.lr" is not an axis`}},
		{"metric of another kind", `kind = "partition"
metrics = ["test_acc"]
[[axis]]
key = "partition.name"
values = ["range", "metis"]
`, []string{"bad.toml:2:", `unknown metric "test_acc"`, "cut_fraction"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "bad.toml")
			if err := os.WriteFile(path, []byte(tc.text+base), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := cli(t, "experiment", "-wasm-cache", wasmCache(), "-c", path)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "results")); !os.IsNotExist(err) {
				t.Errorf("a run started: the results directory exists (%v)", err)
			}
		})
	}
}

// TestExperimentHelperProcess is not a test: TestExperimentKilled runs the
// test binary again with STRATA_EXPERIMENT_HELPER set, to have a real
// `strata experiment` process to kill.
func TestExperimentHelperProcess(t *testing.T) {
	if os.Getenv("STRATA_EXPERIMENT_HELPER") != "1" {
		t.Skip("helper process for TestExperimentKilled")
	}
	args := strings.Split(os.Getenv("STRATA_EXPERIMENT_ARGS"), "\n")
	os.Exit(run(context.Background(), args, os.Stdout, os.Stderr))
}

// TestExperimentKilled kills a `strata experiment` process (SIGKILL, no
// chance to clean up) after some of its runs finished, then runs the same
// command again: only the missing runs execute, and the stored ones are
// left as they were.
func TestExperimentKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "kill.toml")
	text := `metrics = ["test_acc"]
seeds = [0, 1, 2]
[[axis]]
key = "model.hidden"
values = [8, 16]
[base.data]
dataset = "embedded:cora"
[base.model]
name = "gcn"
[base.train]
epochs = 40
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"experiment", "-wasm-cache", wasmCache(), "-c", path}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExperimentHelperProcess$")
	cmd.Env = append(os.Environ(), "STRATA_EXPERIMENT_HELPER=1", "STRATA_EXPERIMENT_ARGS="+strings.Join(args, "\n"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it when its second run is reported done.
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), "[2/6]") {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], "[2/6]") {
		t.Fatalf("the process ended before its second run:\n%s", strings.Join(seen, "\n"))
	}
	runs := filepath.Join(dir, "results", "kill", "runs")
	stored := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(runs, "*.json"))
	for _, f := range files {
		stored[filepath.Base(f)] = mustReadFile(t, f)
	}
	if len(stored) < 2 || len(stored) >= 6 {
		t.Fatalf("%d runs stored when killed, want 2 to 5", len(stored))
	}

	code, stdout, errText := cli(t, args...)
	if code != 0 {
		t.Fatalf("rerun: exit %d\n%s\n%s", code, stdout, errText)
	}
	s := lastJSON(t, stdout)
	if s["skipped"] != float64(len(stored)) || s["executed"] != float64(6-len(stored)) || s["failed"] != 0.0 {
		t.Errorf("rerun after the kill with %d stored: %v", len(stored), s)
	}
	if !strings.Contains(errText, fmt.Sprintf("%d of 6 runs already done", len(stored))) {
		t.Errorf("rerun does not say what it skips:\n%s", errText)
	}
	// The runs that were stored were not run again; the others were.
	for name, b := range stored {
		if got := mustReadFile(t, filepath.Join(runs, name)); !bytes.Equal(got, b) {
			t.Errorf("%s was rewritten", name)
		}
	}
	files, _ = filepath.Glob(filepath.Join(runs, "*.json"))
	tmps, _ := filepath.Glob(filepath.Join(runs, ".*"))
	if len(files) != 6 || len(tmps) != 0 {
		t.Errorf("%d stored runs and %d temporary files after the rerun", len(files), len(tmps))
	}
	if _, err := os.Stat(filepath.Join(dir, "results", "kill", "report.html")); err != nil {
		t.Error(err)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
