package steprun_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/graph"
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

// TestLayerwiseHostRanges: on the host, layer-wise inference over every
// node in one piece splits each layer into the node ranges its budget
// allows, reading every node's rows in place or over the ranges' sampled
// blocks; a small budget gives the first layer several ranges; every
// layer's cover every node once, and the logits are those of the layer
// run in one piece to SplitTol relative to the largest logit (each
// destination row sums the same terms; a GEMM may block fewer rows
// differently), the same classes but for ties.
func TestLayerwiseHostRanges(t *testing.T) {
	tests := []struct {
		name    string
		sampled bool
		budget  int64 // Cora's float64 features are 31 MB; 2,708 destinations of 7 classes 150 KB
	}{
		{"in place", false, 256 << 10},
		{"sampled blocks", true, 4 << 20},
	}
	for _, tc := range tests {
		for _, model := range testkit.BettyModels() {
			t.Run(tc.name+"/"+model, func(t *testing.T) {
				e := testkit.TestEnv(t, append(testkit.ModelSets(model), `train.dtype="float64"`)...)
				pw, lw := scores(t, runner(t, e, 1, true))
				r := runner(t, e, 1, true)
				steprun.SetLayerwiseBudget(r, tc.budget)
				if tc.sampled {
					steprun.SetLayerwiseSampled(r)
				}
				pr, lr := scores(t, r)
				checkRanges(t, steprun.LayerwiseChunks(r), e.DS.NumNodes)
				diff, scale := logitDiff(lw, lr)
				if scale == 0 || diff > testkit.SplitTol*scale {
					t.Fatalf("logits differ by %.3g (largest %.3g), want <= %.3g relative", diff, scale, testkit.SplitTol)
				}
				c := e.DS.NumClasses
				for i := range pw {
					if pw[i] != pr[i] && math.Abs(lw[i*c+int(pw[i])]-lw[i*c+int(pr[i])]) > testkit.SplitTol*scale {
						t.Fatalf("node %d: class %d in ranges, %d in one piece, not a tie", i, pr[i], pw[i])
					}
				}
			})
		}
	}
}

// checkRanges checks that layer 0 ran in several ranges and that every
// layer's ranges cover the n nodes once, in order.
func checkRanges(t *testing.T, layers [][][]int32, n int) {
	t.Helper()
	for l, chunks := range layers {
		if l == 0 && len(chunks) < 2 {
			t.Errorf("layer 0 ran in %d range(s), want several", len(chunks))
		}
		next := int32(0)
		for _, c := range chunks {
			if c[0] != next {
				t.Fatalf("layer %d: a range starts at %d, want %d", l, c[0], next)
			}
			next = c[len(c)-1] + 1
		}
		if int(next) != n {
			t.Fatalf("layer %d: ranges end at %d, want %d", l, next, n)
		}
	}
}

// TestLayerwiseInPlaceFloat32: in float32, where the rows are used in
// place (the features, the previous layer's rows), ranges give the
// logits of one piece to float32 rounding of the longest sum (a GEMM's
// over the features, testkit.Float32StepTol) relative to the largest.
func TestLayerwiseInPlaceFloat32(t *testing.T) {
	for _, model := range testkit.BettyModels() {
		t.Run(model, func(t *testing.T) {
			e := testkit.TestEnv(t, testkit.ModelSets(model)...)
			_, lw := scores(t, runner(t, e, 1, true))
			r := runner(t, e, 1, true)
			steprun.SetLayerwiseBudget(r, 128<<10)
			_, lr := scores(t, r)
			checkRanges(t, steprun.LayerwiseChunks(r), e.DS.NumNodes)
			tol := testkit.Float32StepTol(e.Dim)
			if diff, scale := logitDiff(lw, lr); scale == 0 || diff > tol*scale {
				t.Fatalf("logits differ by %.3g (largest %.3g), want <= %.3g relative", diff, scale, tol)
			}
		})
	}
}

// TestRowsOf: the rows [lo, hi) of a graph keep their column ids and
// values in order, start at offset 0, and rows past the graph's are
// empty.
func TestRowsOf(t *testing.T) {
	// rows 0..2 of 5 columns: 0 -> {1, 4}, 1 -> {}, 2 -> {0, 2, 3}
	g := graph.MakeCSR(3, 5, []int64{0, 2, 2, 5}, []int32{1, 4, 0, 2, 3})
	g.Values = []float32{1, 2, 3, 4, 5}
	tests := []struct {
		lo, hi     int
		indptr     []int64
		cols       []int64
		values     []float32
		wantValues bool
	}{
		{0, 3, []int64{0, 2, 2, 5}, []int64{1, 4, 0, 2, 3}, []float32{1, 2, 3, 4, 5}, true},
		{1, 3, []int64{0, 0, 3}, []int64{0, 2, 3}, []float32{3, 4, 5}, true},
		{2, 5, []int64{0, 3, 3, 3}, []int64{0, 2, 3}, []float32{3, 4, 5}, true},
		{3, 5, []int64{0, 0, 0}, nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d-%d", tc.lo, tc.hi), func(t *testing.T) {
			got := steprun.RowsOf(g, tc.lo, tc.hi, 5)
			if got.NumRows != tc.hi-tc.lo || got.NumCols != 5 || !slices.Equal(got.Indptr, tc.indptr) {
				t.Fatalf("%d×%d, indptr %v; want %d×5, %v", got.NumRows, got.NumCols, got.Indptr, tc.hi-tc.lo, tc.indptr)
			}
			var cols []int64
			for k := range got.NNZ() {
				cols = append(cols, got.Col(k))
			}
			if !slices.Equal(cols, tc.cols) || !slices.Equal(got.Values, tc.values) {
				t.Fatalf("columns %v values %v, want %v %v", cols, got.Values, tc.cols, tc.values)
			}
		})
	}
}

// TestBalancedRanges: the ranges are non-empty, ascending, cover [0, n)
// and split the rows plus edges about evenly (node r ends at weight
// r + 1 + its in-edges so far); at most k of them, fewer where a node
// outweighs a share.
func TestBalancedRanges(t *testing.T) {
	// node 0 has 12 in-edges, the others 1 each (12 rows, 23 edges).
	cols := make([]int32, 0, 23)
	indptr := []int64{0}
	for r := range 12 {
		switch r {
		case 0:
			for c := 1; c <= 11; c++ {
				cols = append(cols, int32(c))
			}
			cols = append(cols, 1)
		default:
			cols = append(cols, 0)
		}
		indptr = append(indptr, int64(len(cols)))
	}
	g := graph.MakeCSR(12, 12, indptr, cols)
	for _, tc := range []struct {
		k    int
		want []int
	}{{1, []int{0, 12}}, {2, []int{0, 3, 12}}, {12, []int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12}}} {
		got := steprun.BalancedRanges(g, 12, tc.k)
		if !slices.Equal(got, tc.want) {
			t.Errorf("k=%d: %v, want %v", tc.k, got, tc.want)
		}
		if got[0] != 0 || got[len(got)-1] != 12 || len(got)-1 > tc.k {
			t.Errorf("k=%d: %v does not cover [0, 12) in at most k ranges", tc.k, got)
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Errorf("k=%d: %v has an empty range", tc.k, got)
			}
		}
	}
}

// TestLayerwiseBudget: a range of layer-wise inference on the host may
// hold a quarter of the memory budget, never less than 64 MiB (a small
// budget does not cut a small graph into ranges).
func TestLayerwiseBudget(t *testing.T) {
	const mib = int64(1) << 20
	tests := []struct {
		name            string
		maxMemory, want int64
	}{
		{"no budget", 0, 64 * mib},
		{"below the floor", 200 * mib, 64 * mib},
		{"one GiB", 1024 * mib, 256 * mib},
		{"18 GB", 18_000_000_000, 4_500_000_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := steprun.LayerwiseBudget(tc.maxMemory); got != tc.want {
				t.Fatalf("LayerwiseBudget(%d) = %d, want %d", tc.maxMemory, got, tc.want)
			}
		})
	}
}

// TestRangeBudget: an in-place range may add an eighth of its layer's
// rows of every node (input and output widths), never less than 64 MiB
// nor more than a quarter of the memory budget.
func TestRangeBudget(t *testing.T) {
	const mib = int64(1) << 20
	tests := []struct {
		name             string
		n, in, out, size int
		maxMemory, want  int64
	}{
		{"small graph: the floor", 2708, 1433, 16, 8, 18_000_000_000, 64 * mib},
		{"R-MAT 2^20, layer 0", 1 << 20, 128, 128, 4, 18_000_000_000, 128 * mib},
		{"R-MAT 2^20, layer 1", 1 << 20, 128, 16, 4, 18_000_000_000, 72 * mib},
		{"a small memory budget", 1 << 20, 128, 128, 4, 384 * mib, 96 * mib},
		{"no memory budget", 1 << 20, 128, 128, 4, 0, 64 * mib},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := steprun.RangeBudget(tc.n, tc.in, tc.out, tc.size, tc.maxMemory); got != tc.want {
				t.Fatalf("rangeBudget = %d, want %d", got, tc.want)
			}
		})
	}
}
