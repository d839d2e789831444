package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"strata/core/graph/graphtest"
)

// TestDiverged checks that a run whose loss becomes non-finite stops with
// exit code 1 and still prints its result line, with the loss as "NaN".
func TestDiverged(t *testing.T) {
	args := append([]string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "train.epochs=3",
		"--set", "data.dataset=embedded:cora", "--set", "train.lr=1e30", "--set", "output.progress=off"}, wasmArgs()...)
	code, stdout, stderr := cli(t, args...)
	if code != exitInternal {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	if !strings.Contains(stderr, "training diverged at epoch") || strings.Contains(stderr, "internal error") {
		t.Errorf("stderr: %s", stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &r); err != nil {
		t.Fatalf("result line does not parse: %v\n%s", err, stdout)
	}
	if r["status"] != "diverged" {
		t.Errorf("status = %v, want diverged", r["status"])
	}
	if l, ok := r["final_loss"].(string); !ok || (l != "NaN" && l != "+Inf" && l != "-Inf") {
		t.Errorf("final_loss = %v, want a non-finite marker", r["final_loss"])
	}
}

// TestBadInputBounds checks that absurd sizes and special files are
// refused with exit code 2 and a message naming the key or file.
func TestBadInputBounds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	huge := tinyOGB(t, map[string]string{"raw/num-node-list.csv": "2147483647\n"})
	large := tinyOGB(t, map[string]string{"raw/node-feat.csv": "1,0\n0,1\n0.5,70000\n0,0\n1e-3,-3\n"})
	cfg := "../../configs/gcn-cora.toml"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"lr inf", []string{"validate", "-c", cfg, "--set", "train.lr=inf"}, "train.lr = inf: must be a finite number"},
		{"weight decay inf", []string{"validate", "-c", cfg, "--set", "train.weight_decay=inf"}, "must be a finite number"},
		{"negative slope nan", []string{"validate", "-c", cfg, "--set", "model.options.negative_slope=nan"}, "model.options.negative_slope = NaN: must be a finite number"},
		{"prefetch 2^32", []string{"validate", "-c", cfg, "--set", "train.prefetch=4294967296"}, "train.prefetch = 4294967296: must be in [1, 1024]"},
		{"prefetch maxint", []string{"validate", "-c", cfg, "--set", "train.prefetch=9223372036854775807"}, "must be in [1, 1024]"},
		{"synth features 1e8", []string{"validate", "-c", cfg, "--set", "data.synth_features=100000000"}, "data.synth_features = 100000000: must be in [0, 65536]"},
		{"feature dtype unknown", []string{"validate", "-c", cfg, "--set", "data.feature_dtype=float8"}, `data.feature_dtype = "float8": allowed values are`},
		{"feature dtype with float64", []string{"validate", "-c", cfg, "--set", "data.feature_dtype=float16", "--set", "train.dtype=float64"}, `data.feature_dtype = "float16" stores features for float32 math`},
		{"float16 overflow", []string{"train", "-c", cfg, "--set", "data.dataset=" + large + "@s", "--set", "data.feature_norm=none", "--set", "data.feature_dtype=float16", "--set", "train.epochs=1"},
			`data.feature_dtype = "float16": feature 1 of node 2 is 70000, beyond the format's largest value`},
		{"feature dtype chunked", []string{"train", "-c", "../../configs/hongtu-cora.toml", "--set", "data.feature_dtype=bfloat16"}, `data.feature_dtype = "bfloat16": train.mode = "chunked" cannot read 16-bit feature rows`},
		{"fifo dataset", []string{"inspect", "-i", fifo}, "is a FIFO, not a regular file"},
		{"fifo config", []string{"validate", "-c", fifo}, "it is a FIFO"},
		{"ogb node count", []string{"inspect", "-i", huge, "--max-memory", "1T"}, "says 2147483647 nodes"},
		{"memory budget", []string{"inspect", "-i", huge, "--max-memory", "1G"}, "more than the memory budget of 1.0 GiB"},
		{"bad max-memory", []string{"inspect", "-i", huge, "--max-memory", "lots"}, "want a byte count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cli(t, append(c.args, wasmArgs()...)...)
			if c.args[0] == "inspect" {
				code, _, stderr = cli(t, c.args...)
			}
			if code != exitUser || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, c.want)
			}
		})
	}
	_ = os.Remove(fifo)
}

// TestOutputSafety checks that outputs never overwrite what they name.
func TestOutputSafety(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cora.strata")
	if code, _, stderr := cli(t, "convert", "-i", "embedded:cora", "-o", bin); code != 0 {
		t.Fatalf("convert: %s", stderr)
	}
	link := filepath.Join(dir, "link.strata")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	train := func(extra ...string) []string {
		return append(append([]string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "train.epochs=1",
			"--set", "data.dataset=" + bin, "--set", "output.progress=off"}, wasmArgs()...), extra...)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"convert to a device", []string{"convert", "-i", "embedded:cora", "-o", "/dev/null"}, "output is a character device"},
		{"convert to a directory", []string{"convert", "-i", "embedded:cora", "-o", dir}, "is a directory"},
		{"convert onto its input", []string{"convert", "-i", bin, "-o", link}, "same file as the input"},
		{"csv onto the dataset", train("--set", "output.csv="+link), "same file as the input"},
		{"csv to a device", train("--set", "output.csv=/dev/null"), "output is a character device"},
		{"experiment --out a file", []string{"experiment", "-c", "../../experiments/cora-hidden.toml", "--out", bin}, "is a file, not a directory"},
		{"cpu profile onto the dataset", train("--cpuprofile", link), "same file as the input"},
		{"heap profile to a device", train("--memprofile", "/dev/null"), "output is a character device"},
		{"cpu profile onto the config", train("--cpuprofile", "../../configs/gcn-cora.toml"), "same file as the input"},
		{"two profiles in one file", train("--cpuprofile", filepath.Join(dir, "p"), "--memprofile", filepath.Join(dir, "p")), "name the same file"},
		{"bad memory limit", train("--memory-limit", "lots"), "want a byte count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cli(t, c.args...)
			if code != exitUser || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "internal error") {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, c.want)
			}
		})
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, "inspect", "-i", bin); code != 0 {
		t.Errorf("the input was damaged: %s", stderr)
	}
}

// TestCSVRelativeToConfig checks that output.csv in a config file is
// relative to the config's directory, and is complete after the run.
func TestCSVRelativeToConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "sub/c.toml", "[data]\ndataset = \"embedded:cora\"\n[train]\nepochs = 2\n[output]\ncsv = \"m.csv\"\nprogress = \"off\"\n")
	code, _, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sub", "m.csv"))
	if err != nil {
		t.Fatalf("output.csv not next to the config: %v", err)
	}
	if n := strings.Count(string(b), "\n"); n != 3 {
		t.Errorf("csv has %d lines, want a header and 2 epochs", n)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "sub"))
	if len(ents) != 2 {
		t.Errorf("left %d files in the config's directory, want the config and the csv", len(ents))
	}
}

// TestInspectVerify checks strata inspect --verify on a good and a
// corrupted binary file.
func TestInspectVerify(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "cora.strata")
	if code, _, stderr := cli(t, "convert", "-i", "embedded:cora", "-o", bin); code != 0 {
		t.Fatalf("convert: %s", stderr)
	}
	if code, _, stderr := cli(t, "inspect", "-i", bin, "--verify"); code != 0 || !strings.Contains(stderr, "verified") {
		t.Fatalf("verify: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01 // a feature's lowest mantissa bit: still finite
	if err := os.WriteFile(bin, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "inspect", "-i", bin, "--verify")
	if code != exitUser || !strings.Contains(stderr, "corrupt file") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the corruption", code, stderr)
	}
}

// TestInterruptDuringLoad cancels a train while it loads its dataset: it
// exits 130 without waiting for the loader, which here waits until the
// test releases it (so no wall-clock bound is needed to tell an
// abandoned load from a finished one).
func TestInterruptDuringLoad(t *testing.T) {
	b := graphtest.Blocking("interrupt-during-load")
	defer b.Release()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-b.Started; cancel() }()
	args := append([]string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "data.dataset=" + b.Spec,
		"--set", "output.progress=off"}, wasmArgs()...)
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want 130: %s", code, errb.String())
	}
	select {
	case <-b.Done:
		t.Error("train returned only after the loader finished")
	default:
	}
}
