package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPredictNewGraph: a saved model predicts without -c and without the
// training --sets (the model file holds its config), on its own dataset
// and on another graph with the same features and no labels, splits or
// masks (the same predictions, no accuracy); with labels the result line
// carries the accuracies. A graph of another feature width, and a -c
// whose model differs, are refused naming what differs.
func TestPredictNewGraph(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.model")
	train := []string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "train.epochs=3", "--set", "train.lr=0.02", "--set", "train.seed=7",
		"--set", "output.model=" + model, "--set", "output.progress=off"}
	if code, _, stderr := cli(t, append(train, wasmArgs()...)...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	unlabelled := filepath.Join(dir, "unlabelled")
	if code, _, stderr := cli(t, "convert", "--to", "npy", "-i", "embedded:cora", "-o", unlabelled); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	for _, name := range []string{"y.npy", "train_mask.npy", "val_mask.npy", "test_mask.npy"} {
		if err := os.Remove(filepath.Join(unlabelled, name)); err != nil {
			t.Fatal(err)
		}
	}
	predict := func(out string, extra ...string) (int, predictResult, string) {
		code, stdout, stderr := cli(t, append(append([]string{"predict", "-m", model, "-o", filepath.Join(dir, out)}, extra...), wasmArgs()...)...)
		var res predictResult
		if code == 0 {
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("result line: %v: %q", err, stdout)
			}
		}
		return code, res, stderr
	}
	code, own, stderr := predict("own")
	if code != 0 || own.Labelled != 2708 || own.Accuracy["valid_acc"] == 0 || own.Accuracy["accuracy"] == 0 {
		t.Fatalf("own dataset: exit %d, %+v: %s", code, own, stderr)
	}
	code, withC, stderr := predict("with-c", "-c", "../../configs/gcn-cora.toml")
	if code != 0 || withC.Accuracy["accuracy"] != own.Accuracy["accuracy"] {
		t.Fatalf("with the training config, without its --sets: exit %d, %+v: %s", code, withC, stderr)
	}
	code, other, stderr := predict("other", "-i", unlabelled)
	if code != 0 || other.Labelled != 0 || other.Accuracy != nil || other.Nodes != 2708 {
		t.Fatalf("unlabelled graph: exit %d, %+v: %s", code, other, stderr)
	}
	for _, f := range []string{"predictions.npy", "logits.npy"} {
		a, _ := os.ReadFile(filepath.Join(dir, "own", f))
		b, _ := os.ReadFile(filepath.Join(dir, "other", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the labelled and the unlabelled copy of the graph", f)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"feature width", []string{"-i", "rmat-10-8-64-7-0"}, "trained on 1433 features and 7 classes, the dataset rmat-10-8-64-7-0 has 64"},
		{"model", []string{"--set", "model.layers=3"}, "model.layers: model 2, config 3"},
		{"input transform", []string{"-c", "../../configs/gcn-cora.toml", "--set", "data.symmetrize=false"}, "data.symmetrize: model true, config false"},
	} {
		if code, _, stderr := predict("refused", c.args...); code != exitUser || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d: %s; want exit 2 naming %q", c.name, code, stderr, c.want)
		}
	}
}
