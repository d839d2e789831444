package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/train"
)

// predictRun runs predict and returns its exit code, its result and
// stderr. On success the JSON result line must be all of stdout (what a
// person reads goes to stderr, as for strata train).
func predictRun(t *testing.T, args ...string) (int, predictResult, string) {
	t.Helper()
	code, stdout, stderr := cli(t, append(append([]string{"predict"}, args...), wasmArgs()...)...)
	var res predictResult
	if code != 0 {
		return code, res, stderr
	}
	if strings.Count(stdout, "\n") != 1 || !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("predict %v: stdout is not one line: %q", args, stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("predict %v: stdout %q is not the result line: %v", args, stdout, err)
	}
	if !strings.Contains(stderr, "nodes predicted with") {
		t.Errorf("predict %v: stderr lacks the summary for a person: %q", args, stderr)
	}
	return code, res, stderr
}

// trainModel trains for a few epochs with args and returns the model file
// and the run's result line.
func trainModel(t *testing.T, dir string, args ...string) (string, map[string]any) {
	t.Helper()
	model := filepath.Join(dir, "m.model")
	args = append(append([]string{"train"}, args...), "--set", "output.model="+model, "--set", "output.progress=off")
	code, stdout, stderr := cli(t, append(args, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	return model, resultLine(t, stdout)
}

// coraVariant writes Cora as a .strata file after edit changes it.
func coraVariant(t *testing.T, dir, name string, edit func(d *graph.Dataset)) string {
	t.Helper()
	d, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	edit(d)
	p := filepath.Join(dir, name)
	if err := formats.WriteBinary(p, d); err != nil {
		t.Fatal(err)
	}
	return p
}

// rewriteModel writes the model file from as to after edit changes its
// meta, with the header length and the file's checksum recomputed
// (docs/checkpoints.md, "File format"): an older strata's file, or one
// edited by hand.
func rewriteModel(t *testing.T, from, to string, edit func(meta map[string]any)) {
	t.Helper()
	b := slurp(t, from)
	hlen := int(binary.LittleEndian.Uint32(b[12:16]))
	var h map[string]json.RawMessage
	if err := json.Unmarshal(b[16:16+hlen], &h); err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(h["meta"], &meta); err != nil {
		t.Fatal(err)
	}
	edit(meta)
	h["meta"], _ = json.Marshal(meta)
	hb, _ := json.Marshal(h)
	out := append(append(bytes.Clone(b[:16]), hb...), b[16+hlen:len(b)-32]...)
	binary.LittleEndian.PutUint32(out[12:16], uint32(len(hb)))
	sum := sha256.Sum256(out)
	if err := os.WriteFile(to, append(out, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// olderModel is rewriteModel's edit for a file of a strata before the
// model identity was recorded.
func olderModel(meta map[string]any) {
	for _, k := range []string{"model_sha256", "feature_norm", "modules", "paths"} {
		delete(meta, k)
	}
}

// sameFiles reports the first of predict's files that differs between
// two output directories ("" when none does).
func sameFiles(t *testing.T, a, b string) string {
	t.Helper()
	for _, f := range predictFiles {
		if !bytes.Equal(slurp(t, filepath.Join(a, f)), slurp(t, filepath.Join(b, f))) {
			return f
		}
	}
	return ""
}

// checkOutcome checks a predict run of a table case: with want nil it
// must succeed and write what the run into own wrote (then it returns
// true), else exit 2 naming each of want.
func checkOutcome(t *testing.T, name string, code int, stderr string, want []string, own, out string) bool {
	t.Helper()
	switch {
	case want == nil && code != 0:
		t.Errorf("%s: exit %d: %s", name, code, stderr)
	case want == nil:
		if f := sameFiles(t, own, out); f != "" {
			t.Errorf("%s: %s differs from the model's own prediction", name, f)
		}
		return true
	case code != exitUser:
		t.Errorf("%s: exit %d, want %d: %s", name, code, exitUser, stderr)
	default:
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr does not name %q: %s", name, w, stderr)
			}
		}
	}
	return false
}

// TestPredictNewGraph: a saved model predicts without -c and without the
// training --sets (the model file holds its config), on its own dataset
// and on another graph with the same features and no labels, splits or
// masks (the same predictions, no accuracy); with labels the result line
// carries the accuracies. A graph of another feature width, and a -c
// whose model differs, are refused naming what differs.
func TestPredictNewGraph(t *testing.T) {
	dir := t.TempDir()
	model, _ := trainModel(t, dir, "-c", "../../configs/gcn-cora.toml", "--set", "train.epochs=3", "--set", "train.lr=0.02", "--set", "train.seed=7")
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
		return predictRun(t, append([]string{"-m", model, "-o", filepath.Join(dir, out)}, extra...)...)
	}
	code, own, stderr := predict("own")
	if code != 0 || own.Labelled != 2708 || own.Accuracy["valid_acc"] == 0 || own.Accuracy["accuracy"] == 0 || len(own.ModelSHA256) != 64 {
		t.Fatalf("own dataset: exit %d, %+v: %s", code, own, stderr)
	}
	code, withC, stderr := predict("with-c", "-c", "../../configs/gcn-cora.toml")
	if code != 0 || withC.Accuracy["accuracy"] != own.Accuracy["accuracy"] || withC.ModelSHA256 != own.ModelSHA256 {
		t.Fatalf("with the training config, without its --sets: exit %d, %+v: %s", code, withC, stderr)
	}
	code, other, stderr := predict("other", "-i", unlabelled)
	if code != 0 || other.Labelled != 0 || other.Accuracy != nil || other.Nodes != 2708 {
		t.Fatalf("unlabelled graph: exit %d, %+v: %s", code, other, stderr)
	}
	if f := sameFiles(t, filepath.Join(dir, "own"), filepath.Join(dir, "other")); f != "" {
		t.Errorf("%s differs between the labelled and the unlabelled copy of the graph", f)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"feature width", []string{"-i", "rmat-10-8-64-7-0"}, "data.features: model 1433, dataset 64"},
		{"model", []string{"--set", "model.layers=3"}, "model.layers: model 2, config 3"},
		{"input transform", []string{"-c", "../../configs/gcn-cora.toml", "--set", "data.symmetrize=false"}, "data.symmetrize: model true, config false"},
	} {
		if code, _, stderr := predict("refused", c.args...); code != exitUser || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d: %s; want exit 2 naming %q", c.name, code, stderr, c.want)
		}
	}
}

// TestPredictIdentity: the model's identity (model_sha256, recorded in
// the file and checked when it is read) covers the [model] section, the
// layer and aggregator modules by their bytes, the feature width,
// storage and arithmetic, and the classes; not the schedule or the
// files' paths. What fits predicts exactly as the model's own config;
// each mismatch is exit 2 naming its key.
func TestPredictIdentity(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"layer.wasm": "sage.wasm", "aggr.wasm": "aggregator-mean.wasm"}
	for name, shipped := range files {
		b := slurp(t, filepath.Join("..", "..", "models", "wasm", shipped))
		for _, d := range []string{dir, filepath.Join(dir, "moved")} {
			write(t, d, name, string(b))
		}
	}
	cfg := write(t, dir, "p.toml", cora+"[model]\nmodule = \"layer.wasm\"\n[model.options]\naggr = \"aggr.wasm\"\n[train]\nepochs = 3\n")
	model, _ := trainModel(t, dir, "-c", cfg)
	meta, _, err := train.ReadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	aggrSum := sha256.Sum256(slurp(t, filepath.Join(dir, "aggr.wasm")))
	if len(meta.ModelSHA256) != 64 || meta.FeatureNorm != "row" || meta.Modules["model.options.aggr"] != hex.EncodeToString(aggrSum[:]) ||
		meta.Paths["model.module"] != filepath.Join(dir, "layer.wasm") {
		t.Fatalf("model file meta: model_sha256 %q, feature_norm %q, modules %v, paths %v", meta.ModelSHA256, meta.FeatureNorm, meta.Modules, meta.Paths)
	}
	old, tampered := filepath.Join(dir, "old.model"), filepath.Join(dir, "tampered.model")
	rewriteModel(t, model, old, olderModel)
	rewriteModel(t, model, tampered, func(meta map[string]any) {
		meta["modules"].(map[string]any)["model.options.aggr"] = strings.Repeat("0", 64)
	})
	narrow := coraVariant(t, dir, "narrow.strata", func(d *graph.Dataset) {
		cut := make([]float32, 0, d.NumNodes*500)
		for i := range d.NumNodes {
			cut = append(cut, d.Features[i*d.FeatDim:i*d.FeatDim+500]...)
		}
		d.Features, d.FeatDim = cut, 500
	})
	moreClasses := coraVariant(t, dir, "classes.strata", func(d *graph.Dataset) { d.Labels[1], d.NumClasses = 9, 10 })
	code, own, stderr := predictRun(t, "-m", model, "-o", filepath.Join(dir, "own"))
	if code != 0 || own.ModelSHA256 != meta.ModelSHA256 {
		t.Fatalf("own config: exit %d, model_sha256 %q, want the file's %q: %s", code, own.ModelSHA256, meta.ModelSHA256, stderr)
	}
	moved := filepath.Join(dir, "moved")
	for i, c := range []struct {
		name string
		args []string
		edit string // a module file changed in place for the case
		want []string
	}{
		{"-c with another schedule", []string{"-c", cfg, "--set", "train.lr=0.5", "--set", "train.epochs=1", "--set", "train.seed=9"}, "", nil},
		{"the module files elsewhere, same bytes", []string{"--set", "model.module=" + filepath.Join(moved, "layer.wasm"), "--set", "model.options.aggr=" + filepath.Join(moved, "aggr.wasm")}, "", nil},
		{"feature_norm as auto resolved it", []string{"--set", "data.feature_norm=row"}, "", nil},
		{"an older model file, with -c", []string{"-m", old, "-c", cfg}, "", nil},
		{"the layer module changed in place", nil, "layer.wasm", []string{"model.module_sha256: model layer (sha256 ", "the layer module's bytes differ"}},
		{"the aggregator module changed in place", nil, "aggr.wasm", []string{"model.options.aggr: model sha256 " + hex.EncodeToString(aggrSum[:6]) + ", config sha256 ", "the aggregator module's bytes differ"}},
		{"a registered aggregator for the file", []string{"--set", "model.options.aggr=max"}, "", []string{`model.options.aggr: model (a module file), config "max"`}},
		{"another feature width", []string{"-i", narrow}, "", []string{"data.features: model 1433, dataset 500"}},
		{"more classes", []string{"-i", moreClasses}, "", []string{"data.classes: model 7, dataset 10"}},
		{"another feature storage", []string{"--set", "data.feature_dtype=bfloat16"}, "", []string{`data.feature_dtype: model "float32", config "bfloat16"`}},
		{"another arithmetic", []string{"--set", "train.dtype=float64"}, "", []string{`train.dtype: model "float32", config "float64"`}},
		{"another model key", []string{"-c", cfg, "--set", "model.hidden=32"}, "", []string{"model.hidden: model 16, config 32"}},
		{"an edited model file", []string{"-m", tampered}, "", []string{"model_sha256 " + meta.ModelSHA256 + " does not match"}},
	} {
		args := c.args
		if !slices.Contains(args, "-m") {
			args = append([]string{"-m", model}, args...)
		}
		if c.edit != "" {
			b := slurp(t, filepath.Join(dir, c.edit))
			write(t, dir, c.edit, string(append(bytes.Clone(b), 0x00, 0x03, 0x01, 'x', 'y'))) // a custom section
		}
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		code, got, stderr := predictRun(t, append(args, "-o", out)...)
		if c.edit != "" {
			write(t, dir, c.edit, string(slurp(t, filepath.Join(moved, c.edit)))) // restored
		}
		if checkOutcome(t, c.name, code, stderr, c.want, filepath.Join(dir, "own"), out) && got.ModelSHA256 != own.ModelSHA256 && !strings.Contains(c.name, "older") {
			t.Errorf("%s: model_sha256 %s, want %s", c.name, got.ModelSHA256, own.ModelSHA256)
		}
	}
}

// TestPredictFeatureNorm: the model records what data.feature_norm =
// "auto" did to the training data (row: Cora's features are 0/1) and
// applies that to any graph, so a copy of Cora with its features tripled
// (where auto would mean none) predicts exactly as Cora; an older model
// file, without the record, resolves auto on the new graph and predicts
// otherwise; a config asking for another normalisation is refused.
func TestPredictFeatureNorm(t *testing.T) {
	dir := t.TempDir()
	conf := "../../configs/gcn-cora.toml"
	model, _ := trainModel(t, dir, "-c", conf, "--set", "train.epochs=3")
	old := filepath.Join(dir, "old.model")
	rewriteModel(t, model, old, olderModel)
	scaled := coraVariant(t, dir, "scaled.strata", func(d *graph.Dataset) {
		f := make([]float32, len(d.Features))
		for i, v := range d.Features {
			f[i] = 3 * v
		}
		d.Features = f
	})
	if code, _, stderr := predictRun(t, "-m", model, "-o", filepath.Join(dir, "own")); code != 0 {
		t.Fatalf("own graph: exit %d: %s", code, stderr)
	}
	for i, c := range []struct {
		name string
		args []string
		same bool   // predicts as the model on its own graph
		want string // exit 2 naming this
	}{
		{"the model's config", []string{"-m", model, "-i", scaled}, true, ""},
		{"-c with auto", []string{"-m", model, "-c", conf, "-i", scaled}, true, ""},
		{"an older model file", []string{"-m", old, "-i", scaled}, false, ""},
		{"another normalisation", []string{"-m", model, "-i", scaled, "--set", "data.feature_norm=none"}, false, `data.feature_norm: model "row", config "none"`},
	} {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		code, _, stderr := predictRun(t, append(c.args, "-o", out)...)
		if c.want != "" {
			if code != exitUser || !strings.Contains(stderr, c.want) {
				t.Errorf("%s: exit %d: %s; want exit 2 naming %q", c.name, code, stderr, c.want)
			}
			continue
		}
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		if f := sameFiles(t, filepath.Join(dir, "own"), out); (f == "") != c.same {
			t.Errorf("%s: the prediction on the scaled copy equals the one on Cora: %v, want %v (first file differing: %q)", c.name, f == "", c.same, f)
		}
	}
}

// TestPredictSplit: a graph named on the command line (-i, or --set
// data.dataset, with or without -c) is predicted with its own split, or
// with none, never the training config's data.split; on the training
// graph the training split is kept, so the validation accuracy is the
// run's best.
func TestPredictSplit(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "p.toml", cora+"split = \"random-20-30-seed0\"\n[train]\nepochs = 4\n")
	model, res := trainModel(t, dir, "-c", cfg)
	ownSplit := coraVariant(t, dir, "own-split.strata", func(d *graph.Dataset) {
		d.Train, d.Valid, d.Test = []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, nil, nil
	})
	noSplit := coraVariant(t, dir, "no-split.strata", func(d *graph.Dataset) { d.Train, d.Valid, d.Test = nil, nil, nil })
	for i, c := range []struct {
		name string
		args []string
		want []string // the accuracies of the result line
	}{
		{"the training graph", nil, []string{"accuracy", "test_acc", "train_acc", "valid_acc"}},
		{"-i with its own split", []string{"-i", ownSplit}, []string{"accuracy", "train_acc"}},
		{"--set data.dataset with its own split", []string{"--set", "data.dataset=" + ownSplit}, []string{"accuracy", "train_acc"}},
		{"-c with a split, -i", []string{"-c", cfg, "-i", ownSplit}, []string{"accuracy", "train_acc"}},
		{"-i without a split", []string{"-i", noSplit}, []string{"accuracy"}},
		{"-i with --set data.split", []string{"-i", noSplit, "--set", "data.split=random-20-30-seed0"}, []string{"accuracy", "test_acc", "train_acc", "valid_acc"}},
	} {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		code, got, stderr := predictRun(t, append([]string{"-m", model, "-o", out}, c.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		if keys := slices.Sorted(maps.Keys(got.Accuracy)); !slices.Equal(keys, c.want) || got.Nodes != 2708 || got.Labelled != 2708 {
			t.Errorf("%s: %d nodes, %d labelled, accuracies %v; want 2708, 2708, %v", c.name, got.Nodes, got.Labelled, keys, c.want)
		}
		if c.args == nil && got.Accuracy["valid_acc"] != res["best_valid_acc"] {
			t.Errorf("%s: valid_acc %v, want the run's best_valid_acc %v", c.name, got.Accuracy["valid_acc"], res["best_valid_acc"])
		}
	}
	code, _, stderr := predictRun(t, "-m", model, "-o", filepath.Join(dir, "both"), "-i", ownSplit, "--set", "data.dataset="+noSplit)
	if code != exitUser || !strings.Contains(stderr, "-i and --set data.dataset= both name the graph") {
		t.Errorf("-i and --set data.dataset: exit %d: %s", code, stderr)
	}
}

// TestPredictRecordedPaths: the model file records the files the run
// built it from as the run resolved them (relative to the directory it
// ran in), and predict without -c reads them relative to its working
// directory like any command-line path. From another directory each
// missing file is exit 2 naming its key and the fix, and -i or --set
// give them.
func TestPredictRecordedPaths(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	write(t, run, "sub/layer.wasm", string(slurp(t, filepath.Join("..", "..", "models", "wasm", "gcn.wasm"))))
	write(t, run, "sub/p.toml", "[data]\ndataset = \"../data/cora.strata\"\n[model]\nmodule = \"layer.wasm\"\n[train]\nepochs = 2\n")
	if err := os.MkdirAll(filepath.Join(run, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	coraVariant(t, filepath.Join(run, "data"), "cora.strata", func(*graph.Dataset) {})
	t.Chdir(run)
	model, _ := trainModel(t, ".", "-c", "sub/p.toml")
	meta, _, err := train.ReadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Paths["data.dataset"] != "data/cora.strata" || meta.Paths["model.module"] != "sub/layer.wasm" {
		t.Fatalf("recorded paths %v, want them relative to the run's directory", meta.Paths)
	}
	if code, _, stderr := predictRun(t, "-m", model, "-o", filepath.Join(dir, "own")); code != 0 {
		t.Fatalf("in the run's directory: exit %d: %s", code, stderr)
	}
	t.Chdir(dir)
	model = filepath.Join("run", model)
	for i, c := range []struct {
		name string
		args []string
		want []string // exit 2 naming these; nil: predicts as in the run's directory
	}{
		{"the dataset missing", nil, []string{`data.dataset = "data/cora.strata", recorded in the model file`, "name the graph with -i DATASET"}},
		{"the module missing", []string{"-i", "run/data/cora.strata"}, []string{`model.module = "sub/layer.wasm", recorded in the model file`, "--set model.module=PATH"}},
		{"both given", []string{"-i", "run/data/cora.strata", "--set", "model.module=run/sub/layer.wasm"}, nil},
		{"the run's config", []string{"-c", "run/sub/p.toml"}, nil},
	} {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		code, _, stderr := predictRun(t, append([]string{"-m", model, "-o", out}, c.args...)...)
		checkOutcome(t, c.name, code, stderr, c.want, filepath.Join(dir, "own"), out)
	}
}
