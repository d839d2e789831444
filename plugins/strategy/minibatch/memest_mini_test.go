package minibatch

import (
	"context"
	"math"
	"slices"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/steprun"
	"strata/plugins/strategy/internal/testkit"
	"testing"
)

// TestMemEstimateInferenceAndSampled compares the estimate with the
// measured peak of an evaluation forward in chunks and of micro-batches of
// a sampled mini-batch.
func TestMemEstimateInferenceAndSampled(t *testing.T) {
	ctx := context.Background()
	models := []string{"sage", "gat"}
	if slices.Contains(testkit.BettyModels(), "sage-lstm") {
		models = append(models, "sage-lstm")
	}
	for _, model := range models {
		opts := testkit.ModelSets(model)
		t.Run(model+"/inference", func(t *testing.T) {
			e := testkit.TestEnv(t, append(opts, `train.backend="sim"`)...)
			r, err := steprun.NewRunner(e, 4)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			est, err := memest.New(ctx, e, "sgd", 0, false)
			if err != nil {
				t.Fatal(err)
			}
			defer est.Close()
			var worst int64
			for _, nodes := range r.Eval {
				blocks, err := r.Full.Sample(ctx, e.Adjs.Adj, nodes, 0)
				if err != nil {
					t.Fatal(err)
				}
				m, err := est.Infer(blocks)
				if err != nil {
					t.Fatal(err)
				}
				worst = max(worst, m.Peak)
			}
			if err := r.Predict(ctx, make([]int32, e.DS.NumNodes)); err != nil {
				t.Fatal(err)
			}
			peak := e.Be.Stats().Peak[e.Tier]
			t.Logf("inference: measured %d, estimated %d (%+.2f%%)", peak, worst, 100*float64(worst-peak)/float64(peak))
			if math.Abs(float64(worst-peak)) > 0.1*float64(peak) {
				t.Errorf("estimate %d, measured %d", worst, peak)
			}
		})
		t.Run(model+"/sampled", func(t *testing.T) {
			sets := append(slices.Clone(opts), `train.backend="sim"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]",
				"train.batch_size=140", "train.micro_batches=4", `partition.name="betty-reg"`)
			e := testkit.TestEnv(t, sets...)
			mb, err := newMiniBatches(ctx, testkit.MustParse(t, testkit.CoraBase, sets...), e)
			if err != nil {
				t.Fatal(err)
			}
			defer mb.release()
			testkit.StepWithState(t, ctx, mb, e.Be)
			peak := e.Be.Stats().Peak[e.Tier]
			est := mb.micro.estPeak
			t.Logf("sampled: measured %d, estimated %d (%+.2f%%)", peak, est, 100*float64(est-peak)/float64(peak))
			if math.Abs(float64(est-peak)) > 0.1*float64(peak) {
				t.Errorf("estimate %d, measured %d", est, peak)
			}
		})
	}
}
