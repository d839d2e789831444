package layers_test

import (
	"math"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/internal/floattol"
	"strata/plugins/layers"
)

// The layers that declare //strata:edge-weights against dense references
// that weight every edge: GCN's gcn_norm (degrees are weight sums, the
// self loop weighs 1), GraphConv's sum and mean of w·x_j, SAGE's mean of
// w·x_j. Each runs on the test graph with weights that differ in the two
// directions of an edge, and with weights all 1 (the unweighted formula).

// weightedTestCSR is the test graph with weights 0.25 .. 2.25, exact in
// float32, that differ between an edge's two directions.
func weightedTestCSR(unit bool) *graph.CSR {
	g := graphtest.Clone(layers.AggrTestCSR())
	g.Values = make([]float32, g.NNZ())
	for e := range g.Values {
		g.Values[e] = 1
		if !unit {
			g.Values[e] = 0.25 + 0.5*float32(e%5)
		}
	}
	return g
}

// f32 is v held in float32 by the host.
func f32(v float64) floattol.Val { return floattol.Val{V: v, E: floattol.UFloat32 * v} }

// weightedGCN is gcn_norm's D^-1/2 (A+I) D^-1/2 x with weighted degrees.
func weightedGCN(m *refModel, x mat) mat {
	deg := make([]float64, len(m.self))
	for i, ws := range m.selfW {
		for _, w := range ws {
			deg[i] += w // dyadic weights: exact
		}
	}
	return aggr(x, m.self, func(i, k int) floattol.Val {
		return f32(m.selfW[i][k] / math.Sqrt(deg[i]*deg[m.self[i][k]]))
	})
}

// weightedMean is Σ_j w_ij x_j / deg(i), deg the neighbour count.
func weightedMean(m *refModel, x mat) mat {
	return aggr(x, m.nbr, func(i, k int) floattol.Val { return f32(m.nbrW[i][k] / float64(len(m.nbr[i]))) })
}

func weightedSum(m *refModel, x mat) mat {
	return aggr(x, m.nbr, func(i, k int) floattol.Val { return floattol.In(m.nbrW[i][k]) })
}

func weightedRefCases() []layerRefCase {
	return []layerRefCase{
		{"gcn", "gcn", 2, "", func(m *refModel, l, n int, x mat) mat {
			h := narrowFirst(x, m.mat(l, "weight"), func(v mat) mat { return weightedGCN(m, v) })
			return hiddenAct(addRow(h, m.row(l, "bias")), l, n, reluV)
		}},
		{"graphconv-sum", "graphconv", 2, "", weightedGraphConv(weightedSum)},
		{"graphconv-mean", "graphconv", 2, "aggr = \"mean\"\n", weightedGraphConv(weightedMean)},
		{"sage", "sage", 2, "", func(m *refModel, l, n int, x mat) mat {
			root := addRow(mm(x, m.mat(l, "root.weight")), m.row(l, "root.bias"))
			h := add(root, narrowFirst(x, m.mat(l, "nbr.weight"), func(v mat) mat { return weightedMean(m, v) }))
			return hiddenAct(h, l, n, reluV)
		}},
	}
}

func weightedGraphConv(agg func(*refModel, mat) mat) refLayer {
	return func(m *refModel, l, n int, x mat) mat {
		root := mm(x, m.mat(l, "lin_root.weight"))
		h := addRow(add(root, narrowFirst(x, m.mat(l, "lin_rel.weight"), func(v mat) mat { return agg(m, v) })), m.row(l, "lin_rel.bias"))
		return hiddenAct(h, l, n, reluV)
	}
}

func TestLayerReferenceWeighted(t *testing.T) {
	for _, c := range weightedRefCases() {
		for _, unit := range []bool{false, true} {
			name := c.name + "/weighted"
			if unit {
				name = c.name + "/unit"
			}
			t.Run(name, func(t *testing.T) { checkLayerReferenceOn(t, c, weightedTestCSR(unit)) })
		}
	}
}
