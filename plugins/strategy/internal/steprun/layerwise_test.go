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
	ctx := context.Background()
	for _, model := range testkit.BettyModels() {
		for _, chunks := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d-chunks", model, chunks), func(t *testing.T) {
				e := testkit.TestEnv(t, append(testkit.ModelSets(model), `train.dtype="float64"`)...)
				n, c := e.DS.NumNodes, e.DS.NumClasses
				rows := make([]int32, n)
				for i := range rows {
					rows[i] = int32(i)
				}
				run := func(layerwise bool) ([]int32, []float64) {
					r, err := steprun.NewRunner(e, chunks)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Release()
					if layerwise {
						if err := r.EnableLayerwise(); err != nil {
							t.Fatal(err)
						}
					}
					pred, logits := make([]int32, n), make([]float64, n*c)
					if err := r.PredictScores(ctx, pred, rows, logits); err != nil {
						t.Fatal(err)
					}
					return pred, logits
				}
				pb, lb := run(false)
				pl, ll := run(true)
				scale, diff := 0.0, 0.0
				for i := range lb {
					scale, diff = max(scale, math.Abs(lb[i])), max(diff, math.Abs(lb[i]-ll[i]))
				}
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
	ctx := context.Background()
	logits := func(capacity int64) ([]float64, int64, int64) {
		sets := []string{`train.dtype="float64"`, `train.backend="sim"`, fmt.Sprintf("devices.memory_bytes=%d", capacity)}
		e := testkit.TestEnv(t, sets...)
		r, err := steprun.NewRunner(e, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		if err := r.EnableLayerwise(); err != nil {
			t.Fatal(err)
		}
		n, c := e.DS.NumNodes, e.DS.NumClasses
		rows := make([]int32, n)
		for i := range rows {
			rows[i] = int32(i)
		}
		inUse := e.Be.Stats().InUse[e.Tier]
		if pr, ok := e.Be.(backend.PeakResetter); ok {
			pr.ResetPeak()
		}
		out := make([]float64, n*c)
		if err := r.PredictScores(ctx, make([]int32, n), rows, out); err != nil {
			t.Fatalf("capacity %d: %v", capacity, err)
		}
		return out, e.Be.Stats().Peak[e.Tier] - inUse, inUse
	}
	ref, pass, resident := logits(0)
	got, _, _ := logits(resident + pass/2) // without halving: out of memory
	scale, diff := 0.0, 0.0
	for i := range ref {
		scale, diff = max(scale, math.Abs(ref[i])), max(diff, math.Abs(ref[i]-got[i]))
	}
	if diff > testkit.SplitTol*scale {
		t.Fatalf("halved chunks: logits differ by %.3g (largest %.3g)", diff, scale)
	}
}

// TestLayerwiseKeepsFeatures: a chunk of every node reads the feature
// matrix in place (float32 on the cpu); evaluating twice gives the same
// logits bit for bit and leaves the features as they were.
func TestLayerwiseKeepsFeatures(t *testing.T) {
	ctx := context.Background()
	for _, model := range testkit.BettyModels() {
		t.Run(model, func(t *testing.T) {
			e := testkit.TestEnv(t, testkit.ModelSets(model)...)
			before := slices.Clone(e.Feats)
			r, err := steprun.NewRunner(e, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			if err := r.EnableLayerwise(); err != nil {
				t.Fatal(err)
			}
			n, c := e.DS.NumNodes, e.DS.NumClasses
			rows := make([]int32, n)
			for i := range rows {
				rows[i] = int32(i)
			}
			logits := func() []float64 {
				out := make([]float64, n*c)
				if err := r.PredictScores(ctx, make([]int32, n), rows, out); err != nil {
					t.Fatal(err)
				}
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
