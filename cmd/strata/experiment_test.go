package main

import (
	"encoding/json"
	"os"
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
	for _, f := range []string{"summary.md", "summary.csv", "runs.jsonl", "provenance.json", "test_acc.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "results", "one", f)); err != nil {
			t.Error(err)
		}
	}
	code, stdout, _ = cli(t, "experiment", "-wasm-cache", wasmCache(), "-c", path)
	if s := lastJSON(t, stdout); code != 0 || s["executed"] != 0.0 || s["skipped"] != 1.0 {
		t.Errorf("rerun: exit %d, summary %v", code, s)
	}
}
