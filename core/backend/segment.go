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

// SegmentMultiplier is implemented by backends with the segment product
// kernel (the op table's segment_prod, PyG's MulAggregation). The engine
// reports a clear error on a backend without it.
type SegmentMultiplier interface {
	// SegmentProd writes out[i,c] = Π e[k,c] over the in-edges k of
	// destination row i of a (1 for a row without in-edges).
	SegmentProd(ctx context.Context, a Adj, e, out *tensor.Tensor) error
	// SegmentProdBackward writes de[k,c] = dout[i,c] · Π e[k',c] over the
	// other in-edges k' of i: with z zero factors in the row and P the
	// product of the non-zero ones, dout·P/e[k,c] when z = 0, dout·P at
	// the zero factor and 0 at the others when z = 1, and 0 when z > 1.
	SegmentProdBackward(ctx context.Context, a Adj, e, dout, de *tensor.Tensor) error
}
