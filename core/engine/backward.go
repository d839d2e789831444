package engine

import (
	"context"
	"fmt"

	"strata/core/ir"
	"strata/core/tensor"
)

// Backward propagates the output gradient (filled by the loss, see
// OutputGrad) to every parameter. Parameter gradients are overwritten, or
// added to when the forward's Mode set AccumulateGrads.
func (p *Program) Backward(ctx context.Context) error {
	if !p.mode.Train {
		return fmt.Errorf("engine: Backward after an evaluation forward")
	}
	if p.consumes && !p.saved {
		return fmt.Errorf("engine: a second Backward after one Forward (the LSTM aggregation's backward consumes its saved state)")
	}
	p.saved = false
	for i := range p.gradInit {
		p.gradInit[i] = p.mode.AccumulateGrads && p.g.Ops[i].Kind == ir.OpParam && !p.g.Ops[i].Buffer
	}
	out := p.g.Outputs[0]
	p.gradInit[out] = true
	for i := len(p.g.Ops) - 1; i >= 0; i-- {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		if !p.needGrad[i] || !p.gradInit[i] {
			if p.aux[i].dropLead == int32(i) { // its group's other members may have gradients
				if err := p.dropGroupGrads(int32(i)); err != nil {
					return fmt.Errorf("backward op #%d %s: %w", i, p.g.Ops[i].Kind, err)
				}
			}
			continue
		}
		if err := p.backwardOp(ctx, int32(i)); err != nil {
			return fmt.Errorf("backward op #%d %s: %w", i, p.g.Ops[i].Kind, err)
		}
	}
	if p.mode.AccumulateGrads {
		return nil
	}
	for i, op := range p.g.Ops {
		if op.Kind == ir.OpParam && !op.Buffer && !p.gradInit[i] {
			if err := p.be.Fill(p.grads[i], 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// accumulate adds the result of fn into the gradient of op a. fn writes its
// result into the tensor it is given (overwriting). The first contribution
// goes straight into the gradient buffer; later ones go through a scratch
// buffer and an axpy.
func (p *Program) accumulate(a int32, fn func(out *tensor.Tensor) error) error {
	if !p.needGrad[a] {
		return nil
	}
	g := p.grads[a]
	if !p.gradInit[a] {
		p.gradInit[a] = true
		return fn(g)
	}
	tmp, err := p.scratchFor(KindScratch, g.DType(), g.Shape(), 0)
	if err != nil {
		return err
	}
	if err := fn(tmp); err != nil {
		return err
	}
	return p.be.Axpby(1, tmp, 1, g)
}

// accumulateBeta is accumulate for kernels that take a beta (GEMM, SpMM).
func (p *Program) accumulateBeta(a int32, fn func(out *tensor.Tensor, beta float64) error) error {
	if !p.needGrad[a] {
		return nil
	}
	beta := 1.0
	if !p.gradInit[a] {
		beta = 0
		p.gradInit[a] = true
	}
	return fn(p.grads[a], beta)
}

// zeroed returns the gradient of a, cleared if this is its first contribution,
// for kernels that only accumulate.
func (p *Program) zeroed(a int32) (*tensor.Tensor, error) {
	g := p.grads[a]
	if !p.gradInit[a] {
		p.gradInit[a] = true
		if err := p.be.Fill(g, 0); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (p *Program) backwardOp(ctx context.Context, i int32) error {
	op := &p.g.Ops[i]
	if op.Kind == opNarrow {
		if !p.needGrad[op.Args[0]] {
			return nil
		}
		dx, err := p.zeroed(op.Args[0])
		if err != nil {
			return err
		}
		return p.be.ScatterAdd(p.grads[i], p.aux[i].rows, dx)
	}
	if p.plan.prefix[i] {
		return p.withPrefixArgs(i, true, func() error { return p.backwardKind(ctx, i) })
	}
	return p.backwardKind(ctx, i)
}

// backwardKind runs op i's backward by its kind.
func (p *Program) backwardKind(ctx context.Context, i int32) error {
	op := &p.g.Ops[i]
	switch s := ir.Spec(op.Kind); {
	case s == nil:
		return fmt.Errorf("op kind %q has no backward", op.Kind)
	case s.Class == ir.ClassLeaf:
		return nil
	case s.Class == ir.ClassStructural:
		return p.backwardStructural(ctx, i)
	default:
		return p.backwardTable(ctx, i, s)
	}
}

// zeroedIf is zeroed for a value that needs a gradient, or a scratch sink.
func (p *Program) zeroedIf(a int32) (*tensor.Tensor, error) {
	if p.needGrad[a] {
		return p.zeroed(a)
	}
	v := p.val(a)
	return p.scratchFor(KindScratch, v.DType(), v.Shape(), 4)
}

// reduceInto accumulates src·signB, the full-shape gradient of the
// broadcast operand b (argument bArg) of a binary op with first operand a,
// reduced over the rows b was broadcast to (or to a scalar).
func (p *Program) reduceInto(bArg int32, a, b, src *tensor.Tensor, signB float64) error {
	be := p.be
	switch {
	case tensor.SameShape(a, b):
		return p.accumulate(bArg, func(out *tensor.Tensor) error { return be.Axpby(signB, src, 0, out) })
	case b.Numel() == 1 && a.Cols() != 1:
		return p.accumulate(bArg, func(out *tensor.Tensor) error {
			cols, err := p.scratchFor(KindScratch, src.DType(), []int{src.Cols()}, 6)
			if err != nil {
				return err
			}
			if err := be.SumRows(src, cols); err != nil {
				return err
			}
			v, err := p.downloadFloats(cols)
			if err != nil {
				return err
			}
			s := 0.0
			for _, x := range v {
				s += x
			}
			return p.uploadFloats(out, []float64{signB * s})
		})
	default:
		return p.accumulate(bArg, func(out *tensor.Tensor) error {
			if err := be.SumRows(src, out); err != nil {
				return err
			}
			if signB != 1 {
				return be.Axpby(0, out, signB, out)
			}
			return nil
		})
	}
}
