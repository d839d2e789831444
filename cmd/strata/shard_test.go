package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExperimentShards: three shards of a sweep, run one after the other
// into one results directory, write only below their own shard directory
// (never the same file), and --merge gives the summary of the unsharded
// run.
func TestExperimentShards(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "sweep.toml")
	if err := os.WriteFile(exp, []byte(`metrics = ["test_acc", "final_loss"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16]
[base.data]
dataset = "embedded:cora"
[base.model]
name = "gcn"
[base.train]
epochs = 2
threads = 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, sharded := filepath.Join(dir, "whole"), filepath.Join(dir, "sharded")
	if code, stdout, stderr := cli(t, append([]string{"experiment", "-c", exp, "--out", whole}, wasmArgs()...)...); code != 0 {
		t.Fatalf("unsharded: exit %d\n%s\n%s", code, stdout, stderr)
	}
	owner := map[string]string{} // file -> the shard that wrote it
	for i, s := range []string{"0/3", "1/3", "2/3"} {
		code, stdout, stderr := cli(t, append([]string{"experiment", "-c", exp, "--out", sharded, "--shard", s}, wasmArgs()...)...)
		if code != 0 {
			t.Fatalf("shard %s: exit %d\n%s\n%s", s, code, stdout, stderr)
		}
		if sum := lastJSON(t, stdout); sum["shard"] != s || sum["runs"] != float64([]int{2, 1, 1}[i]) {
			t.Fatalf("shard %s summary %v", s, sum)
		}
		err := filepath.WalkDir(sharded, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(sharded, path)
			if _, seen := owner[rel]; !seen {
				owner[rel] = s
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for rel, s := range owner {
		want := "shards/" + strings.ReplaceAll(s, "/", "-of-") + "/"
		if !strings.HasPrefix(filepath.ToSlash(rel), want) {
			t.Fatalf("shard %s wrote %s, outside %s", s, rel, want)
		}
	}
	code, stdout, stderr := cli(t, append([]string{"experiment", "-c", exp, "--out", sharded, "--merge"}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if sum := lastJSON(t, stdout); sum["merged"] != 4.0 || sum["executed"] != 0.0 || sum["skipped"] != 4.0 {
		t.Fatalf("merge summary %v", sum)
	}
	a, err := os.ReadFile(filepath.Join(whole, "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(sharded, "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatalf("merged summary.csv differs from the unsharded one:\n%s\n---\n%s", b, a)
	}
}

// TestExperimentShardErrors: bad --shard values and flag combinations exit
// 2 naming the fix; a merge with a shard missing exits 1 naming the run.
func TestExperimentShardErrors(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "sweep.toml")
	if err := os.WriteFile(exp, []byte(`metrics = ["test_acc"]
seeds = [0, 1]
[base.data]
dataset = "embedded:cora"
[base.model]
name = "gcn"
[base.train]
epochs = 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--shard", "3/3"}, nil, "in [0, 3)"},
		{[]string{"--shard", "-1/3"}, nil, "in [0, 3)"},
		{[]string{"--shard", "1/0"}, nil, "at least 1"},
		{[]string{"--shard", "1"}, nil, "not i/N"},
		{[]string{"--shard", "a/b"}, nil, "not i/N"},
		{[]string{"--shard", "slurm"}, nil, "SLURM_ARRAY_TASK_ID"},
		{[]string{"--shard", "slurm"}, map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"}, "--array=0-(N-1)"},
		{[]string{"--shard", "0/2", "--merge"}, nil, "neither --shard nor --fresh"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, stderr := cli(t, append(append([]string{"experiment", "-c", exp, "--out", filepath.Join(dir, "out")}, tc.args...), wasmArgs()...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, stderr, tc.want)
			}
		})
	}
	t.Run("slurm shard", func(t *testing.T) {
		t.Setenv("SLURM_ARRAY_TASK_ID", "2")
		t.Setenv("SLURM_ARRAY_TASK_COUNT", "2")
		t.Setenv("SLURM_ARRAY_TASK_MIN", "1")
		code, stdout, stderr := cli(t, append([]string{"experiment", "-c", exp, "--out", filepath.Join(dir, "out"), "--shard", "slurm", "--dry-run"}, wasmArgs()...)...)
		if code != 0 || lastJSON(t, stdout)["shard"] != "1/2" || !strings.Contains(stdout, "[2/2]") || strings.Contains(stdout, "[1/2]") {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})
	t.Run("merge with a shard missing", func(t *testing.T) {
		out := filepath.Join(dir, "partial")
		if code, stdout, stderr := cli(t, append([]string{"experiment", "-c", exp, "--out", out, "--shard", "0/2"}, wasmArgs()...)...); code != 0 {
			t.Fatalf("shard 0/2: exit %d\n%s\n%s", code, stdout, stderr)
		}
		code, _, stderr := cli(t, append([]string{"experiment", "-c", exp, "--out", out, "--merge"}, wasmArgs()...)...)
		if code != 1 || !strings.Contains(stderr, "1 of 2 runs") || !strings.Contains(stderr, "seed=1") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
}
