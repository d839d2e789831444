package strategytests

import (
	"testing"

	"strata/plugins/strategy/internal/testkit"
)

// TestClippedSplitsMatchFullGraph is TestSplitsMatchFullGraph with
// train.grad_clip on, under SGD with momentum (whose step is
// proportional to the clipped gradient, unlike Adam's): every split
// (chunks, micro-batches, ranks, one full-neighbour mini-batch) clips the
// norm of the whole step's gradient, after accumulation and all-reduce,
// so it steps as full-graph training does. Clipping per chunk or
// micro-batch, or per rank before the all-reduce, would scale each part
// by its own factor. The bound is splitTol's: the clipping factor is the
// quotient by a norm whose sum of squares has the same relative error as
// the gradients' sums. The test also checks that the clip was active: the
// clipped full-graph run steps differently from the unclipped one.
func TestClippedSplitsMatchFullGraph(t *testing.T) {
	sets := append(append(testkit.ModelSets("gcn"), testkit.SplitDropouts("gcn")...), `train.dtype="float64"`, `data.dataset="embedded:cora"`,
		"data.symmetrize=true", "model.layers=2", "train.eval_every=0", `train.optimizer="sgd"`, "train.momentum=0.9", "train.lr=0.5",
		"train.lr_schedule.name=step", "train.lr_schedule.step_size=1", "train.lr_schedule.gamma=0.5")
	clipped := append(append([]string(nil), sets...), "train.grad_clip=0.01")
	want := runSplit(t, 2, 0, clipped...)
	if unclipped := runSplit(t, 2, 0, sets...); testkit.RelDiff(unclipped[1].Params, want[1].Params) < 1e-3 {
		t.Fatalf("grad_clip = 0.01 changed the parameters by %.3g only: the clip was not active", testkit.RelDiff(unclipped[1].Params, want[1].Params))
	}
	// One variant of each kind that splits a step, and its largest split.
	run := map[string]bool{"chunked/4/recompute": true, "micro/4": true, "distfull/2": true}
	if !testing.Short() {
		run["chunked/8/hybrid"], run["micro/2"], run["distfull/4"], run["minibatch/full-neighbour"] = true, true, true, true
	}
	for _, v := range splitVariants() {
		if !run[v.name] {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			got := runSplit(t, 2, v.ranks, append(append([]string(nil), clipped...), v.sets...)...)
			testkit.CompareSteps(t, got, want, testkit.SplitTol, testkit.SplitTol)
		})
	}
}
