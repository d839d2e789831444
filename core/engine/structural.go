package engine

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// The structural ops of the op table (ir.Ops, class structural): each
// entry's Impl names its forward<Impl> and backward<Impl> methods here
// (and bind<Impl> for the entries with Aux), which dispatch_gen.go calls.

// structArgs returns op i, its operand values and its output.
func (p *Program) structArgs(i int32) (*ir.Op, func(int) *tensor.Tensor, *tensor.Tensor) {
	op := &p.g.Ops[i]
	return op, func(k int) *tensor.Tensor { return p.val(op.Args[k]) }, p.vals[i]
}

func (p *Program) bindAggregate(i int, op *ir.Op, shape []int) (err error) {
	if op.Reducer == "max" {
		p.aux[i].argmax, err = p.allocT(KindIndex, tensor.Int32, shape)
	}
	return err
}

func (p *Program) forwardAggregate(ctx context.Context, i int32, _ Mode) error {
	op, arg, y := p.structArgs(i)
	be, g := p.be, p.adj(op.Args[0])
	switch op.Reducer {
	case "sum":
		return be.SpMM(ctx, g.Adj, false, nil, arg(1), 0, y)
	case "mean":
		return be.SpMM(ctx, g.Adj, false, g.MeanNorm, arg(1), 0, y)
	case "gcn":
		return be.SpMM(ctx, g.Adj, false, g.GCNNorm, arg(1), 0, y)
	case "max":
		return be.SpMMMax(ctx, g.Adj, arg(1), y, p.aux[i].argmax)
	}
	return fmt.Errorf("unknown reducer %q", op.Reducer)
}

func (p *Program) backwardAggregate(ctx context.Context, i int32) error {
	op, be, dy := &p.g.Ops[i], p.be, p.grads[i]
	args := op.Args
	g := p.adj(args[0])
	var w *tensor.Tensor
	switch op.Reducer {
	case "max":
		dx, err := p.zeroed(args[1])
		if err != nil || !p.needGrad[args[1]] {
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
}

func (p *Program) forwardSpMMEdge(ctx context.Context, i int32, _ Mode) error {
	op, arg, y := p.structArgs(i)
	return p.be.SpMM(ctx, p.adj(op.Args[0]).Adj, false, arg(1), arg(2), 0, y)
}

func (p *Program) backwardSpMMEdge(ctx context.Context, i int32) error {
	op, arg, _ := p.structArgs(i)
	be, dy, args := p.be, p.grads[i], op.Args
	g := p.adj(args[0]).Adj
	if p.needGrad[args[1]] {
		if err := p.accumulate(args[1], func(out *tensor.Tensor) error {
			return be.SDDMM(ctx, g, dy, arg(2), out)
		}); err != nil {
			return err
		}
	}
	return p.accumulateBeta(args[2], func(out *tensor.Tensor, beta float64) error {
		return be.SpMM(ctx, g, true, arg(1), dy, beta, out)
	})
}

// bindMatMul gives a matmul that multiplies in its input's dropout (see
// fuseInputDropouts) its scratch.
func (p *Program) bindMatMul(i int, _ *ir.Op, shape []int) error {
	if p.aux[i].sparseX {
		return nil // SpMM over the sparse input (sparse.go)
	}
	if p.aux[i].maskedBy > 0 {
		if err := p.bindDropGEMM(i, shape); err != nil {
			return err
		}
	}
	if p.aux[i].halfX {
		return p.bindHalfMatMul(i, shape)
	}
	return nil
}

func (p *Program) forwardMatMul(ctx context.Context, i int32, m Mode) error {
	_, arg, y := p.structArgs(i)
	if p.aux[i].sparseX {
		return p.sparseForward(ctx, i, m)
	}
	if a := &p.aux[i]; a.maskedBy > 0 && m.Train {
		switch {
		case a.dropLead == i:
			return p.dropGroupForward(i)
		case a.dropLead > 0:
			return nil // its lead wrote it
		}
		return p.dropGEMM(i, false, arg(1), 0, y)
	}
	if p.aux[i].halfX { // 16-bit rows, widened region by region (half.go)
		return p.halfGEMM(i, false, arg(0), arg(1), 0, y)
	}
	return p.be.GEMM(false, false, 1, arg(0), arg(1), 0, y)
}

// backwardMatMul: db first, since the buffer plan may give a's gradient
// a's buffer.
func (p *Program) backwardMatMul(ctx context.Context, i int32) error {
	op, arg, _ := p.structArgs(i)
	be, dy, args := p.be, p.grads[i], op.Args
	if p.aux[i].sparseX { // the input takes no gradient
		return p.sparseBackward(ctx, i)
	}
	if a := &p.aux[i]; a.maskedBy > 0 { // a's dropout was never formed; its input takes no gradient
		switch {
		case a.dropLead == i:
			return p.dropGroupGrads(i)
		case a.dropLead > 0:
			return nil // its lead runs its product
		}
		return p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
			return p.dropGEMM(i, true, dy, beta, out)
		})
	}
	if p.aux[i].halfX { // the 16-bit input takes no gradient
		return p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
			return p.halfGEMM(i, true, arg(0), dy, beta, out)
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
}

func (p *Program) forwardBias(_ context.Context, i int32, _ Mode) error {
	_, arg, y := p.structArgs(i)
	return p.be.Elementwise(backend.Add, arg(0), arg(1), y)
}

func (p *Program) backwardBias(_ context.Context, i int32) error {
	be, dy, args := p.be, p.grads[i], p.g.Ops[i].Args
	if err := p.accumulate(args[0], func(out *tensor.Tensor) error { return be.Axpby(1, dy, 0, out) }); err != nil {
		return err
	}
	return p.accumulate(args[1], func(out *tensor.Tensor) error { return be.SumRows(dy, out) })
}

func (p *Program) forwardScale(_ context.Context, i int32, _ Mode) error {
	op, arg, y := p.structArgs(i)
	if err := p.be.Fill(y, 0); err != nil {
		return err
	}
	return p.be.Axpby(op.Alpha, arg(0), 0, y)
}

func (p *Program) backwardScale(_ context.Context, i int32) error {
	op, be, dy := &p.g.Ops[i], p.be, p.grads[i]
	return p.accumulate(op.Args[0], func(out *tensor.Tensor) error { return be.Axpby(op.Alpha, dy, 0, out) })
}

func (p *Program) forwardConcat(_ context.Context, i int32, _ Mode) error {
	_, arg, y := p.structArgs(i)
	a, b := arg(0), arg(1)
	if err := p.be.CopyCols(y, 0, a, 0, a.Cols()); err != nil {
		return err
	}
	return p.be.CopyCols(y, a.Cols(), b, 0, b.Cols())
}

func (p *Program) backwardConcat(_ context.Context, i int32) error {
	op, arg, _ := p.structArgs(i)
	be, dy, args := p.be, p.grads[i], op.Args
	c0 := arg(0).Cols()
	if err := p.accumulate(args[0], func(out *tensor.Tensor) error { return be.CopyCols(out, 0, dy, 0, c0) }); err != nil {
		return err
	}
	return p.accumulate(args[1], func(out *tensor.Tensor) error { return be.CopyCols(out, 0, dy, c0, arg(1).Cols()) })
}

func (p *Program) forwardDropout(_ context.Context, i int32, m Mode) error {
	op, arg, y := p.structArgs(i)
	be := p.be
	if !m.Train || op.Alpha == 0 {
		return p.passDropout(i)
	}
	if p.aux[i].dropInto {
		return nil // the matmuls that read it apply it
	}
	mask := p.aux[i].mask
	if da, ok := be.(dropoutApplier); ok {
		if !p.needGrad[op.Args[0]] {
			mask = nil // only the backward pass reads it (its pages stay untouched)
		}
		return da.DropoutApply(p.opStream(m.Seed, i), p.aux[i].dropRows, op.Alpha, arg(0), mask, y)
	}
	if err := be.DropoutMask(p.opStream(m.Seed, i), p.aux[i].dropRows, op.Alpha, mask); err != nil {
		return err
	}
	return be.Elementwise(backend.Mul, arg(0), mask, y)
}

func (p *Program) backwardDropout(_ context.Context, i int32) error {
	op, be, dy := &p.g.Ops[i], p.be, p.grads[i]
	if op.Alpha == 0 {
		return p.accumulate(op.Args[0], func(out *tensor.Tensor) error { return be.Axpby(1, dy, 0, out) })
	}
	return p.accumulate(op.Args[0], func(out *tensor.Tensor) error { return p.dropoutBackward(i, dy, out) })
}

func (p *Program) bindBatchNorm(i int, op *ir.Op, shape []int) (err error) {
	a := &p.aux[i]
	c := []int{shape[1]}
	for _, t := range []**tensor.Tensor{&a.mean, &a.invStd} {
		if *t, err = p.alloc(KindValue, c); err != nil {
			return err
		}
	}
	key := p.g.Ops[op.Args[1]].Name
	a.runMean, a.runVar = p.params.state[key+":running_mean"], p.params.state[key+":running_var"]
	if a.runMean == nil || a.runVar == nil {
		return fmt.Errorf("no running statistics for %q in the parameter set", key)
	}
	return nil
}

func (p *Program) forwardBatchNorm(_ context.Context, i int32, m Mode) error {
	op, arg, y := p.structArgs(i)
	be, a := p.be, &p.aux[i]
	if !m.Train {
		return be.BatchNormInfer(arg(0), arg(1), arg(2), a.runMean, a.runVar, y, op.Alpha)
	}
	if err := be.BatchNorm(arg(0), arg(1), arg(2), y, a.mean, a.invStd, op.Alpha); err != nil {
		return err
	}
	return p.updateRunningStats(a, op.Alpha, arg(0).Rows())
}

func (p *Program) backwardBatchNorm(_ context.Context, i int32) error {
	op, arg, _ := p.structArgs(i)
	be, dy, a, args := p.be, p.grads[i], &p.aux[i], op.Args
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
}

func (p *Program) forwardHeadDot(_ context.Context, i int32, _ Mode) error {
	_, arg, y := p.structArgs(i)
	return p.be.HeadDot(arg(0), arg(1), y)
}

func (p *Program) backwardHeadDot(_ context.Context, i int32) error {
	op, arg, _ := p.structArgs(i)
	dx, err := p.zeroedIf(op.Args[0])
	if err != nil {
		return err
	}
	da, err := p.zeroedIf(op.Args[1])
	if err != nil {
		return err
	}
	return p.be.HeadDotBackward(arg(0), arg(1), p.grads[i], dx, da)
}

func (p *Program) forwardUAddV(ctx context.Context, i int32, _ Mode) error {
	op, arg, y := p.structArgs(i)
	return p.be.UAddV(ctx, p.adj(op.Args[0]).Adj, arg(1), arg(2), y)
}

func (p *Program) backwardUAddV(ctx context.Context, i int32) error {
	be, dy, args := p.be, p.grads[i], p.g.Ops[i].Args
	g := p.adj(args[0]).Adj
	if err := p.accumulate(args[1], func(out *tensor.Tensor) error { return be.EdgeReduce(ctx, g, true, dy, out) }); err != nil {
		return err
	}
	return p.accumulate(args[2], func(out *tensor.Tensor) error { return be.EdgeReduce(ctx, g, false, dy, out) })
}

func (p *Program) forwardUDotV(ctx context.Context, i int32, _ Mode) error {
	op, arg, y := p.structArgs(i)
	return p.be.SDDMM(ctx, p.adj(op.Args[0]).Adj, arg(1), arg(2), y)
}

func (p *Program) backwardUDotV(ctx context.Context, i int32) error {
	op, arg, _ := p.structArgs(i)
	be, dy, args := p.be, p.grads[i], op.Args
	g := p.adj(args[0]).Adj
	if err := p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
		return be.SpMM(ctx, g, false, dy, arg(2), beta, out)
	}); err != nil {
		return err
	}
	return p.accumulateBeta(args[2], func(out *tensor.Tensor, beta float64) error {
		return be.SpMM(ctx, g, true, dy, arg(1), beta, out)
	})
}

func (p *Program) forwardEdgeSoftmax(ctx context.Context, i int32, _ Mode) error {
	op, arg, y := p.structArgs(i)
	return p.be.EdgeSoftmax(ctx, p.adj(op.Args[0]).Adj, arg(1), y)
}

func (p *Program) backwardEdgeSoftmax(ctx context.Context, i int32) error {
	args, y := p.g.Ops[i].Args, p.val(i)
	g := p.adj(args[0]).Adj
	return p.accumulate(args[1], func(out *tensor.Tensor) error { return p.be.EdgeSoftmaxBackward(ctx, g, y, p.grads[i], out) })
}

func (p *Program) bindHeadMean(i int, op *ir.Op, shape []int) (err error) {
	a := &p.aux[i]
	heads := int(op.Heads)
	c := shape[1]
	if a.headMean, err = p.alloc(KindValue, []int{heads * c, c}); err != nil || p.dry() {
		return err
	}
	return uploadFloats(p.be, a.headMean, headMeanMatrix(heads, c))
}

func (p *Program) forwardHeadMean(_ context.Context, i int32, _ Mode) error {
	_, arg, y := p.structArgs(i)
	return p.be.GEMM(false, false, 1, arg(0), p.aux[i].headMean, 0, y)
}

func (p *Program) backwardHeadMean(_ context.Context, i int32) error {
	args, dy := p.g.Ops[i].Args, p.grads[i]
	return p.accumulateBeta(args[0], func(out *tensor.Tensor, beta float64) error {
		return p.be.GEMM(false, true, 1, dy, p.aux[i].headMean, beta, out)
	})
}

func (p *Program) bindLSTMAggregate(i int, op *ir.Op, shape []int) (err error) {
	a := &p.aux[i]
	adj := p.adj(op.Args[0]).Adj
	h, e := shape[1], int(adj.NNZ())
	if a.xw, err = p.scratchFor(KindValue, p.env.DType, []int{adj.Cols(), 4 * h}, 7); err != nil || p.env.Inference {
		return err
	}
	p.consumes = true
	// What the backend's LSTMAggregate saves for its backward:
	// LSTMSavedPerEdge values per edge and hidden unit.
	if a.gates, err = p.alloc(KindSaved, []int{e, 4 * h}); err != nil {
		return err
	}
	if a.cells, err = p.alloc(KindSaved, []int{e, h}); err != nil {
		return err
	}
	a.hprev, err = p.alloc(KindSaved, []int{e, h})
	return err
}

func (p *Program) forwardLSTMAggregate(ctx context.Context, i int32, _ Mode) error {
	op, arg, y := p.structArgs(i)
	a := &p.aux[i]
	if err := p.be.GEMM(false, false, 1, arg(1), arg(2), 0, a.xw); err != nil {
		return err
	}
	return p.be.LSTMAggregate(ctx, p.adj(op.Args[0]).Adj, a.xw, arg(3), arg(4), y, a.gates, a.cells, a.hprev)
}

// backwardLSTMAggregate differentiates lstm_aggregate(g, x, w_ih, w_hh,
// b): the backend returns d(x·W_ih) (into the scratch that held x·W_ih)
// and dW_hh; dx, dW_ih and db follow from d(x·W_ih).
func (p *Program) backwardLSTMAggregate(ctx context.Context, i int32) error {
	op, a, be, dy := &p.g.Ops[i], &p.aux[i], p.be, p.grads[i]
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
