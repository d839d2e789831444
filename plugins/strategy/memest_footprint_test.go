package strategy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"strata/core/ir"
	"strata/plugins/sampler"
)

// TestMemEstimateFootprintMatchesLegacy compares the cost model's inputs
// from the engine's footprint with those of the estimator's own walk over
// the op graph, on every shipped model, training (accumulating or not) and
// inference, over full-neighbour and sampled blocks of Cora.
func TestMemEstimateFootprintMatchesLegacy(t *testing.T) {
	ctx := context.Background()
	for _, model := range bettyModels() {
		e := testEnv(t, modelSets(model)...)
		hops := len(graphsPerLayer(e.model))
		train := e.ds.Train
		seedSets := [][]int32{train[:1], train[:7], train[:64], train, {0, 5, 2707}}
		var batches [][]sampler.Block
		for i, seeds := range seedSets {
			full, err := (&sampler.Full{Hops: hops}).Sample(ctx, e.adjs.Adj, slices.Clone(seeds), 0)
			if err != nil {
				t.Fatal(err)
			}
			fan := make([]int, hops)
			for l := range fan {
				fan[l] = 3 + 2*l
			}
			sampled, err := (&sampler.Uniform{Fanouts: fan}).Sample(ctx, e.adjs.Adj, slices.Clone(seeds), uint64(i+1))
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, full, sampled)
		}
		for _, acc := range []bool{false, true} {
			est, err := newMemEstimator(ctx, e, "adam", 0, acc)
			if err != nil {
				t.Fatal(err)
			}
			var state float64
			for _, op := range e.model.Ops {
				if op.Kind == ir.OpBatchNorm {
					state += 2 * float64(op.Shape[1])
				}
			}
			if est.params != float64(e.model.NumParams()) || est.state != state {
				t.Errorf("%s: %v learnable scalars and %v state, want %d and %v", model, est.params, est.state, e.model.NumParams(), state)
			}
			for _, infer := range []bool{false, true} {
				for b, blocks := range batches {
					t.Run(fmt.Sprintf("%s/acc=%v/infer=%v/%d", model, acc, infer, b), func(t *testing.T) {
						want, err := est.legacyInputs(blocks, infer)
						if err != nil {
							t.Fatal(err)
						}
						got, err := est.inputs(blocks, infer)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(got, want) {
							t.Errorf("inputs\n got %v\nwant %v", got, want)
						}
					})
				}
			}
			est.Close()
		}
	}
}
