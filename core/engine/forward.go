package engine

import (
	"context"
	"fmt"
	"math"

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
	p.cur[i] = p.vals[i]
	if a := &p.aux[i]; a.epilogue > 0 {
		return p.forwardEpilogue(ctx, i)
	} else if a.inEpilogue {
		return nil // the aggregation's epilogue wrote it (or it is never formed)
	}
	if op.Kind == opNarrow {
		return p.be.Gather(p.val(op.Args[0]), p.aux[i].rows, p.vals[i])
	}
	if op.Kind == ir.OpInput && p.wideIn {
		return p.widenInput(i)
	}
	if p.plan.prefix[i] {
		return p.withPrefixArgs(i, false, func() error { return p.forwardKind(ctx, i, m) })
	}
	return p.forwardKind(ctx, i, m)
}

// forwardKind runs op i by its kind.
func (p *Program) forwardKind(ctx context.Context, i int32, m Mode) error {
	op := &p.g.Ops[i]
	switch s := ir.Spec(op.Kind); {
	case s == nil:
		return fmt.Errorf("op kind %q is not supported by the engine", op.Kind)
	case s.Class == ir.ClassLeaf:
		return nil
	case s.Class == ir.ClassStructural:
		return p.forwardStructural(ctx, i, m)
	default:
		return p.forwardTable(ctx, i, s)
	}
}

// dropoutApplier is implemented by backends that build the dropout mask
// and apply it in one pass (the cpu backend): y = x·mask, with the same mask
// as DropoutMask followed by Mul. mask may be nil when no backward pass
// needs it (the dropout of an input that takes no gradient).
type dropoutApplier interface {
	DropoutApply(seed uint64, rows *tensor.Tensor, p float64, x, mask, y *tensor.Tensor) error
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
