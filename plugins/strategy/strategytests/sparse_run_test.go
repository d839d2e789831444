package strategytests

import (
	"context"
	"math"
	"testing"

	"strata/core/train"
	"strata/plugins/strategy/internal/testkit"
)

// TestSparseInputMatchesDense trains full-graph GCN on Cora (1.27% of its
// features non-zero) with fullgraph.sparse_input on and off, node
// classification and link prediction, in float64 with every dropout on:
// the first layer's product runs as SpMM or as a dense GEMM, the same sums
// in another order, so the losses agree to float rounding
// (testkit.SplitTol); the switch is part of config_sha256.
func TestSparseInputMatchesDense(t *testing.T) {
	cases := []struct {
		name, base string
		sets       []string
	}{
		{"node", testkit.CoraBase, append([]string{"train.epochs=3"}, testkit.SplitDropouts("gcn")...)},
		{"link", linkBase, []string{"train.epochs=3", "train.eval_every=0", "model.dropout=0.5", "model.input_dropout=0.3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(sparse string) *train.Result {
				res, err := train.Run(context.Background(), testkit.MustParse(t, c.base, append(c.sets, "train.dtype=float64", "fullgraph.sparse_input="+sparse)...), train.Options{Host: testkit.TestHost(t)})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			dense, sparse := run("false"), run("true")
			if d := math.Abs(dense.FinalLoss-sparse.FinalLoss) / math.Abs(dense.FinalLoss); !(d <= testkit.SplitTol) {
				t.Fatalf("loss %v dense, %v sparse: relative difference %.3g, above %g", dense.FinalLoss, sparse.FinalLoss, d, testkit.SplitTol)
			}
			if dense.ConfigSHA256 == sparse.ConfigSHA256 {
				t.Fatal("fullgraph.sparse_input changes the rounding of the results but not config_sha256")
			}
		})
	}
}
