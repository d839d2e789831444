package strategytests

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/graph/numpy"
	"strata/core/train"
	"strata/core/train/strategytest"
	"strata/plugins/strategy/internal/testkit"
)

// targetsDir writes Cora with float targets of kind
// (graphtest.ToTargets) as a .npy directory.
func targetsDir(t *testing.T, kind graph.TargetKind) string {
	t.Helper()
	ds, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	graphtest.ToTargets(ds, kind)
	dir := filepath.Join(t.TempDir(), "cora-"+strings.ReplaceAll(kind.String(), "-", ""))
	if _, err := numpy.WriteNPYDir(dir, ds); err != nil {
		t.Fatal(err)
	}
	return dir
}

// targetsBase is Cora's config over a targets directory.
func targetsBase(dir string, kind graph.TargetKind) string {
	base := strings.Replace(testkit.CoraBase, `"embedded:cora"`, fmt.Sprintf("%q", dir), 1)
	if kind == graph.Regression {
		base = strings.Replace(base, "[train]\n", "[train]\ntask = \"regression\"\n", 1)
	}
	return base
}

// TestTargetsLearn trains multi-label (BCE) and regression (MSE) targets
// on Cora: the loss falls from the first epoch to the fortieth, and the
// figures that score the outputs beat a model that learned nothing
// (ROC-AUC 0.5, R² 0).
func TestTargetsLearn(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		kind    graph.TargetKind
		metrics string
		check   func(r *train.Result) error
	}{
		{graph.MultiLabel, `["roc_auc", "macro_f1"]`, func(r *train.Result) error {
			if auc := r.Metrics["test_roc_auc"]; !(auc > 0.8) || !(r.TestAcc > 0.75) {
				return fmt.Errorf("test ROC-AUC %v, element-wise accuracy %v; want above 0.8 and 0.75", auc, r.TestAcc)
			}
			return nil
		}},
		{graph.Regression, `["r2", "mse"]`, func(r *train.Result) error {
			if r2 := r.Metrics["test_r2"]; r2 != r.TestAcc || !(r2 > 0.3) {
				return fmt.Errorf("test R² %v (test_acc %v); want it above 0.3, and test_acc the same", r2, r.TestAcc)
			}
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.kind.String(), func(t *testing.T) {
			base := targetsBase(targetsDir(t, c.kind), c.kind)
			var loss [2]float64
			var last *train.Result
			for i, epochs := range []int{1, 60} {
				res, err := train.Run(ctx, testkit.MustParse(t, base, fmt.Sprintf("train.epochs=%d", epochs), "train.metrics="+c.metrics, "train.lr=0.05"), train.Options{Host: testkit.TestHost(t)})
				if err != nil {
					t.Fatal(err)
				}
				loss[i], last = res.FinalLoss, res
				t.Logf("%d epochs: loss %v, accuracies %v %v %v, %v", epochs, res.FinalLoss, res.TrainAcc, res.BestValidAcc, res.TestAcc, res.Metrics)
			}
			if !(loss[1] < 0.7*loss[0]) {
				t.Errorf("loss %v after one epoch, %v after 60: want it below 70%%", loss[0], loss[1])
			}
			if err := c.check(last); err != nil {
				t.Error(err)
			}
			if last.Targets != c.kind.String() {
				t.Errorf("result targets %q, want %q (what its *_acc fields hold)", last.Targets, c.kind.String())
			}
		})
	}
}

// TestTargetsSplitsMatchFullGraph: with float64 and every dropout on,
// chunks, micro-batches, ranks and one full-neighbour mini-batch give
// full-graph training's loss for both kinds of targets, to the bound of
// TestSplitsMatchFullGraph (testkit.SplitTol), since the float targets
// are gathered per row as labels are.
func TestTargetsSplitsMatchFullGraph(t *testing.T) {
	ctx := context.Background()
	variants := []splitVariant{
		{name: "chunked/4", sets: []string{`train.mode="chunked"`, "chunked.chunks=4"}},
		{name: "micro/2", sets: []string{"train.micro_batches=2", `partition.name="metis"`}},
		{name: "micro/4", sets: []string{"train.micro_batches=4", `partition.name="random"`}},
		{name: "minibatch/full-neighbour", sets: []string{`train.mode="minibatch"`, `sampler.name="full"`, "sampler.layers=2", "train.batch_size=100000"}},
	}
	for _, kind := range []graph.TargetKind{graph.MultiLabel, graph.Regression} {
		base := targetsBase(targetsDir(t, kind), kind)
		sets := append(testkit.SplitDropouts("gcn"), `train.dtype="float64"`, "train.epochs=2")
		full, err := train.Run(ctx, testkit.MustParse(t, base, sets...), train.Options{Host: testkit.TestHost(t)})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range variants {
			t.Run(kind.String()+"/"+v.name, func(t *testing.T) {
				got, err := train.Run(ctx, testkit.MustParse(t, base, append(sets, v.sets...)...), train.Options{Host: testkit.TestHost(t)})
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(full.FinalLoss-got.FinalLoss) / full.FinalLoss; d > testkit.SplitTol {
					t.Errorf("final loss: full graph %.15g, %s %.15g (relative difference %.2g)", full.FinalLoss, v.name, got.FinalLoss, d)
				}
			})
		}
	}
}

// TestTargetsErrors: a task, metric or strategy that cannot go with the
// targets is refused before training, naming the key and the choices.
func TestTargetsErrors(t *testing.T) {
	ctx := context.Background()
	multi, reg := targetsDir(t, graph.MultiLabel), targetsDir(t, graph.Regression)
	cases := []struct {
		name string
		base string
		sets []string
		want []string
	}{
		{"unknown task", testkit.CoraBase, []string{`train.task="edge"`}, []string{"train.task", `"edge"`, `"node"`, `"regression"`, `"link"`}},
		{"regression of classes", testkit.CoraBase, []string{`train.task="regression"`}, []string{"train.task", "needs real-valued targets", "holds class labels"}},
		{"r2 of classes", testkit.CoraBase, []string{`train.metrics=["r2"]`}, []string{"train.metrics", `"r2" does not apply to train.task = "node"`, `"roc_auc"`}},
		{"accuracy of regression", targetsBase(reg, graph.Regression), []string{`train.metrics=["accuracy"]`}, []string{"train.metrics", `"accuracy" does not apply to train.task = "regression"`, `"r2"`}},
		{"a strategy without outputs", targetsBase(multi, graph.MultiLabel), []string{`train.mode="hybrid"`, `sampler.name="uniform"`, "sampler.fanouts=[5,5]", "hybrid.cpu_share=1"}, []string{"train.mode", "multi-label targets", "no train.Scorer"}},
		{"a per-class split", targetsBase(multi, graph.MultiLabel), []string{`data.split="random-20-30-seed0"`}, []string{"draws per class", "multi-label targets", "train_idx.npy"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse("test.toml", []byte(c.base), c.sets...)
			if err == nil {
				cfg.Output.Progress = "off"
				_, err = train.Run(ctx, cfg, train.Options{Host: testkit.TestHost(t)})
			}
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v, want it to mention %s", err, w)
				}
			}
		})
	}
}

// TestTargetsResume: a regression run interrupted after epoch 2, whose
// checkpoint holds negative R² accuracies (checked as R², not as
// accuracies in [0, 1]), resumes to the uninterrupted run's result.
func TestTargetsResume(t *testing.T) {
	base := targetsBase(targetsDir(t, graph.Regression), graph.Regression)
	whole := strategytest.ResumeEqual(t, func(sets ...string) *config.Config { return testkit.MustParse(t, base, sets...) }, testkit.TestHost(t))
	if !(whole.TrainAcc < 0) {
		t.Errorf("train R² %v after 3 epochs: want it below 0 for the test to mean something", whole.TrainAcc)
	}
}
