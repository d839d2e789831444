package store

import (
	"fmt"

	"strata/core/graph"
)

// Reorder is the parallel graph and feature reordering of data tiering
// (Alg. 2): node rank[i] becomes node i, so the hottest rows form a
// prefix of the feature matrix and a tier boundary is one row index. rank
// must list every node once (a full ranking, capacity 1). It returns the
// relabelled graph (row order, neighbour order within a row and edge
// values kept), the permuted features (nil when features is nil) and
// newID, with newID[old] = new.
//
// As in the paper, the old-to-new map is built first so that every step
// (row lengths, prefix sum, relocating and relabelling the neighbour
// lists, moving feature rows) is a parallel loop without races; the output
// does not depend on GOMAXPROCS.
func Reorder(g *graph.CSR, features []float32, dim int, rank []int32) (*graph.CSR, []float32, []int32, error) {
	n := g.NumRows
	if g.NumCols != n {
		return nil, nil, nil, fmt.Errorf("reorder: graph is %d x %d, want square", g.NumRows, g.NumCols)
	}
	if len(rank) != n {
		return nil, nil, nil, fmt.Errorf("reorder: rank lists %d of %d nodes; pass a full ranking (capacity 1)", len(rank), n)
	}
	if features != nil && (dim <= 0 || len(features) != n*dim) {
		return nil, nil, nil, fmt.Errorf("reorder: %d feature values for %d nodes of %d", len(features), n, dim)
	}
	newID := make([]int32, n)
	for i := range newID {
		newID[i] = -1
	}
	for i, v := range rank {
		if v < 0 || int(v) >= n || newID[v] >= 0 {
			return nil, nil, nil, fmt.Errorf("reorder: rank[%d] = %d is out of range or repeated", i, v)
		}
		newID[v] = int32(i)
	}
	// New row pointer: lengths in new order, then a prefix sum.
	indptr := make([]int64, n+1)
	graph.ParallelFor(n, 1024, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := rank[i]
			indptr[i+1] = g.Indptr[o+1] - g.Indptr[o]
		}
	})
	for i := 0; i < n; i++ {
		indptr[i+1] += indptr[i]
	}
	out := &graph.CSR{NumRows: n, NumCols: n, Indptr: indptr}
	m := g.NNZ()
	if g.Idx32 != nil {
		out.Idx32 = make([]int32, m)
	} else {
		out.Idx64 = make([]int64, m)
	}
	if g.Values != nil {
		out.Values = make([]float32, m)
	}
	graph.ParallelFor(n, 1024, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := rank[i]
			src, dst := g.Indptr[o], indptr[i]
			k := indptr[i+1] - dst
			if g.Idx32 != nil {
				in, out := g.Idx32[src:src+k], out.Idx32[dst:dst+k]
				for j, c := range in {
					out[j] = newID[c]
				}
			} else {
				in, out := g.Idx64[src:src+k], out.Idx64[dst:dst+k]
				for j, c := range in {
					out[j] = int64(newID[c])
				}
			}
			if g.Values != nil {
				copy(out.Values[dst:dst+k], g.Values[src:src+k])
			}
		}
	})
	var feat []float32
	if features != nil {
		feat = make([]float32, len(features))
		graph.ParallelFor(n, 1024, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				o := int(rank[i])
				copy(feat[i*dim:(i+1)*dim], features[o*dim:(o+1)*dim])
			}
		})
	}
	return out, feat, newID, nil
}
