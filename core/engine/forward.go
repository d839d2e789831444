package engine

import (
	"context"
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// Mode selects training (dropout on, batch statistics) or evaluation.
type Mode struct {
	Train bool
	Seed  uint64 // dropout stream; vary it per step
	// AccumulateGrads makes Backward add to the parameter gradients
	// instead of overwriting them (micro-batches of one step).
	AccumulateGrads bool
}

// val returns the current value of op i (an alias in evaluation for dropout).
func (p *Program) val(i int32) *tensor.Tensor { return p.cur[i] }

// Forward runs the graph on the bound input.
func (p *Program) Forward(ctx context.Context, m Mode) error {
	if m.Train && p.env.Inference {
		return fmt.Errorf("engine: a training forward on a program bound for inference")
	}
	p.mode = m
	p.saved = m.Train
	for i := range p.g.Ops {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		if err := p.forwardOp(ctx, int32(i), m); err != nil {
			return fmt.Errorf("forward op #%d %s: %w", i, p.g.Ops[i].Kind, err)
		}
	}
	return nil
}

// adj returns the graph bound to graph op h (plan checked it exists).
func (p *Program) adj(h int32) *Graph {
	op := &p.g.Ops[h]
	gr, _ := p.env.graph(op.Layer, op.Name)
	return gr
}

func (p *Program) forwardOp(ctx context.Context, i int32, m Mode) error {
	op := &p.g.Ops[i]
	be := p.be
	p.cur[i] = p.vals[i]
	y := p.vals[i]
	arg := func(k int) *tensor.Tensor { return p.val(op.Args[k]) }
	if a := &p.aux[i]; a.epilogue > 0 {
		return p.forwardEpilogue(ctx, i)
	} else if a.inEpilogue {
		return nil // the aggregation's epilogue wrote it (or it is never formed)
	}
	if s := ir.Spec(op.Kind); s != nil {
		return p.forwardTable(ctx, i, s)
	}
	switch op.Kind {
	case ir.OpInput, ir.OpParam, ir.OpGraph:
		return nil
	case ir.OpAggregate:
		g := p.adj(op.Args[0])
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
	case ir.OpSpMMEdge:
		return be.SpMM(ctx, p.adj(op.Args[0]).Adj, false, arg(1), arg(2), 0, y)
	case ir.OpMatMul:
		if p.aux[i].maskedBy > 0 && m.Train {
			return p.dropGEMM(i, false, arg(1), 0, y)
		}
		return be.GEMM(false, false, 1, arg(0), arg(1), 0, y)
	case ir.OpBias:
		return be.Elementwise(backend.Add, arg(0), arg(1), y)
	case ir.OpScale:
		if err := be.Fill(y, 0); err != nil {
			return err
		}
		return be.Axpby(op.Alpha, arg(0), 0, y)
	case ir.OpConcat:
		a, b := arg(0), arg(1)
		if err := be.CopyCols(y, 0, a, 0, a.Cols()); err != nil {
			return err
		}
		return be.CopyCols(y, a.Cols(), b, 0, b.Cols())
	case ir.OpDropout:
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
			return da.DropoutApply(mixSeed(m.Seed, uint64(i)), op.Alpha, arg(0), mask, y)
		}
		if err := be.DropoutMask(mixSeed(m.Seed, uint64(p.plan.orig[i])), op.Alpha, mask); err != nil {
			return err
		}
		return be.Elementwise(backend.Mul, arg(0), mask, y)
	case ir.OpBatchNorm:
		a := &p.aux[i]
		if !m.Train {
			return be.BatchNormInfer(arg(0), arg(1), arg(2), a.runMean, a.runVar, y, op.Alpha)
		}
		if err := be.BatchNorm(arg(0), arg(1), arg(2), y, a.mean, a.invStd, op.Alpha); err != nil {
			return err
		}
		return p.updateRunningStats(a, op.Alpha, arg(0).Rows())
	case ir.OpHeadDot:
		return be.HeadDot(arg(0), arg(1), y)
	case ir.OpUAddV:
		return be.UAddV(ctx, p.adj(op.Args[0]).Adj, arg(1), arg(2), y)
	case ir.OpUDotV:
		return be.SDDMM(ctx, p.adj(op.Args[0]).Adj, arg(1), arg(2), y)
	case ir.OpEdgeSoftmax:
		return be.EdgeSoftmax(ctx, p.adj(op.Args[0]).Adj, arg(1), y)
	case ir.OpHeadMean:
		return be.GEMM(false, false, 1, arg(0), p.aux[i].headMean, 0, y)
	case ir.OpLSTMAggregate:
		a := &p.aux[i]
		if err := be.GEMM(false, false, 1, arg(1), arg(2), 0, a.xw); err != nil {
			return err
		}
		return be.LSTMAggregate(ctx, p.adj(op.Args[0]).Adj, a.xw, arg(3), arg(4), y, a.gates, a.cells, a.hprev)
	case opNarrow:
		return be.Gather(arg(0), p.aux[i].rows, y)
	}
	return fmt.Errorf("op kind %q is not supported by the engine", op.Kind)
}

// dropoutApplier is implemented by backends that build the dropout mask
// and apply it in one pass (the cpu backend): y = x·mask, with the same mask
// as DropoutMask followed by Mul. mask may be nil when no backward pass
// needs it (the dropout of an input that takes no gradient).
type dropoutApplier interface {
	DropoutApply(seed uint64, p float64, x, mask, y *tensor.Tensor) error
}

// updateRunningStats folds the batch statistics into the running estimates
// with momentum 0.1 and the unbiased variance, as PyTorch does.
func (p *Program) updateRunningStats(a *opAux, eps float64, rows int) error {
	mean, err := p.downloadFloats(a.mean)
	if err != nil {
		return err
	}
	inv, err := p.downloadFloats(a.invStd)
	if err != nil {
		return err
	}
	rm, err := p.downloadFloats(a.runMean)
	if err != nil {
		return err
	}
	rv, err := p.downloadFloats(a.runVar)
	if err != nil {
		return err
	}
	unbias := 1.0
	if rows > 1 {
		unbias = float64(rows) / float64(rows-1)
	}
	for c := range mean {
		v := math.Max(1/(inv[c]*inv[c])-eps, 0) * unbias
		rm[c] = 0.9*rm[c] + 0.1*mean[c]
		rv[c] = 0.9*rv[c] + 0.1*v
	}
	if err := p.uploadFloats(a.runMean, rm); err != nil {
		return err
	}
	return p.uploadFloats(a.runVar, rv)
}

// mixSeed derives an independent stream per (step seed, op).
func mixSeed(seed, op uint64) uint64 {
	r := newSplitMix(seed ^ (op * 0xd1b54a32d192ed03))
	return r.next()
}
