package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strata/experiments/runner"
	"strconv"
	"strings"
	"testing"
)

// TestTrainSummaryLine: after the result line on stdout, strata train
// prints one summary line on stderr whose best epoch and accuracies are
// the result's (numbered from 0, as best_epoch); output.progress = "off"
// silences it with the progress lines.
func TestTrainSummaryLine(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "s.toml", cora+"[train]\nepochs = 3\nseed = 2\n[output]\nprogress = \"on\"\n")
	code, stdout, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res := resultLine(t, stdout)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	m := regexp.MustCompile(`^strata: 3 epochs in [0-9]+\.[0-9] s, best valid ([0-9.]+) at epoch ([0-9]+), test ([0-9.]+)$`).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last stderr line %q is not the summary", last)
	}
	for i, key := range []string{"best_valid_acc", "best_epoch", "test_acc"} {
		want := fmt.Sprintf("%.3f", res[key].(float64))
		if key == "best_epoch" {
			want = strconv.Itoa(int(res[key].(float64)))
		}
		if m[i+1] != want {
			t.Errorf("summary %s %s, result %s", key, m[i+1], want)
		}
	}
	code, _, stderr = cli(t, append([]string{"train", "-c", cfg, "--set", "output.progress=off"}, wasmArgs()...)...)
	if code != 0 || strings.Contains(stderr, "strata: 3 epochs") {
		t.Errorf("progress off: exit %d, stderr %q", code, stderr)
	}
}

// TestResumeFinishedRun: --resume of a run that finished says so on
// stderr and prints the finished run's result again.
func TestResumeFinishedRun(t *testing.T) {
	cfg := ckptConf(t, 2, 1)
	code, stdout, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...)
	if code != 0 || strings.Contains(stderr, "already finished") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := resultLine(t, stdout)
	code, stdout, stderr = cli(t, append([]string{"train", "-c", cfg, "--resume"}, wasmArgs()...)...)
	if code != 0 || !strings.Contains(stderr, "already finished: "+filepath.Join(filepath.Dir(cfg), "ck.bin")) {
		t.Fatalf("resume of a finished run: exit %d, stderr %q", code, stderr)
	}
	sameResult(t, want, resultLine(t, stdout))
}

// TestEarlyStopMetricKey: a train.early_stop_metric the run does not
// report is a usage error (exit 2) naming the key and the choices;
// train.metrics adds its figures to the result line.
func TestEarlyStopMetricKey(t *testing.T) {
	code, _, stderr := cli(t, append([]string{"train", "--set", "data.dataset=embedded:cora", "--set", "train.early_stop_metric=valid_f1"}, wasmArgs()...)...)
	if code != exitUser || !strings.Contains(stderr, "train.early_stop_metric") || !strings.Contains(stderr, `"valid_acc", "valid_loss"`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	cfg := write(t, t.TempDir(), "m.toml", cora+"[train]\nepochs = 2\nmetrics = [\"macro_f1\", \"roc_auc\"]\nearly_stop_metric = \"valid_roc_auc\"\n[output]\nprogress = \"off\"\n")
	code, stdout, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, _ := resultLine(t, stdout)["metrics"].(map[string]any)
	for _, k := range []string{"valid_macro_f1", "test_macro_f1", "valid_roc_auc", "test_roc_auc"} {
		if v, ok := got[k].(float64); !ok || v <= 0 || v > 1 {
			t.Errorf("result metrics %v: %s missing or outside (0, 1]", got, k)
		}
	}
}

// TestRecordingDoesNotChangeTheResult: on simulated devices, which count
// every link byte, a run that records output.csv and output.log (and so
// reads the validation logits back for valid_loss) reports the same
// traffic and the same result as one that records nothing: the read-back
// is an observation (backend.Peeker), not modelled work.
func TestRecordingDoesNotChangeTheResult(t *testing.T) {
	for _, mode := range [][]string{
		{"train.mode=fullgraph"},
		{"train.mode=minibatch", "sampler.name=uniform", "sampler.fanouts=[5,5]", "minibatch.batch_size=256"},
		{"train.mode=chunked", "chunked.chunks=2"},
	} {
		t.Run(mode[0], func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "train.backend=sim", "--set", "train.epochs=3", "--set", "output.progress=off"}
			for _, m := range mode {
				args = append(args, "--set", m)
			}
			args = append(args, wasmArgs()...)
			var results []map[string]string
			var first map[string]any
			for _, rec := range [][]string{nil, {"--set", "output.csv=" + filepath.Join(dir, "e.csv"), "--set", "output.log=" + filepath.Join(dir, "e.log")}} {
				code, stdout, stderr := cli(t, append(append([]string{}, args...), rec...)...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				var r map[string]any
				if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)[strings.LastIndexByte(strings.TrimSpace(stdout), '\n')+1:]), &r); err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = r
				}
				results = append(results, checkedLeaves(t, r))
			}
			a, _ := json.Marshal(results[0])
			b, _ := json.Marshal(results[1])
			if string(a) != string(b) {
				t.Errorf("recording output.csv and output.log changed the result:\nwithout %s\nwith    %s", a, b)
			}
			if _, ok := first["traffic"]; !ok {
				t.Fatalf("no traffic in the result of a sim run: %s", a)
			}
		})
	}
}

// checkedLeaves returns the leaves of a result that the experiment
// check compares (runner's classes of a train run's columns: not the
// measured times, rates and memory, which differ from run to run, nor
// what a strategy's figures declare measured).
func checkedLeaves(t *testing.T, r map[string]any) map[string]string {
	t.Helper()
	var kind *runner.Kind
	for _, k := range runner.Kinds {
		if k.Name == "train" {
			kind = k
		}
	}
	leaves, err := runner.Leaves(r)
	if kind == nil || err != nil {
		t.Fatalf("the train kind's column classes: %v", err)
	}
	out := map[string]string{}
	for col, v := range leaves {
		if kind.ClassOf(col).Checked {
			out[col] = string(v)
		}
	}
	return out
}
