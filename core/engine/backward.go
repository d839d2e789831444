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
		p.gradInit[i] = p.mode.AccumulateGrads && p.g.Ops[i].Kind == ir.OpParam
	}
	out := p.g.Outputs[0]
	p.gradInit[out] = true
	for i := len(p.g.Ops) - 1; i >= 0; i-- {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		if !p.needGrad[i] || !p.gradInit[i] {
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
		if op.Kind == ir.OpParam && !p.gradInit[i] {
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
	be := p.be
	dy := p.grads[i]
	y := p.val(i)
	args := op.Args
	arg := func(k int) *tensor.Tensor { return p.val(args[k]) }
	need := func(k int) bool { return p.needGrad[args[k]] }
	if s := ir.Spec(op.Kind); s != nil {
		return p.backwardTable(ctx, i, s)
	}
	switch op.Kind {
	case ir.OpInput, ir.OpParam, ir.OpGraph:
		return nil
	case ir.OpAggregate:
		g := p.adj(args[0])
		var w *tensor.Tensor
		switch op.Reducer {
		case "max":
			dx, err := p.zeroed(args[1])
			if err != nil || !need(1) {
				return err
			}
			return be.ScatterArgmax(p.aux[i].argmax, dy, dx)
		case "mean":
			w = g.MeanNorm
		case "gcn":
			w = g.GCNNorm
		}
		return p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
			return be.SpMM(ctx, g.Adj, true, w, dy, beta, out)
		})
	case ir.OpSpMMEdge:
		g := p.adj(args[0]).Adj
		if need(1) {
			if err := p.accumulate(args[1], func(out *tensor.Tensor) error {
				return be.SDDMM(ctx, g, dy, arg(2), out)
			}); err != nil {
				return err
			}
		}
		return p.accumulateBeta(args[2], func(out *tensor.Tensor, beta float64) error {
			return be.SpMM(ctx, g, true, arg(1), dy, beta, out)
		})
	case ir.OpMatMul: // db first: the buffer plan may give a's gradient a's buffer
		if p.aux[i].maskedBy > 0 { // a's dropout was never formed; its input takes no gradient
			return p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
				return p.dropGEMM(i, true, dy, beta, out)
			})
		}
		if err := p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
			return be.GEMM(true, false, 1, arg(0), dy, beta, out)
		}); err != nil {
			return err
		}
		return p.accumulateBeta(args[0], func(out *tensor.Tensor, beta float64) error {
			return be.GEMM(false, true, 1, dy, arg(1), beta, out)
		})
	case ir.OpBias:
		if err := p.accumulate(args[0], func(out *tensor.Tensor) error { return be.Axpby(1, dy, 0, out) }); err != nil {
			return err
		}
		return p.accumulate(args[1], func(out *tensor.Tensor) error { return be.SumRows(dy, out) })
	case ir.OpScale:
		return p.accumulate(args[0], func(out *tensor.Tensor) error { return be.Axpby(op.Alpha, dy, 0, out) })
	case ir.OpConcat:
		c0 := arg(0).Cols()
		if err := p.accumulate(args[0], func(out *tensor.Tensor) error { return be.CopyCols(out, 0, dy, 0, c0) }); err != nil {
			return err
		}
		return p.accumulate(args[1], func(out *tensor.Tensor) error { return be.CopyCols(out, 0, dy, c0, arg(1).Cols()) })
	case ir.OpDropout:
		if op.Alpha == 0 {
			return p.accumulate(args[0], func(out *tensor.Tensor) error { return be.Axpby(1, dy, 0, out) })
		}
		return p.accumulate(args[0], func(out *tensor.Tensor) error { return p.dropoutBackward(i, dy, out) })
	case ir.OpBatchNorm:
		a := &p.aux[i]
		x := arg(0)
		dx, err := p.scratchFor(KindScratch, x.DType(), x.Shape(), 1)
		if err != nil {
			return err
		}
		c := []int{x.Cols()}
		dg, err := p.scratchFor(KindScratch, x.DType(), c, 2)
		if err != nil {
			return err
		}
		db, err := p.scratchFor(KindScratch, x.DType(), c, 3)
		if err != nil {
			return err
		}
		if err := be.BatchNormBackward(x, arg(1), dy, a.mean, a.invStd, dx, dg, db); err != nil {
			return err
		}
		for k, src := range []*tensor.Tensor{dx, dg, db} {
			if err := p.accumulate(args[k], func(out *tensor.Tensor) error { return be.Axpby(1, src, 0, out) }); err != nil {
				return err
			}
		}
		return nil
	case ir.OpHeadDot:
		dx, err := p.zeroedIf(args[0])
		if err != nil {
			return err
		}
		da, err := p.zeroedIf(args[1])
		if err != nil {
			return err
		}
		return be.HeadDotBackward(arg(0), arg(1), dy, dx, da)
	case ir.OpUAddV:
		g := p.adj(args[0]).Adj
		if err := p.accumulate(args[1], func(out *tensor.Tensor) error { return be.EdgeReduce(ctx, g, true, dy, out) }); err != nil {
			return err
		}
		return p.accumulate(args[2], func(out *tensor.Tensor) error { return be.EdgeReduce(ctx, g, false, dy, out) })
	case ir.OpUDotV:
		g := p.adj(args[0]).Adj
		if err := p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
			return be.SpMM(ctx, g, false, dy, arg(2), beta, out)
		}); err != nil {
			return err
		}
		return p.accumulateBeta(args[2], func(out *tensor.Tensor, beta float64) error {
			return be.SpMM(ctx, g, true, dy, arg(1), beta, out)
		})
	case ir.OpEdgeSoftmax:
		g := p.adj(args[0]).Adj
		return p.accumulate(args[1], func(out *tensor.Tensor) error { return be.EdgeSoftmaxBackward(ctx, g, y, dy, out) })
	case ir.OpHeadMean:
		return p.accumulateBeta(args[0], func(out *tensor.Tensor, beta float64) error {
			return be.GEMM(false, true, 1, dy, p.aux[i].headMean, beta, out)
		})
	case ir.OpLSTMAggregate:
		return p.backwardLSTM(ctx, i, dy)
	case opNarrow:
		if !need(0) {
			return nil
		}
		dx, err := p.zeroed(args[0])
		if err != nil {
			return err
		}
		return be.ScatterAdd(dy, p.aux[i].rows, dx)
	}
	return fmt.Errorf("op kind %q has no backward", op.Kind)
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

// backwardLSTM differentiates lstm_aggregate(g, x, w_ih, w_hh, b): the
// backend returns d(x·W_ih) (into the scratch that held x·W_ih) and dW_hh;
// dx, dW_ih and db follow from d(x·W_ih).
func (p *Program) backwardLSTM(ctx context.Context, i int32, dy *tensor.Tensor) error {
	op, a, be := &p.g.Ops[i], &p.aux[i], p.be
	args := op.Args
	x, wih, whh := p.val(args[1]), p.val(args[2]), p.val(args[3])
	dwhh, err := p.scratchFor(KindScratch, whh.DType(), whh.Shape(), 8)
	if err != nil {
		return err
	}
	dxw := a.xw
	if err := be.LSTMAggregateBackward(ctx, p.adj(args[0]).Adj, whh, a.gates, a.cells, a.hprev, dy, dxw, dwhh); err != nil {
		return err
	}
	if err := p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
		return be.GEMM(false, true, 1, dxw, wih, beta, out)
	}); err != nil {
		return err
	}
	if err := p.accumulateBeta(args[2], func(out *tensor.Tensor, beta float64) error {
		return be.GEMM(true, false, 1, x, dxw, beta, out)
	}); err != nil {
		return err
	}
	if err := p.accumulate(args[3], func(out *tensor.Tensor) error { return be.Axpby(1, dwhh, 0, out) }); err != nil {
		return err
	}
	return p.accumulate(args[4], func(out *tensor.Tensor) error { return be.SumRows(dxw, out) })
}
