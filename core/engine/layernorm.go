package engine

import (
	"context"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// LayerNorm (ir.OpLayerNorm) normalises every row of x[R,C] by its own
// mean and biased variance. It is composed of backend calls every backend
// has, so it runs (and is priced) wherever the rest of a model does: a row
// statistic is a GEMM with a column of ones, x·1/C [R,1], and is spread
// back over the columns as the outer product s·1ᵀ [R,C].
//
// Saved for the backward: x̂ (aux.normed), 1/√(σ²+eps) per row
// (aux.invStd) and the column of ones (aux.ones).

func (p *Program) bindLayerNorm(i int, _ *ir.Op, shape []int) (err error) {
	a := &p.aux[i]
	if a.normed, err = p.alloc(KindValue, shape); err != nil {
		return err
	}
	if a.mean, err = p.alloc(KindValue, []int{shape[0], 1}); err != nil {
		return err
	}
	if a.invStd, err = p.alloc(KindValue, []int{shape[0], 1}); err != nil {
		return err
	}
	a.ones, err = p.alloc(KindValue, []int{shape[1], 1})
	return err
}

// rowMean writes the mean of every row of x into s [R,1].
func (p *Program) rowMean(x, ones, s *tensor.Tensor) error {
	return p.be.GEMM(false, false, 1/float64(x.Cols()), x, ones, 0, s)
}

// spread writes alpha·s·1ᵀ + beta·y into y [R,C] (s is [R,1]).
func (p *Program) spread(alpha float64, s, ones *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	return p.be.GEMM(false, true, alpha, s, ones, beta, y)
}

func (p *Program) forwardLayerNorm(_ context.Context, i int32, _ Mode) error {
	op, arg, y := p.structArgs(i)
	be, a, x := p.be, &p.aux[i], arg(0)
	xh, mu, inv, ones := a.normed, a.mean, a.invStd, a.ones
	steps := []func() error{
		func() error { return be.Fill(ones, 1) },
		func() error { return p.rowMean(x, ones, mu) },
		func() error { return be.Axpby(1, x, 0, xh) },
		func() error { return p.spread(-1, mu, ones, 1, xh) },          // x - μ
		func() error { return be.Elementwise(backend.Mul, xh, xh, y) }, // (x - μ)², y as scratch
		func() error { return p.rowMean(y, ones, inv) },                // σ²
		func() error { return be.Apply(backend.Shift, op.Alpha, inv, inv) },
		func() error { return be.Apply(backend.Pow, -0.5, inv, inv) },
		func() error { return p.spread(1, inv, ones, 0, y) },
		func() error { return be.Elementwise(backend.Mul, xh, y, xh) }, // x̂
		func() error { return be.Elementwise(backend.Mul, xh, arg(1), y) },
		func() error { return be.Elementwise(backend.Add, y, arg(2), y) },
	}
	return runSteps(steps)
}

// backwardLayerNorm: dβ = Σ_rows dy, dγ = Σ_rows dy·x̂ and, with
// g = dy·γ, dx = inv·(g − mean_row(g) − x̂·mean_row(g·x̂)).
func (p *Program) backwardLayerNorm(_ context.Context, i int32) error {
	op, arg, _ := p.structArgs(i)
	be, dy, a, args := p.be, p.grads[i], &p.aux[i], op.Args
	xh, inv, ones := a.normed, a.invStd, a.ones
	dt, shape := xh.DType(), xh.Shape()
	var g, t, m, dg, db *tensor.Tensor
	for k, s := range []struct {
		t     **tensor.Tensor
		shape []int
	}{{&g, shape}, {&t, shape}, {&m, []int{shape[0], 1}}, {&dg, []int{shape[1]}}, {&db, []int{shape[1]}}} {
		var err error
		if *s.t, err = p.scratchFor(KindScratch, dt, s.shape, 1+k); err != nil {
			return err
		}
	}
	steps := []func() error{
		func() error { return be.SumRows(dy, db) },
		func() error { return be.Elementwise(backend.Mul, dy, xh, t) },
		func() error { return be.SumRows(t, dg) },
		func() error { return be.Elementwise(backend.Mul, dy, arg(1), g) },
		func() error { return p.rowMean(g, ones, m) },
		func() error { return p.spread(-1, m, ones, 1, g) }, // g − mean(g)
		func() error { return be.Elementwise(backend.Mul, g, xh, t) },
		func() error { return p.rowMean(t, ones, m) },
		func() error { return p.spread(1, m, ones, 0, t) },
		func() error { return be.Elementwise(backend.Mul, t, xh, t) },
		func() error { return be.Elementwise(backend.Sub, g, t, g) },
		func() error { return p.spread(1, inv, ones, 0, t) },
		func() error { return be.Elementwise(backend.Mul, g, t, g) }, // dx
	}
	if err := runSteps(steps); err != nil {
		return err
	}
	for k, src := range []*tensor.Tensor{g, dg, db} {
		if err := p.accumulate(args[k], func(out *tensor.Tensor) error { return be.Axpby(1, src, 0, out) }); err != nil {
			return err
		}
	}
	return nil
}

// runSteps runs backend calls in order, stopping at the first error.
func runSteps(steps []func() error) error {
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}
