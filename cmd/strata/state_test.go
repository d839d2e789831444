package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"strata/core/safefile"
)

// cliWithin is cli with a deadline: a command that blocks (on a FIFO)
// fails the test instead of hanging it.
func cliWithin(t *testing.T, d time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		c := run(context.Background(), args, &out, &errb)
		done <- result{c, out.String(), errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.errOut
	case <-time.After(d):
		t.Fatalf("%q still runs after %s (blocked)", args, d)
		return 0, "", ""
	}
}

// rewriteState edits the meta and the arrays (in place, same lengths) of a
// checkpoint or model file and writes it back with a valid checksum, as
// a hand-edited or forged file would be.
func rewriteState(t *testing.T, path string, edit func(meta map[string]any, arrays map[string][]float64)) {
	t.Helper()
	b := slurp(t, path)
	hlen := int(binary.LittleEndian.Uint32(b[12:]))
	var h struct {
		Kind   string         `json:"kind"`
		Meta   map[string]any `json:"meta"`
		Arrays []struct {
			Name string `json:"name"`
			Len  int64  `json:"len"`
		} `json:"arrays"`
	}
	dec := json.NewDecoder(bytes.NewReader(b[16 : 16+hlen]))
	dec.UseNumber()
	if err := dec.Decode(&h); err != nil {
		t.Fatal(err)
	}
	arrays := map[string][]float64{}
	off := 16 + hlen
	for _, a := range h.Arrays {
		v := make([]float64, a.Len)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[off:]))
			off += 8
		}
		arrays[a.Name] = v
	}
	edit(h.Meta, arrays)
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	out := append(binary.LittleEndian.AppendUint32(append([]byte{}, b[:12]...), uint32(len(hb))), hb...)
	for _, a := range h.Arrays {
		for _, x := range arrays[a.Name] {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
		}
	}
	sum := sha256.Sum256(out)
	if err := os.WriteFile(path, append(out, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstParam sets the first value of the first parameter array to v.
func firstParam(arrays map[string][]float64, v float64) {
	for name, a := range arrays {
		if strings.HasPrefix(name, "param/") && len(a) > 0 {
			a[0] = v
			return
		}
	}
}

// TestStateSpecialFiles: a FIFO as output.checkpoint (--resume) or as the
// model of `strata predict -m` is refused at once with exit 2, naming the
// key or flag, instead of blocking in open(2).
func TestStateSpecialFiles(t *testing.T) {
	cfg := ckptConf(t, 2, 1)
	dir := filepath.Dir(cfg)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	train := func(extra ...string) []string {
		return append(append([]string{"train", "-c", cfg, "--resume", "--set", "output.checkpoint=" + fifo}, wasmArgs()...), extra...)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"resume from a FIFO, written", train(), []string{"output.checkpoint:", "a FIFO"}},
		{"resume from a FIFO, read only", train("--set", "train.checkpoint_every=0"), []string{"--resume: output.checkpoint:", "is a FIFO, not a regular file"}},
		{"predict with a FIFO", append([]string{"predict", "-m", fifo, "-c", cfg, "-o", filepath.Join(dir, "pred")}, wasmArgs()...), []string{"-m " + fifo, "is a FIFO, not a regular file"}},
		{"predict with a directory", append([]string{"predict", "-m", dir, "-c", cfg, "-o", filepath.Join(dir, "pred")}, wasmArgs()...), []string{"-m " + dir, "is a directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cliWithin(t, 30*time.Second, c.args...)
			if code != exitUser {
				t.Errorf("exit %d, want %d: %s", code, exitUser, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
		})
	}
}

// TestOutputsBeforeTraining: a bad output.model or output.checkpoint (a
// directory, the same file as another output, locked by another run) is
// refused before the first epoch (exit 2, nothing written), not when it is
// first written; output.model holds its lock while the run trains.
func TestOutputsBeforeTraining(t *testing.T) {
	cases := []struct {
		name string
		set  []string
		lock string // an output locked by another holder
		want []string
	}{
		{"model is a directory", []string{"output.model=."}, "", []string{"output.model:", "is a directory"}},
		{"checkpoint is a directory", []string{"output.checkpoint=."}, "", []string{"output.checkpoint:", "is a directory"}},
		{"model is the checkpoint", []string{"output.model=ck.bin"}, "", []string{"output.checkpoint and output.model are the same file"}},
		{"log is the csv", []string{"output.log=epochs.csv"}, "", []string{"output.csv and output.log are the same file"}},
		{"model is locked", nil, "m.model", []string{"output.model:", "in use by process"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ckptConf(t, 400, 100)
			dir := filepath.Dir(cfg)
			if c.lock != "" {
				lock, err := safefile.Acquire(filepath.Join(dir, c.lock))
				if err != nil {
					t.Fatal(err)
				}
				defer lock.Release()
			}
			args := []string{"train", "-c", cfg}
			for _, s := range c.set {
				k, v, _ := strings.Cut(s, "=")
				args = append(args, "--set", k+"="+filepath.Join(dir, v)) // "." is the directory
			}
			code, stdout, stderr := cli(t, append(args, wasmArgs()...)...)
			if code != exitUser || stdout != "" {
				t.Errorf("exit %d, stdout %q; want exit 2 and no result: %s", code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if strings.Contains(stderr, "after epoch") {
				t.Errorf("refused only after training: %s", stderr)
			}
			for _, f := range []string{"epochs.csv", "epochs.jsonl"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s was written by a refused run", f)
				}
			}
		})
	}
}

// TestStateWriteFailure: a checkpoint or model that cannot be written
// (its path replaced by a directory while the run trains) ends the run
// with exit 1 and a result line of status "failed", and output.csv and
// output.log hold every finished epoch.
func TestStateWriteFailure(t *testing.T) {
	for _, c := range []struct {
		name, file, key string
		at, epochs      int // the epoch after which file becomes a directory; the epochs run
	}{
		{"checkpoint", "ck.bin", "output.checkpoint", 0, 2},
		{"model", "m.model", "output.model", 3, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ckptConf(t, 4, 1)
			dir := filepath.Dir(cfg)
			ctx := context.WithValue(context.Background(), afterEpochKey{}, func(ep int) {
				if ep == c.at {
					os.Remove(filepath.Join(dir, c.file))
					if err := os.Mkdir(filepath.Join(dir, c.file), 0o755); err != nil {
						t.Error(err)
					}
				}
			})
			var out, errb bytes.Buffer
			code := run(ctx, append([]string{"train", "-c", cfg}, wasmArgs()...), &out, &errb)
			if code != exitInternal || !strings.Contains(errb.String(), c.key+":") || strings.Contains(errb.String(), "internal error") {
				t.Errorf("exit %d, want 1 naming %s: %s", code, c.key, errb.String())
			}
			if !strings.HasPrefix(strings.TrimSpace(out.String()), "{") {
				t.Fatalf("no result line: %q", out.String())
			}
			res := resultLine(t, out.String())
			if res["status"] != "failed" || res["epochs"] != float64(c.epochs) {
				t.Errorf("result: status %v, epochs %v; want failed after %d epochs", res["status"], res["epochs"], c.epochs)
			}
			if rows := readCSV(t, filepath.Join(dir, "epochs.csv")); len(rows) != 1+c.epochs {
				t.Errorf("epochs.csv has %d rows, want a header and %d epochs", len(rows), c.epochs)
			}
			if n := bytes.Count(slurp(t, filepath.Join(dir, "epochs.jsonl")), []byte("\n")); n != c.epochs {
				t.Errorf("epochs.jsonl has %d lines, want %d", n, c.epochs)
			}
		})
	}
}

// TestImpossibleState: a checkpoint or model whose checksum is valid but
// whose contents are impossible (an edited or forged file) is refused
// with exit 2, naming the file and the field.
func TestImpossibleState(t *testing.T) {
	cfg := ckptConf(t, 4, 2)
	dir := filepath.Dir(cfg)
	if code, _, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ck, model := filepath.Join(dir, "ck.bin"), filepath.Join(dir, "m.model")
	goodCk, goodModel := slurp(t, ck), slurp(t, model)
	type edit = func(meta map[string]any, arrays map[string][]float64)
	cases := []struct {
		name string
		file string
		edit edit
		want string
	}{
		{"negative next epoch", ck, func(m map[string]any, _ map[string][]float64) { m["next_epoch"] = -5 }, "next_epoch = -5 is outside [1, 4]"},
		{"next epoch 1e15", ck, func(m map[string]any, _ map[string][]float64) { m["next_epoch"] = 1000000000000000 }, "next_epoch = 1000000000000000"},
		{"accuracy 5", ck, func(m map[string]any, _ map[string][]float64) { m["best_valid_acc"] = 5.0 }, "best_valid_acc = 5 is not an accuracy"},
		{"NaN parameter", ck, func(_ map[string]any, a map[string][]float64) { firstParam(a, math.NaN()) }, "= NaN is not finite"},
		{"model accuracy 5", model, func(m map[string]any, _ map[string][]float64) { m["best_valid_acc"] = 5.0 }, "best_valid_acc = 5 is not an accuracy"},
		{"model NaN parameter", model, func(_ map[string]any, a map[string][]float64) { firstParam(a, math.NaN()) }, "= NaN is not finite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer os.WriteFile(ck, goodCk, 0o644)
			defer os.WriteFile(model, goodModel, 0o644)
			rewriteState(t, c.file, c.edit)
			args := []string{"train", "-c", cfg, "--resume"}
			if c.file == model {
				args = []string{"predict", "-m", model, "-c", cfg, "-o", filepath.Join(dir, "pred")}
			}
			code, stdout, stderr := cli(t, append(args, wasmArgs()...)...)
			if code != exitUser || !strings.Contains(stderr, c.file+": not a valid strata") || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d: %s; want exit 2 naming %s and %q", code, stderr, c.file, c.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
}

// TestResumeChangedDataset: --resume refuses a checkpoint written on
// another dataset at the same path (here: valid and test splits swapped),
// naming both; a checkpoint of state version 1 (no dataset identity)
// resumes with a warning.
func TestResumeChangedDataset(t *testing.T) {
	ds := tinyOGB(t, nil)
	dir := t.TempDir()
	cfg := write(t, dir, "c.toml", "[data]\ndataset = \""+ds+"@s\"\n[model]\nname = \"gcn\"\n[train]\nepochs = 4\ncheckpoint_every = 2\n[output]\ncheckpoint = \"ck.bin\"\nprogress = \"off\"\n")
	args := append([]string{"train", "-c", cfg}, wasmArgs()...)
	if code, _, stderr := cli(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ck := filepath.Join(dir, "ck.bin")
	good := slurp(t, ck)
	if code, _, stderr := cli(t, append(args, "--resume")...); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("resume on the same data: exit %d: %s", code, stderr)
	}
	write(t, ds, "split/s/valid.csv", "3\n")
	write(t, ds, "split/s/test.csv", "2\n")
	code, _, stderr := cli(t, append(args, "--resume")...)
	if code != exitUser || !strings.Contains(stderr, "the data changed") || strings.Count(stderr, "labels and splits sha256") != 2 {
		t.Errorf("resume on another split: exit %d: %s", code, stderr)
	}
	if err := os.WriteFile(ck, good, 0o644); err != nil {
		t.Fatal(err)
	}
	rewriteState(t, ck, func(m map[string]any, _ map[string][]float64) {
		delete(m, "dataset")
		delete(m, "state_version")
	})
	code, _, stderr = cli(t, append(args, "--resume")...)
	if code != 0 || strings.Count(stderr, "cannot be verified") != 1 {
		t.Errorf("resume from a version 1 checkpoint: exit %d: %s", code, stderr)
	}
}
