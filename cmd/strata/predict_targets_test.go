package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/graph/numpy"
)

// TestPredictTargets trains a multi-label and a regression model on Cora
// targets (graphtest.ToTargets), then predicts with the model file alone:
// predictions.npy holds (N, C) 0/1 labels or (N, T) values, the csv one
// column per target, and the result line the task's figures (accuracy
// for multi-label, r2 for regression) that the training run reported as
// its accuracies; on the graph without targets or splits, the same
// predictions and no scores.
func TestPredictTargets(t *testing.T) {
	cases := []struct {
		kind          graph.TargetKind
		sets          []string
		descr, header string
		figure        string
	}{
		{graph.MultiLabel, nil, "'descr': '|u1'", "node,label_0,label_1,label_2,label_3", "test_acc"},
		{graph.Regression, []string{"--set", `train.task="regression"`}, "'descr': '<f4'", "node,target_0,target_1", "test_r2"},
	}
	for _, c := range cases {
		t.Run(c.kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			ds, err := graph.Open("embedded:cora")
			if err != nil {
				t.Fatal(err)
			}
			graphtest.ToTargets(ds, c.kind)
			data := filepath.Join(dir, "data")
			if _, err := numpy.WriteNPYDir(data, ds); err != nil {
				t.Fatal(err)
			}
			model := filepath.Join(dir, "m.model")
			args := append([]string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "data.dataset=" + data, "--set", "train.epochs=20",
				"--set", "output.model=" + model, "--set", "output.progress=off"}, c.sets...)
			code, stdout, stderr := cli(t, append(args, wasmArgs()...)...)
			if code != 0 {
				t.Fatalf("train: exit %d: %s", code, stderr)
			}
			var trained struct {
				TestAcc float64 `json:"test_acc"`
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &trained); err != nil {
				t.Fatalf("train result: %v: %q", err, stdout)
			}
			out := filepath.Join(dir, "pred")
			code, stdout, stderr = cli(t, append([]string{"predict", "-m", model, "-o", out}, wasmArgs()...)...)
			if code != 0 {
				t.Fatalf("predict: exit %d: %s", code, stderr)
			}
			var res predictResult
			lines = strings.Split(strings.TrimSpace(stdout), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("result line: %v: %q", err, stdout)
			}
			if res.Labelled != 2708 || res.Accuracy[c.figure] != trained.TestAcc {
				t.Errorf("result %+v: want 2708 labelled nodes and %s = %v, the training run's test_acc", res, c.figure, trained.TestAcc)
			}
			npy, _ := os.ReadFile(filepath.Join(out, "predictions.npy"))
			shape := "'shape': (2708, " + map[graph.TargetKind]string{graph.MultiLabel: "4", graph.Regression: "2"}[c.kind] + ")"
			if !strings.Contains(string(npy[:min(len(npy), 128)]), c.descr) || !strings.Contains(string(npy[:min(len(npy), 128)]), shape) {
				t.Errorf("predictions.npy header %q, want %s and %s", npy[:min(len(npy), 128)], c.descr, shape)
			}
			csv, _ := os.ReadFile(filepath.Join(out, "predictions.csv"))
			if rows := strings.Split(strings.TrimSpace(string(csv)), "\n"); rows[0] != c.header || len(rows) != 2709 {
				t.Errorf("predictions.csv: header %q and %d rows, want %q and 2709", rows[0], len(rows), c.header)
			}
			// The same graph without targets or splits: the same predictions, no scores.
			for _, name := range []string{"y.npy", "train_mask.npy", "val_mask.npy", "test_mask.npy"} {
				if err := os.Remove(filepath.Join(data, name)); err != nil {
					t.Fatal(err)
				}
			}
			bare := filepath.Join(dir, "bare")
			code, stdout, stderr = cli(t, append([]string{"predict", "-m", model, "-i", data, "-o", bare}, wasmArgs()...)...)
			if code != 0 || !strings.Contains(stdout, `"labelled":0`) {
				t.Fatalf("predict on the graph without targets: exit %d: %s%s", code, stdout, stderr)
			}
			if again, _ := os.ReadFile(filepath.Join(bare, "predictions.npy")); string(again) != string(npy) {
				t.Error("predictions.npy differs on the graph without targets")
			}
		})
	}
}
