package steprun_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/plugins/strategy/internal/steprun"
	"strata/plugins/strategy/internal/testkit"
)

// TestLayerwiseMatchesBlocks: layer-wise inference computes every node's
// logits with the same sums as the L-hop blocks, in another order only
// where a GEMM blocks its rows differently, so the two agree to
// testkit.SplitTol relative to the largest logit, in any chunking.
func TestLayerwiseMatchesBlocks(t *testing.T) {
	for _, model := range testkit.BettyModels() {
		for _, chunks := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d-chunks", model, chunks), func(t *testing.T) {
				e := testkit.TestEnv(t, append(testkit.ModelSets(model), `train.dtype="float64"`)...)
				pb, lb := scores(t, runner(t, e, chunks, false))
				pl, ll := scores(t, runner(t, e, chunks, true))
				c := e.DS.NumClasses
				diff, scale := logitDiff(lb, ll)
				if scale == 0 || diff > testkit.SplitTol*scale {
					t.Fatalf("logits differ by %.3g (largest %.3g), want <= %.3g relative", diff, scale, testkit.SplitTol)
				}
				for i := range pb {
					if pb[i] != pl[i] && math.Abs(lb[i*c+int(pb[i])]-lb[i*c+int(pl[i])]) > testkit.SplitTol*scale {
						t.Fatalf("node %d: class %d layer-wise, %d over blocks, not a tie", i, pl[i], pb[i])
					}
				}
			})
		}
	}
}

// TestLayerwiseNeedsLayers: a model whose last layer reads every layer's
// output (jumping knowledge over 3 layers) is refused.
func TestLayerwiseNeedsLayers(t *testing.T) {
	e := testkit.TestEnv(t, `model.jk="cat"`, `model.layers=3`)
	r, err := steprun.NewRunner(e, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if err := r.EnableLayerwise(); err == nil || !strings.Contains(err.Error(), "layer-wise") {
		t.Fatalf("jk over 3 layers: %v, want a layer-wise inference error", err)
	}
}

// TestLayerwiseHalvesChunks: on a simulated device with room for about
// half of a layer's one-hop pass over every node, layer-wise inference
// halves the chunks that run out of memory and gives the logits of the
// unlimited device, to rounding (SplitTol, as above).
func TestLayerwiseHalvesChunks(t *testing.T) {
	logits := func(capacity int64) ([]float64, int64, int64) {
		sets := []string{`train.dtype="float64"`, `train.backend="sim"`, fmt.Sprintf("devices.memory_bytes=%d", capacity)}
		e := testkit.TestEnv(t, sets...)
		r := runner(t, e, 1, true)
		inUse := e.Be.Stats().InUse[e.Tier]
		if pr, ok := e.Be.(backend.PeakResetter); ok {
			pr.ResetPeak()
		}
		_, out := scores(t, r)
		return out, e.Be.Stats().Peak[e.Tier] - inUse, inUse
	}
	ref, pass, resident := logits(0)
	got, _, _ := logits(resident + pass/2) // without halving: out of memory
	if diff, scale := logitDiff(ref, got); diff > testkit.SplitTol*scale {
		t.Fatalf("halved chunks: logits differ by %.3g (largest %.3g)", diff, scale)
	}
}

// TestLayerwiseKeepsFeatures: a chunk of every node reads the feature
// matrix in place (float32 on the cpu); evaluating twice gives the same
// logits bit for bit and leaves the features as they were.
func TestLayerwiseKeepsFeatures(t *testing.T) {
	for _, model := range testkit.BettyModels() {
		t.Run(model, func(t *testing.T) {
			e := testkit.TestEnv(t, testkit.ModelSets(model)...)
			before := slices.Clone(e.Feats)
			r := runner(t, e, 1, true)
			logits := func() []float64 {
				_, out := scores(t, r)
				return out
			}
			if a, b := logits(), logits(); !slices.Equal(a, b) {
				t.Error("two evaluations differ")
			}
			if !slices.Equal(before, e.Feats) {
				t.Error("evaluation changed the feature matrix")
			}
		})
	}
}

// runner returns a Runner over e with chunks evaluation chunks, layer by
// layer or over L-hop blocks, released when the test ends.
func runner(t *testing.T, e steprun.Env, chunks int, layerwise bool) *steprun.Runner {
	t.Helper()
	r, err := steprun.NewRunner(e, chunks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Release)
	if layerwise {
		if err := r.EnableLayerwise(); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// scores evaluates every node: its class and its logits.
func scores(t *testing.T, r *steprun.Runner) ([]int32, []float64) {
	t.Helper()
	n, c := r.Env.DS.NumNodes, r.Env.DS.NumClasses
	rows := make([]int32, n)
	for i := range rows {
		rows[i] = int32(i)
	}
	pred, logits := make([]int32, n), make([]float64, n*c)
	if err := r.PredictScores(context.Background(), pred, rows, logits); err != nil {
		t.Fatal(err)
	}
	return pred, logits
}

// logitDiff returns the largest difference between two logit vectors and
// the largest magnitude of the first.
func logitDiff(a, b []float64) (diff, scale float64) {
	for i := range a {
		scale, diff = max(scale, math.Abs(a[i])), max(diff, math.Abs(a[i]-b[i]))
	}
	return diff, scale
}
