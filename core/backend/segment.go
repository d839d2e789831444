package backend

import (
	"context"

	"strata/core/tensor"
)

// SegmentSelector is implemented by backends with the per-neighbourhood
// selection kernel that median, quantile and MLP aggregators need (the op
// table's segment_quantile and segment_nth). The engine reports a clear
// error on a backend without it.
type SegmentSelector interface {
	// SegmentSelect writes, for every destination row i of a and column
	// c, one in-edge value e[k,c] into out[i,c] and the edge's position k
	// (in the CSR's order) into idx[i,c]; a row without in-edges gets 0
	// and -1. With nth < 0 the edge is the floor(q·(d-1))-th smallest of
	// the row's d values (ties in edge order); with nth >= 0 it is the
	// row's nth edge (0 and -1 when the row has nth or fewer). The
	// gradient is ScatterArgmax(idx, dout, de).
	SegmentSelect(ctx context.Context, a Adj, q float64, nth int, e, out, idx *tensor.Tensor) error
}
