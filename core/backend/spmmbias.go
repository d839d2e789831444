package backend

import (
	"context"

	"strata/core/tensor"
)

// SpMMBiasActer is implemented by backends with a fused aggregation
// epilogue (the cpu backend; the simulator passes it through):
//
//	y = act(A·x + bias)
//
// A weighted by w as SpMM's (not transposed), bias a row of y.Cols()
// elements added to every row, act a unary function with its alpha
// (Identity: none). It equals SpMM, Elementwise(Add) and Apply bit for
// bit, with one pass over y instead of three.
type SpMMBiasActer interface {
	SpMMBiasAct(ctx context.Context, a Adj, w, x, bias *tensor.Tensor, act Unary, alpha float64, y *tensor.Tensor) error
}
