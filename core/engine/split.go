package engine

import (
	"context"
	"fmt"

	"strata/core/ir"
	"strata/core/tensor"
)

// Within-layer split of a layer's intermediates (HongTu §4.2, Fig. 4c):
// the forward keeps only the outputs of the layer's aggregations (the
// ops that reduce source or edge rows onto the destinations: aggregate,
// spmm_edge, the segment reductions), O(destinations) each, and the
// backward restores them and reruns only what its gradients read: the
// ops after the aggregations (the update), and before them only what the
// backward of the pre-aggregation part reads (a product with a weight
// before the aggregation reads the input rows; an aggregation of the
// input itself reads nothing). A layer whose backward would read
// edge-sized values (attention) does not split.

// SplitPlan is how a training program splits: which values it keeps,
// which ops its backward reruns, and whether that needs the input rows.
type SplitPlan struct {
	// Applies is false when the layer cannot split; Reason says why.
	Applies bool
	Reason  string
	// NeedsInput: the backward reruns ops that read the input rows
	// (which must then be bound, not zeroed).
	NeedsInput bool
	cut        []bool // planned ops whose values (and argmax) are kept
	run        []bool // planned ops the backward reruns
}

// sides returns the row side of every planned value: 's' a source row,
// 'd' a destination row, 'e' an edge row, 0 none (parameters, graphs and
// what is computed from parameters alone). A value combining source and
// destination rows is on the destinations (the planner narrows the
// source operand, or the two coincide).
func (p *Program) sides() []byte {
	out := make([]byte, len(p.g.Ops))
	for i, op := range p.g.Ops {
		s := ir.Spec(op.Kind)
		switch {
		case op.Kind == ir.OpInput:
			out[i] = 's'
		case op.Kind == ir.OpParam || op.Kind == ir.OpGraph:
		case op.Kind == opNarrow:
			out[i] = 'd'
		case s != nil && s.Sides != "":
			out[i] = s.Sides[len(s.Sides)-1]
		default:
			for _, a := range op.Args {
				switch out[a] {
				case 'd':
					out[i] = 'd'
				case 's', 'e':
					if out[i] == 0 {
						out[i] = out[a]
					}
				}
			}
		}
	}
	return out
}

// isCut reports whether op i reduces source or edge rows onto the
// destinations (an aggregation whose output the split keeps).
func (p *Program) isCut(i int, sides []byte) bool {
	op := &p.g.Ops[i]
	s := ir.Spec(op.Kind)
	if s == nil || s.Sides == "" || sides[i] != 'd' {
		return false
	}
	for k := range len(s.Sides) - 1 {
		if c := s.Sides[k]; (c == 's' || c == 'e') && k < len(op.Args) {
			return true
		}
	}
	return false
}

// forwardState reports whether op i's backward reads state its forward
// leaves besides its value (a max aggregation's winners, batch and layer
// norm statistics, LSTM gates); dropout masks are not counted: they are
// drawn from the step's seed and the rows' ids, whatever the values.
func (p *Program) forwardState(i int) bool {
	a := &p.aux[i]
	return a.argmax != nil || a.mean != nil || a.invStd != nil || a.gates != nil || a.cells != nil || a.hprev != nil || a.normed != nil
}

// Split plans the within-layer split of a training program bound with
// Env.Split.
func (p *Program) Split() SplitPlan {
	n := len(p.g.Ops)
	sides := p.sides()
	sp := SplitPlan{cut: make([]bool, n), run: make([]bool, n)}
	// back[i]: op i's backward runs (it is on a path to the output and
	// something before it takes a gradient).
	onPath := make([]bool, n)
	for _, o := range p.g.Outputs {
		onPath[o] = true
	}
	for i := n - 1; i >= 0; i-- {
		if onPath[i] {
			for _, a := range p.g.Ops[i].Args {
				onPath[a] = true
			}
		}
	}
	need := make([]bool, n) // values the backward reads
	for i, op := range p.g.Ops {
		sp.cut[i] = p.isCut(i, sides)
		if !onPath[i] || !p.needGrad[i] {
			continue
		}
		s := ir.Spec(op.Kind)
		if s != nil {
			for _, k := range s.ReadsArgs {
				need[op.Args[k]] = true
			}
			need[i] = need[i] || s.ReadsY
		}
		if op.Kind == ir.OpDropout && op.Alpha != 0 {
			sp.run[i] = true // its mask
		}
		if p.forwardState(i) {
			need[i] = true
		}
	}
	// The values needed, back to the kept ones and the leaves.
	for i := n - 1; i >= 0; i-- {
		op := &p.g.Ops[i]
		if !need[i] || op.Kind == ir.OpParam || op.Kind == ir.OpGraph {
			continue
		}
		if sp.cut[i] {
			if a := &p.aux[i]; a.gates != nil || a.mean != nil || a.normed != nil {
				sp.Reason = fmt.Sprintf("op #%d %s keeps edge-sized state for its backward", i, op.Kind)
				return sp
			}
			continue // restored
		}
		switch sides[i] {
		case 'e':
			sp.Reason = fmt.Sprintf("the backward reads edge values (op #%d %s)", i, op.Kind)
			return sp
		case 's':
			sp.NeedsInput = true
		}
		alias := op.Kind == ir.OpDropout && op.Alpha == 0
		if p.vals[i] == nil && op.Kind != ir.OpInput && !alias {
			sp.Reason = fmt.Sprintf("op #%d %s has no value of its own", i, op.Kind)
			return sp
		}
		sp.run[i] = op.Kind != ir.OpInput
		for _, a := range op.Args {
			need[a] = true
		}
	}
	for i := range sp.cut {
		if sp.cut[i] && !onPath[i] {
			sp.cut[i] = false
		}
	}
	sp.Applies = true
	return sp
}

// SplitSaved returns the buffers the split keeps between the forward and
// the backward: every aggregation's output (and a max aggregation's
// winners), in a fixed order.
func (p *Program) SplitSaved(sp SplitPlan) []*tensor.Tensor {
	var out []*tensor.Tensor
	for i, c := range sp.cut {
		if !c {
			continue
		}
		out = append(out, p.vals[i])
		if a := p.aux[i].argmax; a != nil {
			out = append(out, a)
		}
	}
	return out
}

// ResumeSplit declares that the buffers of SplitSaved hold the state of
// a training Forward in mode m (restored by the caller) and reruns the
// ops of the plan, so that Backward may run. The input rows must be
// bound when the plan NeedsInput.
func (p *Program) ResumeSplit(ctx context.Context, sp SplitPlan, m Mode) error {
	if !sp.Applies {
		return fmt.Errorf("engine: the layer does not split: %s", sp.Reason)
	}
	if err := p.Resume(m); err != nil {
		return err
	}
	for i := range p.g.Ops {
		if !sp.run[i] {
			continue
		}
		if err := ctxErr(ctx); err != nil {
			return err
		}
		if err := p.forwardOp(ctx, int32(i), m); err != nil {
			return fmt.Errorf("recompute op #%d %s: %w", i, p.g.Ops[i].Kind, err)
		}
	}
	return nil
}

// Split returns the split plan of the training program that Bind would
// make for one block of this shape (usage u, with Split set) and the
// bytes of the buffers SplitSaved returns for it.
func (s *Sizer) Split(block BlockShape, u Usage) (SplitPlan, int64, error) {
	u.Split = true
	p, err := s.bind([]BlockShape{block}, block.Src, u, &meter{})
	if err != nil {
		return SplitPlan{}, 0, err
	}
	sp := p.Split()
	var bytes int64
	if sp.Applies {
		for _, t := range p.SplitSaved(sp) {
			bytes += int64(t.Numel()) * int64(t.DType().Size())
		}
	}
	return sp, bytes, nil
}
