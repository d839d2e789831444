package index

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/experiments/runner"
	_ "strata/plugins/all" // the plugins the experiments name
)

// TestReadmeIndexCurrent: the index in experiments/README.md is what
// `strata experiment --index` generates from the experiment files and
// their committed results: every experiment listed, its time measured.
func TestReadmeIndexCurrent(t *testing.T) {
	readme := filepath.Join("..", "..", "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Build(context.Background(), filepath.Dir(readme))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(readme, data, Table(entries))
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(data) {
		t.Errorf("experiments/README.md's index is stale (an experiment file or its results changed): run `make experiments-index` and commit the README")
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "*.toml"))
	if len(entries) != len(files) || len(files) == 0 {
		t.Errorf("%d entries for %d experiment files", len(entries), len(files))
	}
}

func TestSweepAndTable(t *testing.T) {
	e, err := runner.Parse("x.toml", []byte(`mirrors = "Fig. 1"
metrics = ["test_acc"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [1, 2, 3, 4, 5, 6, 7]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
zip = "m"
[[axis]]
key = "train.lr"
values = [0.1, 0.2]
zip = "m"
labels = ["fast", "slow"]
[base.data]
dataset = "embedded:cora"
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sweep(e), "model.hidden: 1, 2, 3, …, 7 (7) × model.name / train.lr: gcn, sage × seeds 0, 1"; got != want {
		t.Errorf("sweep %q, want %q", got, want)
	}
	tab := Table([]Entry{
		{Name: "x", File: "x.toml", Mirrors: "Fig. 1 | 2", Sweep: "s", Kind: "train", Runs: 28, Subset: 1, HasResult: true, RunTimeS: 150, Finished: 27, Machine: "AMD EPYC, 2 cores", Revision: "0123456789ab"},
		{Name: "y", File: "y.toml", Kind: "hitratio", Runs: 3},
	})
	for _, w := range []string{
		"| [x](x.toml) ([report](results/x/report.html), [summary](results/x/summary.md)) | Fig. 1 \\| 2 | s | train | 28 | 1 | 2.5 min (27 of 28 runs finished) | AMD EPYC, 2 cores | 0123456789ab |",
		"| [y](y.toml) | – | – | hitratio | 3 | 0 | no results | – | – |",
		"2 experiments; their runs took 2.5 min in total",
	} {
		if !strings.Contains(tab, w) {
			t.Errorf("table lacks %q:\n%s", w, tab)
		}
	}
	for s, want := range map[float64]string{5: "5 s", 89: "89 s", 150: "2.5 min", 7200: "2.0 h"} {
		if got := duration(s); got != want {
			t.Errorf("duration(%v) = %q, want %q", s, got, want)
		}
	}
}
