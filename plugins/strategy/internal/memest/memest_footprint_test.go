package memest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"strata/core/ir"
	"strata/plugins/sampler"
	"strata/plugins/strategy/internal/steprun"
	"strata/plugins/strategy/internal/testkit"
)

// TestMemEstimateInputs pins the cost model's inputs for a sampled batch
// of every shipped model (training, with and without accumulated
// gradients, and inference). The engine's footprint (engine.Sizer)
// replaced the estimator's own walk over the op graph after matching it on
// every shipped model; since the engine plans its buffers by lifetime
// (core/engine/liveness.go) the values and gradients share buffers, and
// dropout masks are made again in the backward pass instead of kept, so
// the figures below are the planned ones (TestSizerMatchesBind checks
// them against what Bind allocates and a step's measured peak). A
// training binding's index words (in[11]) hold the dropouts' row keys,
// two words per source of each block (495 + 252 here); gat and gin also
// hold the row ids of a narrowed value's 316 destinations, where sage's
// root term reads its destination rows in place (engine: narrows pushed
// below row-wise ops).
func TestMemEstimateInputs(t *testing.T) {
	ctx := context.Background()
	golden := []struct {
		model      string
		acc, infer bool
		in         []float64
	}{
		{"gcn", false, false, []float64{4, 23063, 2, 709335, 64, 1201, 1067, 727531, 448, 0, 0, 1494, 0, 6, 0, 0}},
		{"gcn", true, false, []float64{4, 23063, 2, 709335, 64, 1201, 1067, 727531, 448, 0, 23, 1494, 0, 6, 0, 0}},
		{"gcn", false, true, []float64{4, 23063, 2, 709335, 64, 1201, 1067, 14164, 0, 0, 0, 0, 0, 6, 0, 0}},
		{"sage", false, false, []float64{4, 46103, 2, 709335, 64, 885, 1067, 727979, 0, 0, 0, 1494, 0, 6, 0, 0}},
		{"sage", true, false, []float64{4, 46103, 2, 709335, 64, 885, 1067, 727979, 0, 0, 23, 1494, 0, 6, 0, 0}},
		{"sage", false, true, []float64{4, 46103, 2, 709335, 64, 885, 1067, 18644, 0, 0, 0, 0, 0, 6, 0, 0}},
		{"gat", false, false, []float64{4, 23109, 2, 709335, 64, 1201, 1067, 732692, 11333, 0, 0, 1810, 0, 6, 0, 0}},
		{"gat", true, false, []float64{4, 23109, 2, 709335, 64, 1201, 1067, 732692, 11333, 0, 23, 1810, 0, 6, 0, 0}},
		{"gat", false, true, []float64{4, 23109, 2, 709335, 64, 1201, 1067, 18124, 0, 0, 0, 316, 0, 6, 0, 0}},
		{"gin", false, false, []float64{4, 23391, 2, 709335, 64, 885, 1067, 736491, 448, 0, 0, 1810, 0, 6, 0, 0}},
		{"gin", true, false, []float64{4, 23391, 2, 709335, 64, 885, 1067, 736491, 448, 0, 23, 1810, 0, 6, 0, 0}},
		{"gin", false, true, []float64{4, 23391, 2, 709335, 64, 885, 1067, 18644, 0, 0, 0, 316, 0, 6, 0, 0}},
		{"sage-lstm", false, false, []float64{4, 217719, 2, 709335, 64, 885, 1709, 824023, 0, 0, 19520, 1494, 28320, 6, 0, 0}},
		{"sage-lstm", true, false, []float64{4, 217719, 2, 709335, 64, 885, 1709, 824023, 0, 0, 23751, 1494, 28320, 6, 0, 0}},
		{"sage-lstm", false, true, []float64{4, 217719, 2, 709335, 64, 885, 1709, 163072, 0, 0, 0, 0, 0, 6, 0, 0}},
	}
	envs := map[string]steprun.Env{}
	for _, c := range golden {
		if _, ok := envs[c.model]; !ok && slices.Contains(testkit.BettyModels(), c.model) {
			envs[c.model] = testkit.TestEnv(t, testkit.ModelSets(c.model)...)
		}
	}
	for _, c := range golden {
		e, ok := envs[c.model]
		if !ok {
			continue
		}
		t.Run(fmt.Sprintf("%s/acc=%v/infer=%v", c.model, c.acc, c.infer), func(t *testing.T) {
			fan := make([]int, len(steprun.GraphsPerLayer(e.Model)))
			for l := range fan {
				fan[l] = 3 + 2*l
			}
			blocks, err := (&sampler.Uniform{Fanouts: fan}).Sample(ctx, e.Adjs.Adj, slices.Clone(e.DS.Train[:64]), 1)
			if err != nil {
				t.Fatal(err)
			}
			est, err := New(ctx, e, "adam", 0, c.acc)
			if err != nil {
				t.Fatal(err)
			}
			defer est.Close()
			var state float64
			for _, op := range e.Model.Ops {
				if op.Kind == ir.OpBatchNorm {
					state += 2 * float64(op.Shape[1])
				}
			}
			if est.Params != float64(e.Model.NumParams()) || est.State != state {
				t.Errorf("%v learnable scalars and %v state, want %d and %v", est.Params, est.State, e.Model.NumParams(), state)
			}
			got, _, err := est.inputs(blocks, c.infer)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.in) {
				t.Errorf("inputs\n got %v\nwant %v", got, c.in)
			}
		})
	}
}
