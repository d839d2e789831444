package sim

import (
	"context"

	"strata/core/backend"
	"strata/core/tensor"
)

// extensions are the optional kernels of the inner backend that the
// engine finds by type assertion; the generated wrapper offers and prices
// them too (wrap_gen.go).
type extensions interface {
	// DropoutApply builds the dropout mask and applies it in one pass
	// (see cpu.Backend.DropoutApply).
	DropoutApply(seed uint64, rows *tensor.Tensor, p float64, x, mask, y *tensor.Tensor) error
	// SpMMBiasAct aggregates, adds a bias and activates in one pass (see
	// backend.SpMMBiasActer).
	SpMMBiasAct(ctx context.Context, a backend.Adj, w, x, bias *tensor.Tensor, act backend.Unary, alpha float64, y *tensor.Tensor) error
	// DropoutGEMM multiplies by a dropout of x without forming it (see
	// backend.DropoutGEMMer).
	DropoutGEMM(seed uint64, rows *tensor.Tensor, p float64, transX bool, x, b *tensor.Tensor, beta float64, c, scratch, keep *tensor.Tensor) error
	// Widen writes 16-bit feature rows as float32 (see
	// backend.HalfStorage).
	Widen(x, y *tensor.Tensor) error
	// SegmentSelect picks one in-edge value per row and column (see
	// backend.SegmentSelector).
	SegmentSelect(ctx context.Context, a backend.Adj, q float64, nth int, e, out, idx *tensor.Tensor) error
	// SegmentProd and SegmentProdBackward: the product over each row's
	// in-edges and its gradient (see backend.SegmentMultiplier).
	SegmentProd(ctx context.Context, a backend.Adj, e, out *tensor.Tensor) error
	SegmentProdBackward(ctx context.Context, a backend.Adj, e, dout, de *tensor.Tensor) error
}
