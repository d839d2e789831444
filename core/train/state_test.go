package train

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/safefile"
)

// outputsConfig writes a config with the given [train] and [output]
// lines into a fresh directory, which holds a subdirectory "sub".
func outputsConfig(t *testing.T, train, output string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	return loadConfigText(t, dir, "[data]\ndataset = \"embedded:cora\"\n[train]\n"+train+"\n[output]\n"+output+"\n")
}

// TestCheckOutputs: every output is refused before the run loads
// anything when it is a directory, an input, the same file as another
// output, or locked by another holder; the error names the keys.
func TestCheckOutputs(t *testing.T) {
	cases := []struct {
		name, train, output string
		lock                string // an output to lock first
		want                []string
	}{
		{"fine", "checkpoint_every = 1", `csv = "e.csv"` + "\n" + `log = "e.jsonl"` + "\n" + `model = "m.model"` + "\n" + `checkpoint = "ck.bin"`, "", nil},
		{"model is a directory", "", `model = "sub"`, "", []string{"output.model:", "a directory"}},
		{"checkpoint is a directory", "checkpoint_every = 1", `checkpoint = "sub"`, "", []string{"output.checkpoint:", "a directory"}},
		{"model is the config", "", `model = "c.toml"`, "", []string{"output.model:", "same file as the input"}},
		{"model is the checkpoint", "checkpoint_every = 1", `checkpoint = "ck.bin"` + "\n" + `model = "ck.bin"`, "", []string{"output.checkpoint and output.model are the same file"}},
		{"model is the checkpoint through ..", "checkpoint_every = 1", `checkpoint = "ck.bin"` + "\n" + `model = "sub/../ck.bin"`, "", []string{"output.checkpoint and output.model are the same file"}},
		{"csv is the log", "", `csv = "e.txt"` + "\n" + `log = "e.txt"`, "", []string{"output.csv and output.log are the same file"}},
		{"model is locked", "", `model = "m.model"`, "m.model", []string{"output.model:", "in use by"}},
		{"checkpoint not written", "", `checkpoint = "ck.bin"` + "\n" + `model = "ck.bin"`, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := outputsConfig(t, c.train, c.output)
			if c.lock != "" {
				lock, err := safefile.Acquire(filepath.Join(filepath.Dir(cfg.Path), c.lock))
				if err != nil {
					t.Fatal(err)
				}
				defer lock.Release()
			}
			err := CheckOutputs(cfg)
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestOutputWriteFailureKeepsLogs: a checkpoint or a model that cannot be
// written (its path replaced by a directory while the run trains) ends
// the run with an *OutputError, and output.csv and output.log hold every
// finished epoch.
func TestOutputWriteFailureKeepsLogs(t *testing.T) {
	for _, c := range []struct {
		name, file, key string
		at, rows        int // the epoch after which file becomes a directory; the epochs kept
	}{
		{"checkpoint", "ck.bin", "output.checkpoint", 0, 2},
		{"model", "m.model", "output.model", 3, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, "epochs = 4", "checkpoint_every = 1")
			dir := filepath.Dir(cfg.Path)
			l := testLoop(t, cfg, &fakeStepper{valid: []int{1, 2, 2, 3}, cancelAt: -1})
			l.afterEpoch = func(ep int) {
				if ep == c.at {
					os.Remove(filepath.Join(dir, c.file))
					if err := os.Mkdir(filepath.Join(dir, c.file), 0o755); err != nil {
						t.Error(err)
					}
				}
			}
			err := l.run(context.Background(), Options{})
			var oe *OutputError
			if !errors.As(err, &oe) || oe.Key != c.key {
				t.Fatalf("err = %v, want an OutputError of %s", err, c.key)
			}
			if rows := csvRowsOf(t, cfg.CSVPath()); len(rows) != 1+c.rows {
				t.Errorf("output.csv has %d rows, want a header and %d epochs", len(rows), c.rows)
			}
			b, err := os.ReadFile(cfg.LogPath())
			if err != nil || bytes.Count(b, []byte("\n")) != c.rows {
				t.Errorf("output.log: %d lines (%v), want %d", bytes.Count(b, []byte("\n")), err, c.rows)
			}
		})
	}
}

// validCheckpoint is a checkpoint after 3 of 10 epochs, best at epoch 1.
func validCheckpoint() *checkpoint {
	return &checkpoint{
		meta: checkpointMeta{StateVersion: checkpointStateVersion, NextEpoch: 3, BestEpoch: 1, HasBest: true, BestValidAcc: 0.5, TrainAcc: 1, SinceBest: 1,
			OptimizerStep: 3, Records: []EpochRecord{{Epoch: 0}, {Epoch: 1}, {Epoch: 2}}, TimesS: []float64{1, 1, 1}},
		arrays: map[string][]float64{"param/l0.w": {1, 2}, "best/l0.w": {1, 2}, "opt/m/l0.w": {0, 0}, "state/l0.mean": {0}},
	}
}

// TestCheckpointMeaning refuses checkpoints whose checksum is valid but
// whose contents are impossible, naming the field.
func TestCheckpointMeaning(t *testing.T) {
	if err := validCheckpoint().check("ck.bin", 10); err != nil {
		t.Fatalf("valid checkpoint refused: %v", err)
	}
	cases := map[string]struct {
		edit func(c *checkpoint)
		want string
	}{
		"negative next epoch":  {func(c *checkpoint) { c.meta.NextEpoch = -5 }, "next_epoch = -5 is outside [1, 10]"},
		"next epoch 0":         {func(c *checkpoint) { c.meta.NextEpoch = 0 }, "next_epoch = 0"},
		"next epoch 1e15":      {func(c *checkpoint) { c.meta.NextEpoch = 1e15 }, "next_epoch = 1000000000000000"},
		"best epoch ahead":     {func(c *checkpoint) { c.meta.BestEpoch = 3 }, "best_epoch = 3"},
		"best without params":  {func(c *checkpoint) { c.meta.HasBest = false }, "has_best = false"},
		"accuracy 5":           {func(c *checkpoint) { c.meta.BestValidAcc = 5 }, "best_valid_acc = 5 is not an accuracy"},
		"negative accuracy":    {func(c *checkpoint) { c.meta.TestAcc = -0.5 }, "test_acc = -0.5"},
		"negative patience":    {func(c *checkpoint) { c.meta.SinceBest = -1 }, "since_best = -1"},
		"negative step":        {func(c *checkpoint) { c.meta.OptimizerStep = -2 }, "optimizer_step = -2"},
		"records out of order": {func(c *checkpoint) { c.meta.Records[1].Epoch = 2 }, "records [1] is epoch 2"},
		"too many times":       {func(c *checkpoint) { c.meta.TimesS = make([]float64, 4) }, "records and times hold more epochs"},
		"newer version":        {func(c *checkpoint) { c.meta.StateVersion = 3 }, "state version 3"},
		"NaN parameter":        {func(c *checkpoint) { c.arrays["param/l0.w"][1] = math.NaN() }, "array param/l0.w [1] = NaN is not finite"},
		"Inf optimizer state":  {func(c *checkpoint) { c.arrays["opt/m/l0.w"][0] = math.Inf(1) }, "array opt/m/l0.w [0] = +Inf"},
		"NaN batch-norm state": {func(c *checkpoint) { c.arrays["state/l0.mean"][0] = math.NaN() }, "array state/l0.mean"},
		"best params missing":  {func(c *checkpoint) { delete(c.arrays, "best/l0.w") }, "array best/l0.w is missing"},
	}
	for name, c := range cases {
		ck := validCheckpoint()
		c.edit(ck)
		err := ck.check("ck.bin", 10)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ck.bin: ") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestModelMeaning refuses models whose checksum is valid but whose
// contents are impossible.
func TestModelMeaning(t *testing.T) {
	valid := func() (*ModelMeta, map[string][]float64) {
		return &ModelMeta{Features: 4, Classes: 3, Params: 2, BestEpoch: 2, BestValidAcc: 0.75}, map[string][]float64{"param/l0.w": {1, -1}}
	}
	if m, a := valid(); m.check("m.model", a) != nil {
		t.Fatalf("valid model refused: %v", m.check("m.model", a))
	}
	cases := map[string]struct {
		edit func(m *ModelMeta, a map[string][]float64)
		want string
	}{
		"accuracy 5":    {func(m *ModelMeta, _ map[string][]float64) { m.BestValidAcc = 5 }, "best_valid_acc = 5"},
		"no features":   {func(m *ModelMeta, _ map[string][]float64) { m.Features = 0 }, "features = 0"},
		"one class":     {func(m *ModelMeta, _ map[string][]float64) { m.Classes = 1 }, "classes = 1"},
		"NaN parameter": {func(_ *ModelMeta, a map[string][]float64) { a["param/l0.w"][0] = math.NaN() }, "array param/l0.w [0] = NaN"},
	}
	for name, c := range cases {
		m, a := valid()
		c.edit(m, a)
		if err := m.check("m.model", a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestDatasetIdentity: another split, other labels or another size is
// another dataset; the source path alone is not. A checkpoint without an
// identity (state version 1) resumes with one warning.
func TestDatasetIdentity(t *testing.T) {
	ds := func() *graph.Dataset {
		g := graph.FromEdges(4, [][2]int64{{0, 1}, {1, 2}, {2, 3}})
		return &graph.Dataset{Source: "a", NumNodes: 4, Graph: g, Labels: []int32{0, 1, 0, 1}, NumClasses: 2, Train: []int32{0, 1}, Valid: []int32{2}, Test: []int32{3}}
	}
	base := identify(ds(), 8)
	moved := ds()
	moved.Source = "b"
	if !base.same(identify(moved, 8)) {
		t.Errorf("a moved dataset is another one")
	}
	edits := map[string]func(d *graph.Dataset){
		"split":  func(d *graph.Dataset) { d.Valid, d.Test = d.Test, d.Valid },
		"sizes":  func(d *graph.Dataset) { d.Train, d.Valid = []int32{0}, []int32{1, 2} },
		"labels": func(d *graph.Dataset) { d.Labels[3] = 0 },
	}
	for name, edit := range edits {
		d := ds()
		edit(d)
		if base.same(identify(d, 8)) {
			t.Errorf("%s: the same identity", name)
		}
	}
	if base.same(identify(ds(), 9)) {
		t.Errorf("another feature width: the same identity")
	}
	ck := validCheckpoint()
	var warn bytes.Buffer
	if err := checkResumeDataset("ck.bin", ck, base, &warn); err != nil || !strings.Contains(warn.String(), "cannot be verified") {
		t.Errorf("version 1 checkpoint: %v, warning %q", err, warn.String())
	}
	ck.meta.Dataset = identify(moved, 8)
	d := ds()
	d.Valid, d.Test = d.Test, d.Valid
	if err := checkResumeDataset("ck.bin", ck, identify(d, 8), nil); err == nil || !strings.Contains(err.Error(), "the data changed") {
		t.Errorf("another split: %v", err)
	}
	if err := checkResumeDataset("ck.bin", ck, base, nil); err != nil {
		t.Errorf("the same data: %v", err)
	}
}
