package chunked

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/plugins/strategy/internal/testkit"
)

// TestChunkedPrecomputeMatchesFullGraph trains with layer 0's
// aggregation of the features computed once (chunked.precompute: the
// rest of the layer runs once per node over it) and full-graph from the
// same initial parameters, the hidden dropout on, and compares the loss,
// the gradients and the parameters after every step to testkit.SplitTol
// (float64: the same sums in another order). It checks when the run
// precomputes (precomputed_width): GCN on R-MAT (32 features, 64
// hidden) aggregates its input first, so it does, on the cpu backend by
// default, in RAM and with a host file, and on sim when the key asks;
// not with input dropout (the aggregation differs every step), not for
// GraphSAGE (its root product reads the input beside the aggregation)
// nor GCN on Cora (1433 → 16: W first), and not when the key is off;
// where the key asks and the layer cannot, the announcement says why.
// Where layer 1 multiplies first (chunked.premultiply), its product and
// layer 0's rest run as one node pass (fuse.go).
func TestChunkedPrecomputeMatchesFullGraph(t *testing.T) {
	rmat := []string{`data.dataset="rmat-10-8-32-5-1"`, "data.symmetrize=true", "model.hidden=64"}
	cora := []string{`data.dataset="embedded:cora"`}
	rows := []struct {
		model   string
		data    []string
		backend string
		file    bool
		extra   []string
		width   int  // precomputed_width (0: none)
		fused   bool // layer 0's rest and layer 1's product in one node pass
	}{
		{"gcn", rmat, "cpu", true, nil, 32, true},
		{"gcn", rmat, "cpu", false, []string{`chunked.dedup="none"`, `chunked.intermediates="cache"`}, 32, true},
		{"gcn", rmat, "cpu", true, []string{`chunked.intermediates="split"`, `chunked.premultiply="off"`}, 32, false},
		{"gcn", rmat, "sim", false, []string{`chunked.precompute="input"`, `devices.preset="pcie-only"`, "devices.count=2"}, 32, false},
		{"gcn", rmat, "cpu", true, []string{`chunked.intermediates="recompute"`}, 32, true},
		{"gcn", rmat, "sim", false, nil, 0, false},
		{"gcn", append(slices.Clone(rmat), "model.input_dropout=0.3"), "cpu", false, nil, 0, false},
		{"gcn", rmat, "cpu", false, []string{`chunked.precompute="off"`}, 0, false},
		{"sage", rmat, "cpu", false, []string{`chunked.precompute="input"`}, 0, false},
		{"gcn", cora, "cpu", false, nil, 0, false},
	}
	if testing.Short() {
		rows = slices.Delete(rows, 1, 3)
	}
	for _, c := range rows {
		sets := append(append(testkit.ModelSets(c.model), "model.dropout=0.5", "model.input_dropout=0", "model.layers=2"), c.data...) // c.data's keys come last
		runAgainstFullGraph(t, c.model, c.backend, c.file, sets, c.extra, func(t *testing.T, r *chunkedRun) {
			if got := r.fixedFigure(); got != c.width {
				t.Fatalf("precomputed width %d, want %d", got, c.width)
			}
			if got := r.fused != nil; got != c.fused {
				t.Errorf("layers 0 and 1 fused %v, want %v", got, c.fused)
			}
			if c.width > 0 && r.modes()[0] != "precomputed" {
				t.Errorf("layer 0's intermediates %q, want precomputed", r.modes()[0])
			}
			if c.width > 0 && strings.Contains(r.Announce(), "layer 0 recomputes") {
				t.Errorf("announcement %q: layer 0's chunks do not run", r.Announce())
			}
			asked := slices.Contains(c.extra, `chunked.precompute="input"`)
			if said := strings.Contains(r.Announce(), "no fixed first aggregation"); said != (asked && c.width == 0) {
				t.Errorf("announcement %q: says there is no fixed aggregation %v, want %v", r.Announce(), said, asked && c.width == 0)
			}
		})
	}
}

// TestChunkedPrecomputePredicts scores every node with the aggregation
// computed once and with the chunks aggregating, from the same initial
// parameters, in float64: the logits agree to testkit.SplitTol and the
// predicted classes are the same.
func TestChunkedPrecomputePredicts(t *testing.T) {
	sets := []string{`model.name="gcn"`, "model.input_dropout=0", "model.layers=2", `data.dataset="rmat-10-8-32-5-1"`, "data.symmetrize=true", "model.hidden=64",
		`train.dtype="float64"`, `train.backend="cpu"`, `train.mode="chunked"`, "chunked.chunks=4"}
	score := func(key string) ([]int32, []float64) {
		r, _ := newTestRun(t, testkit.MustParse(t, testkit.CoraBase, append(slices.Clone(sets), `chunked.precompute="`+key+`"`)...))
		if (r.fixed != nil) != (key == "input") {
			t.Fatalf("precompute %q: fixed aggregation %v", key, r.fixed != nil)
		}
		n := r.e.DS.NumNodes
		rows := make([]int32, n)
		for i := range rows {
			rows[i] = int32(i)
		}
		pred := make([]int32, n)
		logits := make([]float64, n*r.widths[len(r.layers)])
		if err := r.PredictScores(context.Background(), pred, rows, logits); err != nil {
			t.Fatal(err)
		}
		return pred, logits
	}
	p0, l0 := score("off")
	p1, l1 := score("input")
	var worst float64
	for i := range l0 {
		worst = max(worst, math.Abs(l1[i]-l0[i])/max(math.Abs(l0[i]), 1e-300))
	}
	if worst > testkit.SplitTol {
		t.Errorf("logits differ by %.3g relative, more than %g", worst, testkit.SplitTol)
	}
	if !slices.Equal(p0, p1) {
		t.Errorf("predicted classes differ")
	}
}
