package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"strata/core/graph/numpy"
	"strata/core/safefile"
)

// snapshot reads every file of dir (no subdirectories), by name.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		m[e.Name()] = string(slurp(t, filepath.Join(dir, e.Name())))
	}
	return m
}

// sameSnapshot fails when dir's files differ from was.
func sameSnapshot(t *testing.T, dir string, was map[string]string) {
	t.Helper()
	now := snapshot(t, dir)
	if len(now) != len(was) {
		t.Errorf("%s: %d files, was %d", dir, len(now), len(was))
	}
	for name, b := range was {
		if now[name] != b {
			t.Errorf("%s/%s changed", dir, name)
		}
	}
}

// npyDataset writes Cora as a .npy directory whose features are float64,
// as PyG users save them: converting it to npy would make them float32.
func npyDataset(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cora-npy")
	if code, _, stderr := cli(t, "convert", "--to", "npy", "-i", "embedded:cora", "-o", dir); code != 0 {
		t.Fatalf("convert: %s", stderr)
	}
	x := filepath.Join(dir, "x.npy")
	b := slurp(t, x)
	head := numpy.NPYHeader([]int{2708, 1433}, "<f4")
	data := b[len(head):]
	var out bytes.Buffer
	out.Write(numpy.NPYHeader([]int{2708, 1433}, "<f8"))
	for i := 0; i+4 <= len(data); i += 4 {
		binary.Write(&out, binary.LittleEndian, float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))))
	}
	if err := os.WriteFile(x, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestConvertRefusesItsInput: convert --to npy with -o the input's
// directory (or a path naming it another way) must not rewrite the
// input: exit 2, with the fix, and every input file as it was.
func TestConvertRefusesItsInput(t *testing.T) {
	dir := npyDataset(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	was := snapshot(t, dir)
	cases := []struct {
		name string
		args []string
	}{
		{"same directory", []string{"convert", "--to", "npy", "-i", dir, "-o", dir}},
		{"through a link", []string{"convert", "--to", "npy", "-i", dir, "-o", link}},
		{"with a split", []string{"convert", "--to", "npy", "-i", dir + "@random-10-10-seed0", "-o", dir}},
		{"trailing slash", []string{"convert", "--to", "npy", "-i", dir, "-o", dir + "/"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cli(t, c.args...)
			if code != exitUser || !strings.Contains(stderr, "rewrite the input in place") || !strings.Contains(stderr, "give a new output directory") {
				t.Errorf("exit %d, stderr %q; want exit 2 and the fix", code, stderr)
			}
			sameSnapshot(t, dir, was)
		})
	}
	// Another directory is fine, and the input still loads.
	if code, _, stderr := cli(t, "convert", "--to", "npy", "-i", dir, "-o", filepath.Join(t.TempDir(), "out")); code != 0 {
		t.Errorf("convert to another directory: exit %d: %s", code, stderr)
	}
	sameSnapshot(t, dir, was)
}

// TestConvertInterrupted interrupts convert after loading, in its write
// phase: exit 130, and no output (neither a target nor a temporary file)
// is left, for either format; an existing target keeps its content.
func TestConvertInterrupted(t *testing.T) {
	cases := []struct {
		name string
		to   string
		out  func(dir string) string
	}{
		{"strata", "strata", func(dir string) string { return filepath.Join(dir, "cora.strata") }},
		{"npy", "npy", func(dir string) string { return filepath.Join(dir, "npy") }},
		{"ogb", "ogb", func(dir string) string { return filepath.Join(dir, "ogb") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx = context.WithValue(ctx, beforeWriteKey{}, func() { cancel() })
			var out, errb bytes.Buffer
			code := run(ctx, []string{"convert", "--to", c.to, "-i", "embedded:cora", "-o", c.out(dir)}, &out, &errb)
			if code != exitInterrupted {
				t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, errb.String())
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left %v in the output's directory", ents)
			}
		})
	}
}

// TestSignals sends SIGTERM, SIGINT and SIGHUP (a closed terminal or SSH
// session) to a training process after its first epochs: each ends like
// an interrupt, with the result line (status "interrupted"), output.csv
// and output.log committed and no temporary file left, and exit 130.
func TestSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cfg := ckptConf(t, 2000, 1)
			dir := filepath.Dir(cfg)
			var stdout, stderr bytes.Buffer
			cmd := trainProcess(t, cfg, &stdout, &stderr)
			waitForFile(t, cmd, filepath.Join(dir, "ck.bin"))
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
				t.Fatalf("exit %d (%v), want %d; stderr:\n%s", code, cmd.ProcessState, exitInterrupted, stderr.String())
			}
			if r := resultLine(t, stdout.String()); r["status"] != "interrupted" {
				t.Errorf("result %v, want status interrupted", r)
			}
			if rows := readCSV(t, filepath.Join(dir, "epochs.csv")); len(rows) < 2 {
				t.Errorf("epochs.csv has %d rows, want a header and the finished epochs", len(rows))
			}
			slurp(t, filepath.Join(dir, "epochs.jsonl"))
			noTempFiles(t, dir)
		})
	}
}

// noTempFiles fails when a temporary file of an atomic write is left.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestPredictInputs: an input of predict (the config, the dataset, the
// model) that sits in the -o directory under the name of an output is
// refused (exit 2) before anything is written, and left as it was.
func TestPredictInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	cases := []struct {
		name                   string
		config, dataset, model string // file names in the -o directory
	}{
		{"config", "predictions.csv", "", "m.model"},
		{"dataset", "p.toml", "embeddings.csv", "m.model"},
		{"model", "p.toml", "", "logits.npy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			data := cora
			if c.dataset != "" {
				if code, _, stderr := cli(t, "convert", "-i", "embedded:cora", "-o", filepath.Join(out, c.dataset)); code != 0 {
					t.Fatalf("convert: %s", stderr)
				}
				data = "[data]\ndataset = \"" + c.dataset + "\"\n"
			}
			cfg := write(t, out, c.config, data+"[train]\nepochs = 2\n[output]\nmodel = \""+c.model+"\"\nprogress = \"off\"\n")
			if code, _, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...); code != 0 {
				t.Fatalf("train: exit %d: %s", code, stderr)
			}
			was := snapshot(t, out)
			code, _, stderr := cli(t, append([]string{"predict", "-m", filepath.Join(out, c.model), "-c", cfg, "-o", out}, wasmArgs()...)...)
			if code != exitUser || !strings.Contains(stderr, "same file as the input") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming the input", code, stderr)
			}
			sameSnapshot(t, out, was)
		})
	}
}

// TestConvertLocksItsOutput runs convert beside another holder of the
// output's lock (refused, naming it) and after a killed convert (its
// temporary file, of a pid no longer running, is removed).
func TestConvertLocksItsOutput(t *testing.T) {
	dir := npyDataset(t)
	out := filepath.Join(t.TempDir(), "g.strata")
	lock, err := safefile.Acquire(out)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "convert", "--to", "strata", "-i", dir, "-o", out)
	lock.Release()
	if code != exitUser || !strings.Contains(stderr, "in use by process") {
		t.Errorf("beside a holder of the lock: exit %d, stderr %q; want exit 2 naming the holder", code, stderr)
	}
	// A pid above the kernel's limit (2^22) never runs.
	stale := filepath.Join(filepath.Dir(out), ".g.strata.strata-4194305-1.tmp")
	if err := os.WriteFile(stale, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, "convert", "--to", "strata", "-i", dir, "-o", out); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed convert's temporary file is still there: %v", err)
	}
}
