package graph

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Edge weights are CSR.Values: one finite weight >= 0 per entry (nil means
// all ones). The transforms below keep them; a graph without Values takes
// the unweighted code, unchanged.

// CheckEdgeWeights returns an error naming the first edge whose weight is
// not finite or is negative.
func CheckEdgeWeights(w []float32) error {
	for e, v := range w {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return fmt.Errorf("edge %d has weight %v; edge weights must be finite and >= 0 (GCN's degree normalisation takes their square roots)", e, v)
		}
	}
	return nil
}

// weighted is one entry of a weighted row: its column and weight.
type weighted struct {
	col int64
	w   float64
	n   int32 // how many stored entries it coalesces
}

// symmetrizeWeighted is Symmetrize for a graph with Values, as PyG's
// to_undirected(edge_index, edge_weight, reduce="mean"): every stored
// edge (i, j) with weight w gives (i, j) and (j, i) the contribution w,
// and each entry's weight is the mean of its contributions. A graph that
// already holds both directions with one weight keeps it (reduce="add"
// would double it), a graph stored one direction at a time gets the
// weight on both, and a duplicate edge gets the mean of its copies. Self
// loops are dropped, as Symmetrize drops them.
func symmetrizeWeighted(g *CSR) *CSR {
	n := max(g.NumRows, g.NumCols)
	t, perm := Transpose(&CSR{NumRows: g.NumRows, NumCols: n, Indptr: g.Indptr, Idx32: g.Idx32, Idx64: g.Idx64})
	rows := make([][]weighted, n)
	runRowParts(t.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			var row []weighted
			if r < g.NumRows {
				for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
					row = append(row, weighted{g.Col(e), float64(g.Values[e]), 1})
				}
			}
			for k := t.Indptr[r]; k < t.Indptr[r+1]; k++ {
				row = append(row, weighted{t.Col(k), float64(g.Values[perm[k]]), 1})
			}
			rows[r] = coalesce(row, int64(r), false)
		}
	})
	return weightedCSR(n, n, rows, g.Idx64 != nil || n > math.MaxInt32)
}

// coalesce sorts a row's entries by column, drops the column skip and
// merges the entries of one column into their mean (sum: their sum).
func coalesce(row []weighted, skip int64, sum bool) []weighted {
	slices.SortStableFunc(row, func(a, b weighted) int { return cmp.Compare(a.col, b.col) })
	out := row[:0]
	for _, x := range row {
		switch {
		case x.col == skip:
		case len(out) > 0 && out[len(out)-1].col == x.col:
			out[len(out)-1].w += x.w
			out[len(out)-1].n++
		default:
			out = append(out, x)
		}
	}
	if !sum {
		for i := range out {
			out[i].w /= float64(out[i].n)
		}
	}
	return out
}

// addSelfLoopsWeighted is AddSelfLoops for a graph with Values: the stored
// loops are removed and every row i < NumCols gets the loop (i, i) of
// weight 1 (PyG's gcn_norm fill_value), the columns of each row sorted
// (entries of one column keep their order).
func addSelfLoopsWeighted(g *CSR) *CSR {
	rows := make([][]weighted, g.NumRows)
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := make([]weighted, 0, g.Indptr[r+1]-g.Indptr[r]+1)
			for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
				if c := g.Col(e); c != int64(r) {
					row = append(row, weighted{c, float64(g.Values[e]), 1})
				}
			}
			if r < g.NumCols {
				row = append(row, weighted{int64(r), 1, 1})
			}
			slices.SortStableFunc(row, func(a, b weighted) int { return cmp.Compare(a.col, b.col) })
			rows[r] = row
		}
	})
	return weightedCSR(g.NumRows, g.NumCols, rows, g.Idx64 != nil)
}

// weightedCSR assembles rows of weighted entries into a CSR with Values.
func weightedCSR(numRows, numCols int, rows [][]weighted, wide bool) *CSR {
	indptr := make([]int64, numRows+1)
	for r, row := range rows {
		indptr[r+1] = indptr[r] + int64(len(row))
	}
	vals := make([]float32, indptr[numRows])
	var c *CSR
	if wide {
		cols := make([]int64, len(vals))
		fillWeighted(rows, indptr, cols, vals)
		c = MakeCSR(numRows, numCols, indptr, cols)
	} else {
		cols := make([]int32, len(vals))
		fillWeighted(rows, indptr, cols, vals)
		c = MakeCSR(numRows, numCols, indptr, cols)
	}
	c.Values = vals
	return c
}

func fillWeighted[K Index](rows [][]weighted, indptr []int64, cols []K, vals []float32) {
	runRowParts(indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for k, x := range rows[r] {
				cols[indptr[r]+int64(k)] = K(x.col)
				vals[indptr[r]+int64(k)] = float32(x.w)
			}
		}
	})
}

// rowWeightSums returns the sum of each row's Values, in float64 (the
// weighted in-degree).
func rowWeightSums(g *CSR) []float64 {
	deg := make([]float64, g.NumRows)
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
				deg[r] += float64(g.Values[e])
			}
		}
	})
	return deg
}

// gcnNormWeighted is GCNNorm for a graph with Values, as PyG's gcn_norm:
// deg(i) is the sum of the weights of row i (the self loop's 1 included
// when g has it), and entry (i, j) of weight w gets
// w/sqrt(deg(i)·deg(j)); a column node of degree 0 gives 0.
func gcnNormWeighted(g *CSR) []float32 {
	deg := rowWeightSums(g)
	isq := make([]float64, max(g.NumRows, g.NumCols))
	for r, d := range deg {
		if d > 0 {
			isq[r] = 1 / math.Sqrt(d)
		}
	}
	w := make([]float32, g.NNZ())
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
				w[e] = float32(float64(g.Values[e]) * isq[r] * isq[g.Col(e)])
			}
		}
	})
	return w
}

// meanNormWeighted is MeanNorm for a graph with Values: entry (i, j) of
// weight w gets w/deg(i), deg(i) the length of row i, so the mean
// aggregates the weighted messages w·x_j over the neighbours (PyG's
// GraphConv with aggr="mean", DGL's SAGEConv with edge_weight), not
// sum(w·x)/sum(w).
func meanNormWeighted(g *CSR) []float32 {
	w := make([]float32, g.NNZ())
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			a, b := g.Indptr[r], g.Indptr[r+1]
			for e := a; e < b; e++ {
				w[e] = float32(float64(g.Values[e]) / float64(b-a))
			}
		}
	})
	return w
}

// SumDuplicates returns a graph with Values with the columns of each row
// sorted and the entries of one (row, column) merged into one whose
// weight is their sum (PyG's coalesce with reduce="sum"): a multigraph's
// weighted sum and degrees stay as they were, and every edge has one
// entry to look its weight up by. A graph without Values is returned as
// it is.
func SumDuplicates(g *CSR) *CSR {
	if g.Values == nil {
		return g
	}
	rows := make([][]weighted, g.NumRows)
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := make([]weighted, 0, g.Indptr[r+1]-g.Indptr[r])
			for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
				row = append(row, weighted{g.Col(e), float64(g.Values[e]), 1})
			}
			rows[r] = coalesce(row, -1, true)
		}
	})
	return weightedCSR(g.NumRows, g.NumCols, rows, g.Idx64 != nil)
}

// RowWeightSums returns the sum of each row's weights (its length when g
// has no Values), in float64: the weighted in-degree.
func RowWeightSums(g *CSR) []float64 {
	if g.Values == nil {
		deg := make([]float64, g.NumRows)
		for r := range deg {
			deg[r] = float64(g.Indptr[r+1] - g.Indptr[r])
		}
		return deg
	}
	return rowWeightSums(g)
}

// EdgeWeight returns the weight of the entry (row, col) of g, whose rows
// are sorted without duplicates (Symmetrize, SumDuplicates); ok is false
// when g has no such entry.
func EdgeWeight(g *CSR, row int, col int64) (w float32, ok bool) {
	lo, hi := g.Indptr[row], g.Indptr[row+1]
	k := lo + int64(sort.Search(int(hi-lo), func(i int) bool { return g.Col(lo+int64(i)) >= col }))
	if k == hi || g.Col(k) != col {
		return 0, false
	}
	if g.Values == nil {
		return 1, true
	}
	return g.Values[k], true
}
