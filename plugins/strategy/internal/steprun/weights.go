package steprun

import (
	"fmt"
	"math"

	"strata/core/graph"
	"strata/core/sampling"
)

// Edge weights in blocks: a sampled block holds some of a node's in-edges,
// each looked up by its global ids in the graph (train.Adjacencies keeps
// weighted rows sorted and without duplicates), so a block carries the
// weights of the edges it holds: a sum multiplies them with the
// sampler's own values, the mean divides them by the sampled count, and
// GCN's weights are w/sqrt(d_i d_j) with the whole graph's weighted
// degrees, as full-graph training has them.

// weightedIsq returns 1/sqrt(the weighted degree) of every row of g (0
// for a row of weight 0), GCN's normalisation with g's weights.
func weightedIsq(g *graph.CSR) []float64 {
	out := graph.RowWeightSums(g)
	for r, d := range out {
		out[r] = 0
		if d > 0 {
			out[r] = 1 / math.Sqrt(d)
		}
	}
	return out
}

// blockWeights returns the graph's weight of every entry of the block's
// adjacency, or nil when the graph has no weights.
func (r *Runner) blockWeights(b sampling.Block) ([]float32, error) {
	g := r.Env.Adjs.Adj
	if g.Values == nil {
		return nil, nil
	}
	a := b.Adj
	w := make([]float32, a.NNZ())
	for row := range a.NumRows {
		v := int(b.Dst[row])
		for k := a.Indptr[row]; k < a.Indptr[row+1]; k++ {
			u := int64(b.Src[a.Col(k)])
			x, ok := graph.EdgeWeight(g, v, u)
			if !ok {
				return nil, fmt.Errorf("the block's edge %d -> %d is not an edge of the graph, so it has no weight", u, v)
			}
			w[k] = x
		}
	}
	return w, nil
}

// blockGraph returns the adjacency of graph name of block b to upload
// (its Values are what a sum weights each edge by) and the graph's edge
// weights of its entries, which the GCN and mean weights scale by (nil
// without weights, w nil).
func blockGraph(b sampling.Block, name string, w []float32) (*graph.CSR, []float32) {
	if w == nil {
		if name == "adj_self" {
			return withLocalSelfLoops(b.Adj), nil
		}
		return b.Adj, nil
	}
	a := b.Adj
	wb := &graph.CSR{NumRows: a.NumRows, NumCols: a.NumCols, Indptr: a.Indptr, Idx32: a.Idx32, Idx64: a.Idx64, Values: w}
	if name == "adj_self" { // destination i is source i: its loop weighs 1
		s := graph.AddSelfLoops(wb)
		return s, s.Values
	}
	if a.Values == nil {
		return wb, w
	}
	up := *wb
	up.Values = make([]float32, len(w))
	for k := range w {
		up.Values[k] = w[k] * a.Values[k]
	}
	return &up, w
}
