package steprun_test

import (
	"testing"

	"strata/plugins/strategy/internal/testkit"
)

// TestEntriesMatchDense: layer-wise inference with the features held by
// their non-zeros (Env.UseSparseInput: the first layer binds each chunk's
// entries, or its dense rows where the model reads the input other than
// by a matmul, GIN's aggregation of x) computes the logits of the dense
// features with the first layer's sums in another order only, so the two
// agree to testkit.SplitTol relative to the largest logit (float64, as
// TestLayerwiseMatchesBlocks).
func TestEntriesMatchDense(t *testing.T) {
	for _, model := range testkit.BettyModels() {
		t.Run(model, func(t *testing.T) {
			e := testkit.TestEnv(t, append(testkit.ModelSets(model), `train.dtype="float64"`)...)
			_, dense := scores(t, runner(t, e, 1, true))
			if !e.UseSparseInput() {
				t.Fatal("Cora's features (1.3% non-zero) not held sparse")
			}
			_, sparse := scores(t, runner(t, e, 1, true))
			if diff, scale := logitDiff(dense, sparse); scale == 0 || diff > testkit.SplitTol*scale {
				t.Fatalf("logits differ by %.3g (largest %.3g), want <= %.3g relative", diff, scale, testkit.SplitTol)
			}
		})
	}
}
