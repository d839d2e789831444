package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// timingKeys are the result fields a resumed run may report differently.
var timingKeys = map[string]bool{"epoch_time_median_s": true, "eval_time_median_s": true, "load_time_s": true, "peak_rss_bytes": true, "load_peak_rss_bytes": true, "train_peak_rss_bytes": true}

// ckptConf writes a GCN-on-Cora config that checkpoints every `every`
// epochs to ck.bin, saves its model to m.model and its epochs to
// epochs.csv and epochs.jsonl, in a fresh directory.
// The extra lines go into [train].
func ckptConf(t *testing.T, epochs, every int, extra ...string) string {
	t.Helper()
	text := cora + "[model]\nname = \"gcn\"\n[train]\nepochs = " + strconv.Itoa(epochs) + "\ncheckpoint_every = " + strconv.Itoa(every) +
		"\nseed = 3\n" + strings.Join(extra, "\n") + "\n[output]\ncheckpoint = \"ck.bin\"\nmodel = \"m.model\"\ncsv = \"epochs.csv\"\nlog = \"epochs.jsonl\"\nprogress = \"off\"\n"
	return write(t, t.TempDir(), "ck.toml", text)
}

// resultLine parses the one JSON line of a train run's stdout.
func resultLine(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var r map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("result does not parse: %v\n%s", err, stdout)
	}
	return r
}

// sameResult reports every non-timing field that differs between a and b.
func sameResult(t *testing.T, a, b map[string]any) {
	t.Helper()
	a, b = flattenObjects(a), flattenObjects(b) // a strategy's figures too
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("resumed result has %q, the uninterrupted one does not", k)
		}
	}
	for k, va := range a {
		if timingKeys[k] || strings.HasSuffix(k, "_time_s") || strings.HasSuffix(k, "_per_s") {
			continue // wall-clock measurements (the mini-batch stages' too)
		}
		if !sameValue(k, va, b[k]) {
			ja, _ := json.Marshal(va)
			jb, _ := json.Marshal(b[k])
			t.Errorf("%s: uninterrupted %s, resumed %s", k, ja, jb)
		}
	}
}

// flattenObjects lifts the members of nested objects to dotted keys
// ("minibatch.sampled_edges_per_s"), so that their wall-clock members are
// told by their names like the top level's.
func flattenObjects(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if inner, ok := v.(map[string]any); ok {
			for ik, iv := range flattenObjects(inner) {
				out[k+"."+ik] = iv
			}
			continue
		}
		out[k] = v
	}
	return out
}

func slurp(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResume interrupts a run after epoch 4 (its context cancelled, as
// SIGINT does; the last checkpoint is after epoch 3), resumes it, and
// compares with the uninterrupted run: the same result (timing aside) and
// the same saved model, byte for byte (parameters bitwise).
func TestResume(t *testing.T) {
	testResume(t)
}

// TestResumeSGD is TestResume with SGD momentum, evaluation every 2
// epochs and early stopping (the checkpoint holds the patience counter).
func TestResumeSGD(t *testing.T) {
	testResume(t, `optimizer = "sgd"`, "momentum = 0.9", "lr = 0.5", "eval_every = 2", "patience = 4")
}

// TestResumeScheduled is TestResume with AdamW, gradient clipping and a
// cosine schedule with warm-up: the resumed run takes the rate of its
// epoch and AdamW's moments from the checkpoint.
func TestResumeScheduled(t *testing.T) {
	testResume(t, `optimizer = "adamw"`, "grad_clip = 0.5", "[train.lr_schedule]", `name = "cosine"`, "warmup_epochs = 3", "eta_min = 0.001")
}

// TestResumeSimulated is TestResume on a simulated device: the link
// counters (bytes and predicted seconds, per link and per purpose) and the
// per-epoch transfer bytes continue across the restart.
func TestResumeSimulated(t *testing.T) {
	testResume(t, `backend = "sim"`)
}

// TestResumeMinibatch is TestResume with sampled mini-batches.
func TestResumeMinibatch(t *testing.T) {
	testResume(t, `mode = "minibatch"`, "batch_size = 64", "[sampler]", `name = "uniform"`, "fanouts = [5, 5]")
}

func testResume(t *testing.T, extra ...string) {
	full := ckptConf(t, 8, 2, extra...)
	code, stdout, stderr := cli(t, append([]string{"train", "-c", full}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("uninterrupted: exit %d: %s", code, stderr)
	}
	want := resultLine(t, stdout)

	cut := ckptConf(t, 8, 2, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = context.WithValue(ctx, afterEpochKey{}, func(ep int) {
		if ep == 4 {
			cancel()
		}
	})
	var out, errb bytes.Buffer
	code = run(ctx, append([]string{"train", "-c", cut}, wasmArgs()...), &out, &errb)
	if code != exitInterrupted {
		t.Fatalf("interrupted: exit %d, want %d: %s", code, exitInterrupted, errb.String())
	}
	part := resultLine(t, out.String())
	if part["status"] != "interrupted" || part["epochs"] != float64(5) {
		t.Errorf("interrupted result: status %v, epochs %v, want interrupted after 5 epochs", part["status"], part["epochs"])
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cut), "m.model")); err == nil {
		t.Errorf("an interrupted run saved output.model")
	}
	if rows := readCSV(t, filepath.Join(filepath.Dir(cut), "epochs.csv")); len(rows) != 1+5 {
		t.Errorf("the interrupted run's epochs.csv has %d rows, want a header and its 5 epochs", len(rows))
	}
	code, stdout, stderr = cli(t, append([]string{"train", "-c", cut, "--resume"}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "already finished") {
		t.Errorf("the resume of an interrupted run says it had finished: %s", stderr)
	}
	sameResult(t, want, resultLine(t, stdout))
	if !bytes.Equal(slurp(t, filepath.Join(filepath.Dir(full), "m.model")), slurp(t, filepath.Join(filepath.Dir(cut), "m.model"))) {
		t.Errorf("the resumed run saved a different model than the uninterrupted one")
	}
	sameEpochs(t, filepath.Dir(full), filepath.Dir(cut))

	// A different config or a missing checkpoint is refused.
	code, _, stderr = cli(t, append([]string{"train", "-c", cut, "--resume", "--set", "train.lr=0.02"}, wasmArgs()...)...)
	if code != exitUser || !strings.Contains(stderr, "was written by a run of config") || !strings.Contains(stderr, want["config_sha256"].(string)) {
		t.Errorf("resume with another config: exit %d: %s", code, stderr)
	}
	os.Remove(filepath.Join(filepath.Dir(cut), "ck.bin"))
	code, _, stderr = cli(t, append([]string{"train", "-c", cut, "--resume"}, wasmArgs()...)...)
	if code != exitUser || !strings.Contains(stderr, "no such checkpoint file") {
		t.Errorf("resume without a checkpoint: exit %d: %s", code, stderr)
	}
	code, _, stderr = cli(t, append([]string{"train", "--set", "data.dataset=embedded:cora", "--set", "train.checkpoint_every=2"}, wasmArgs()...)...)
	if code != exitUser || !strings.Contains(stderr, "train.checkpoint_every: checkpoints go to output.checkpoint, which is not set") {
		t.Errorf("checkpoint_every without output.checkpoint: exit %d: %s", code, stderr)
	}
	code, _, stderr = cli(t, append([]string{"train", "--set", "data.dataset=embedded:cora", "--resume"}, wasmArgs()...)...)
	if code != exitUser || !strings.Contains(stderr, "output.checkpoint") {
		t.Errorf("resume without output.checkpoint: exit %d: %s", code, stderr)
	}
}

// TestCorruptCheckpoint flips a byte of a checkpoint and truncates one:
// --resume refuses both with exit 2.
func TestCorruptCheckpoint(t *testing.T) {
	cfg := ckptConf(t, 2, 1)
	if code, _, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ck := filepath.Join(filepath.Dir(cfg), "ck.bin")
	b := slurp(t, ck)
	for name, bad := range map[string][]byte{
		"flipped":   append(append(append([]byte{}, b[:len(b)-100]...), b[len(b)-100]^1), b[len(b)-99:]...),
		"truncated": b[:len(b)-9],
		"empty":     nil,
	} {
		if err := os.WriteFile(ck, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := cli(t, append([]string{"train", "-c", cfg, "--resume"}, wasmArgs()...)...)
		if code != exitUser || !strings.Contains(stderr, "not a valid strata checkpoint file") {
			t.Errorf("%s: exit %d: %s", name, code, stderr)
		}
	}
}

// TestTrainHelperProcess is not a test: TestResumeAfterKill and
// TestSignals run the test binary again with STRATA_TRAIN_HELPER set, to
// have a real `strata train` process, with main's signal handling, to
// kill or signal.
func TestTrainHelperProcess(t *testing.T) {
	if os.Getenv("STRATA_TRAIN_HELPER") != "1" {
		t.Skip("helper process for TestResumeAfterKill")
	}
	args := strings.Split(os.Getenv("STRATA_TRAIN_ARGS"), "\n")
	ctx, stop := signalContext(context.Background())
	code := run(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// trainProcess starts TestTrainHelperProcess running `strata train -c cfg`.
func trainProcess(t *testing.T, cfg string, stdout, stderr io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrainHelperProcess$")
	cmd.Env = append(os.Environ(), "STRATA_TRAIN_HELPER=1", "STRATA_TRAIN_ARGS="+strings.Join(append([]string{"train", "-c", cfg}, wasmArgs()...), "\n"))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// waitForFile waits until path exists (a run's first checkpoint); after
// 2 minutes it kills cmd and fails.
func waitForFile(t *testing.T, cmd *exec.Cmd, path string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no %s after 2 minutes", filepath.Base(path))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestResumeAfterKill kills a `strata train` process with SIGKILL once it
// has written a checkpoint, resumes the run and compares it with the
// uninterrupted run.
func TestResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	const epochs = 120
	full := ckptConf(t, epochs, 1)
	code, stdout, stderr := cli(t, append([]string{"train", "-c", full}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("uninterrupted: exit %d: %s", code, stderr)
	}
	want := resultLine(t, stdout)

	cut := ckptConf(t, epochs, 1)
	ck := filepath.Join(filepath.Dir(cut), "ck.bin")
	cmd := trainProcess(t, cut, nil, nil)
	waitForFile(t, cmd, ck)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	if werr == nil {
		t.Fatal("the run finished before it was killed; make it longer")
	}
	code, stdout, stderr = cli(t, append([]string{"train", "-c", cut, "--resume"}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	sameResult(t, want, resultLine(t, stdout))
	if !bytes.Equal(slurp(t, filepath.Join(filepath.Dir(full), "m.model")), slurp(t, filepath.Join(filepath.Dir(cut), "m.model"))) {
		t.Errorf("the resumed run saved a different model than the uninterrupted one")
	}
}

// TestPredict trains a model from a module file, predicts with it, checks
// the files, and refuses a model whose config or module differs.
func TestPredict(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "layer.wasm")
	gcn := slurp(t, filepath.Join("..", "..", "models", "wasm", "gcn.wasm"))
	if err := os.WriteFile(mod, gcn, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := write(t, dir, "p.toml", cora+"[model]\nmodule = \"layer.wasm\"\n[train]\nepochs = 5\n[output]\nmodel = \"m.model\"\nprogress = \"off\"\n")
	code, stdout, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	_ = resultLine(t, stdout)
	model := filepath.Join(dir, "m.model")
	out := filepath.Join(dir, "pred")
	code, _, stderr = cli(t, append([]string{"predict", "-m", model, "-c", cfg, "-o", out}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	const nodes, classes = 2708, 7
	pred := slurp(t, filepath.Join(out, "predictions.npy"))
	logits := slurp(t, filepath.Join(out, "logits.npy"))
	if len(pred) != 128+nodes*4 || len(logits) != 128+nodes*classes*4 {
		t.Fatalf("predictions.npy %d bytes, logits.npy %d bytes", len(pred), len(logits))
	}
	csvLines := strings.Split(strings.TrimSpace(string(slurp(t, filepath.Join(out, "predictions.csv")))), "\n")
	if len(csvLines) != nodes+1 || csvLines[0] != "node,class" {
		t.Fatalf("predictions.csv: %d lines, header %q", len(csvLines), csvLines[0])
	}
	// The classes are the logits' argmax.
	for i := 0; i < nodes; i++ {
		c := int32(binary.LittleEndian.Uint32(pred[128+i*4:]))
		best := 0
		row := func(k int) float32 {
			return math.Float32frombits(binary.LittleEndian.Uint32(logits[128+(i*classes+k)*4:]))
		}
		for k := 1; k < classes; k++ {
			if row(k) > row(best) {
				best = k
			}
		}
		if int32(best) != c || csvLines[i+1] != strconv.Itoa(i)+","+strconv.Itoa(int(c)) {
			t.Fatalf("node %d: class %d, csv %q, logits argmax %d", i, c, csvLines[i+1], best)
		}
	}
	// GCN's hidden layer is 16 wide.
	if emb := slurp(t, filepath.Join(out, "embeddings.npy")); len(emb) != 128+nodes*16*4 {
		t.Errorf("embeddings.npy: %d bytes", len(emb))
	}
	embCSV := strings.Split(strings.TrimSpace(string(slurp(t, filepath.Join(out, "embeddings.csv")))), "\n")
	if len(embCSV) != nodes || strings.Count(embCSV[0], ",") != 15 {
		t.Errorf("embeddings.csv: %d lines, first %q", len(embCSV), embCSV[0])
	}

	// Another model: refused, naming the key that differs.
	code, _, stderr = cli(t, append([]string{"predict", "-m", model, "-c", cfg, "-o", out, "--set", "model.hidden=32"}, wasmArgs()...)...)
	if code != exitUser || !strings.Contains(stderr, "model.hidden: model 16, config 32") {
		t.Errorf("another model: exit %d: %s", code, stderr)
	}
	// Another module (the same layer with a custom section appended).
	if err := os.WriteFile(mod, append(gcn, 0x00, 0x03, 0x01, 'x', 'y'), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, append([]string{"predict", "-m", model, "-c", cfg, "-o", out}, wasmArgs()...)...)
	if code != exitUser || !strings.Contains(stderr, "model.module_sha256: model layer (sha256 ") {
		t.Errorf("another module: exit %d: %s", code, stderr)
	}
	// Not a model file.
	code, _, stderr = cli(t, append([]string{"predict", "-m", cfg, "-c", cfg, "-o", out}, wasmArgs()...)...)
	if code != exitUser || !strings.Contains(stderr, "not a valid strata model file") {
		t.Errorf("not a model: exit %d: %s", code, stderr)
	}
}

// TestInterruptedWhileLoading: a run interrupted before its first epoch
// (while loading) still prints a result line, status "interrupted" with no
// epochs, and exits 130.
func TestInterruptedWhileLoading(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := run(ctx, append([]string{"train", "-c", ckptConf(t, 3, 1)}, wasmArgs()...), &out, &errb)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, errb.String())
	}
	r := resultLine(t, out.String())
	if r["status"] != "interrupted" || r["epochs"] != float64(0) || r["best_epoch"] != float64(-1) || r["model"] != "gcn" {
		t.Errorf("result %v: want status interrupted, 0 epochs, best_epoch -1, model gcn", r)
	}
}

// sameEpochs compares the epochs.csv and epochs.jsonl of an uninterrupted
// run (dir a) with those of an interrupted and resumed one (dir b): the
// same epochs with the same values, wall-clock times aside.
func sameEpochs(t *testing.T, a, b string) {
	t.Helper()
	wallClock := map[string]bool{"time_s": true, "sample_s": true, "extract_s": true, "stage_s": true, "train_s": true}
	ra, rb := readCSV(t, filepath.Join(a, "epochs.csv")), readCSV(t, filepath.Join(b, "epochs.csv"))
	if len(ra) != len(rb) || len(ra) < 2 {
		t.Fatalf("epochs.csv: %d rows uninterrupted, %d resumed", len(ra), len(rb))
	}
	for i := range ra {
		for j, col := range ra[0] {
			if !wallClock[col] && ra[i][j] != rb[i][j] && !(i > 0 && sameValue(col, parseFloat(ra[i][j]), parseFloat(rb[i][j]))) {
				t.Errorf("epochs.csv row %d %s: uninterrupted %s, resumed %s", i, col, ra[i][j], rb[i][j])
			}
		}
	}
	la := strings.Split(strings.TrimSpace(string(slurp(t, filepath.Join(a, "epochs.jsonl")))), "\n")
	lb := strings.Split(strings.TrimSpace(string(slurp(t, filepath.Join(b, "epochs.jsonl")))), "\n")
	if len(la) != len(lb) {
		t.Fatalf("epochs.jsonl: %d lines uninterrupted, %d resumed", len(la), len(lb))
	}
	for i := range la {
		var x, y map[string]any
		if err := json.Unmarshal([]byte(la[i]), &x); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(lb[i]), &y); err != nil {
			t.Fatal(err)
		}
		for k := range wallClock {
			delete(x, k)
			delete(y, k)
		}
		if !sameValue("", x, y) {
			jx, _ := json.Marshal(x)
			jy, _ := json.Marshal(y)
			t.Errorf("epochs.jsonl line %d: uninterrupted %s, resumed %s", i, jx, jy)
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(slurp(t, path))).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// sameValue compares two decoded JSON values: exactly, except that the
// simulator's predicted seconds (keys with "predicted", "seconds") may
// differ in the last bits, as a resumed run sums them from another base.
func sameValue(key string, a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			sub := k
			if strings.Contains(key, "predicted") {
				sub = key // predicted_compute_s: its values are predicted
			}
			if w, ok := y[k]; !ok || !sameValue(sub, v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(key, x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		if !ok {
			return false
		}
		if strings.Contains(key, "predicted") || key == "seconds" {
			return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
		}
		return x == y
	}
	return a == b
}

func parseFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// TestInterruptedDuringEvaluation interrupts a run in its evaluation: the
// result line still has the finished epoch, its time and its loss.
func TestInterruptedDuringEvaluation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = context.WithValue(ctx, beforeEvalKey{}, func(int) { cancel() })
	args := append([]string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "train.epochs=1",
		"--set", "output.progress=off", "--set", "output.json=true"}, wasmArgs()...)
	var out, errb bytes.Buffer
	if code := run(ctx, args, &out, &errb); code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, errb.String())
	}
	r := resultLine(t, out.String())
	if r["status"] != "interrupted" || r["epochs"] != float64(1) {
		t.Errorf("status %v, epochs %v; want interrupted after 1 epoch", r["status"], r["epochs"])
	}
	if s, _ := r["epoch_time_median_s"].(float64); s <= 0 {
		t.Errorf("epoch_time_median_s = %v, want the finished epoch's time", r["epoch_time_median_s"])
	}
	if l, _ := r["final_loss"].(float64); l <= 0 {
		t.Errorf("final_loss = %v, want the finished epoch's loss", r["final_loss"])
	}
}
