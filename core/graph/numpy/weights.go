package numpy

import (
	"math"
	"path/filepath"

	"strata/core/graph"
)

// readNPYWeightedEdges reads edge_index.npy ep and its edge_weight.npy wp
// (one weight per column of ep, PyG's edge_weight) into a CSR whose Values
// are the weights, in the order GroupEdges gives the edges.
func readNPYWeightedEdges(ep, wp, lp string, n int, spend *graph.Spend) (*graph.CSR, error) {
	src, dst, err := readNPYEndpoints(ep, lp, n, spend)
	if err != nil {
		return nil, err
	}
	w, err := readNPYEdgeWeights(wp, ep, len(src), spend)
	if err != nil {
		return nil, err
	}
	// Group the edge ids as GroupEdges groups the sources (a stable
	// counting sort by target), then look up each one's source and weight.
	if err := spend.Charge(wp, "the weighted CSR", int64(len(src))*12); err != nil {
		return nil, err
	}
	if len(src) > math.MaxInt32 {
		return nil, graph.FileErrorf(graph.ErrRange, wp, 0, 0, "%d weighted edges, more than the %d a weighted graph may have", len(src), math.MaxInt32)
	}
	ids := make([]int32, len(src))
	for e := range ids {
		ids[e] = int32(e)
	}
	indptr, order := graph.GroupEdges(n, dst, ids)
	cols, vals := make([]int32, len(order)), make([]float32, len(order))
	for k, e := range order {
		cols[k], vals[k] = src[e], w[e]
	}
	g := graph.MakeCSR(n, n, indptr, cols)
	g.Values = vals
	return g, nil
}

// readNPYEdgeWeights reads wp, m edge weights of shape (E,) or (E, 1) of
// any float or integer dtype, each finite and >= 0. Its shape is checked
// against the m edges of ep before its data is read.
func readNPYEdgeWeights(wp, ep string, m int, spend *graph.Spend) ([]float32, error) {
	f, size, err := graph.OpenFile(wp, "")
	if err != nil {
		return nil, err
	}
	h, _, err := readNPYHeader(f, size, wp, "")
	f.Close()
	if err != nil {
		return nil, err
	}
	if !(len(h.shape) == 1 && h.shape[0] == m || len(h.shape) == 2 && h.shape[0] == m && h.shape[1] == 1) {
		return nil, graph.FileErrorf(graph.ErrCount, wp, 0, 0, "header field 'shape': %v, want (%d,): one weight per edge of %s (%d edges)", h.shape, m, filepath.Base(ep), m)
	}
	_, data, err := readNPYFile(wp, spend)
	if err != nil {
		return nil, err
	}
	if _, isBool := data.([]bool); isBool {
		return nil, graph.FileErrorf(graph.ErrFormat, wp, 0, 0, "header field 'descr': bool data, want edge weights of a float or integer dtype")
	}
	if err := spend.Charge(wp, "the weights as float64", int64(m)*12); err != nil {
		return nil, err
	}
	wide, _ := npyNumeric[float64](data)
	w := make([]float32, m)
	for e, x := range wide {
		w[e] = float32(x)
		if !math.IsInf(x, 0) && math.IsInf(float64(w[e]), 0) {
			return nil, graph.FileErrorf(graph.ErrRange, wp, 0, 0, "edge %d has weight %v, beyond float32's range", e, x)
		}
	}
	if err := graph.CheckEdgeWeights(w); err != nil {
		return nil, graph.FileErrorf(graph.ErrRange, wp, 0, 0, "%v", err)
	}
	return w, nil
}
