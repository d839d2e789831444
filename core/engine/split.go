package engine

import (
	"context"
	"fmt"
	"slices"

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
// which ops its backward reruns, and which of the input rows that needs.
type SplitPlan struct {
	// Applies is false when the layer cannot split; Reason says why.
	Applies bool
	Reason  string
	// NeedsInput: the backward reruns ops that read the input rows
	// (which must then be bound, not zeroed). DstRows: they read only
	// the destinations' rows, the first rows of the input (the rest may
	// be zeros): a root term, x_v·W.
	NeedsInput, DstRows bool
	cut                 []bool // planned ops whose values (and argmax) are kept
	run                 []bool // planned ops the backward reruns
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
		case op.Kind == opNarrow || p.plan.prefix[i]:
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

// Rows of a value that a split backward needs.
const (
	rowsNone = iota
	rowsDst  // a source-side value's destination rows (the first)
	rowsAll
)

// dstSafe reports whether ops of kind k may run over source rows of
// which only the destinations' are the input's (the others zero): their
// values stay finite and their gradient is exactly zero where their
// output's is.
func dstSafe(k ir.Kind) bool {
	switch k {
	case ir.OpInput, ir.OpMatMul, ir.OpBias, ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpScale, ir.OpShift, ir.OpReLU, ir.OpLeakyReLU,
		ir.OpELU, ir.OpSigmoid, ir.OpTanh, ir.OpDropout, ir.OpConcat, ir.OpHeadDot, ir.OpHeadMean, ir.OpMaximum, ir.OpMinimum:
		return true
	}
	return false
}

// argRows returns the rows of op i's argument k that op i reads when it
// needs rows r of its own value (or of its gradient, for what its
// backward reads): a narrow reads its argument's destination rows, a
// graph op all of a source- or edge-side operand's, a destination-side
// op the destination rows of a source-side operand (rows that coincide),
// and a row-wise op the rows it needs of its own.
func (p *Program) argRows(i int, k int, r int, sides []byte) int {
	op := &p.g.Ops[i]
	a := op.Args[k]
	switch s := ir.Spec(op.Kind); {
	case op.Kind == opNarrow:
		return rowsDst
	case s != nil && s.Sides != "":
		if k < len(s.Sides)-1 && s.Sides[k] == 'd' {
			return rowsDst
		}
		return rowsAll
	case sides[i] == 'd' && sides[a] == 's':
		return rowsDst
	}
	return r
}

// onPath marks the ops on a path to the output.
func (p *Program) onPath() []bool {
	on := make([]bool, len(p.g.Ops))
	for _, o := range p.g.Outputs {
		on[o] = true
	}
	for i := len(p.g.Ops) - 1; i >= 0; i-- {
		if on[i] {
			for _, a := range p.g.Ops[i].Args {
				on[a] = true
			}
		}
	}
	return on
}

// gradRows returns, for every source-side value, the rows where its
// gradient may be non-zero: the destinations' when it reaches the output
// only through narrows and destination-side ops (a root term), all
// otherwise (through an aggregation).
func (p *Program) gradRows(sides []byte, on []bool) []int {
	g := make([]int, len(p.g.Ops))
	for i := len(p.g.Ops) - 1; i >= 0; i-- {
		if !on[i] || !p.needGrad[i] {
			continue
		}
		r := g[i]
		if sides[i] != 's' || slices.Contains(p.g.Outputs, int32(i)) {
			r = rowsAll
		}
		for k, a := range p.g.Ops[i].Args {
			if p.needGrad[a] && sides[a] == 's' {
				g[a] = max(g[a], p.argRows(i, k, r, sides))
			}
		}
	}
	return g
}

// Split plans the within-layer split of a training program bound with
// Env.Split: the aggregations' outputs are kept; the backward reruns the
// ops whose values (or forward state) it reads, back to the kept values,
// and the dropouts whose masks it reads (drawn from the step's seed and
// the rows' ids, whatever the values). It does not apply when the
// backward reads an edge value, or an aggregation's edge-sized state.
func (p *Program) Split() SplitPlan {
	n := len(p.g.Ops)
	sides := p.sides()
	sp := SplitPlan{cut: make([]bool, n), run: make([]bool, n)}
	on := p.onPath()
	grad := p.gradRows(sides, on)
	need := make([]int, n) // the rows of each value the backward reads
	needs := func(i, k, r int) {
		a := p.g.Ops[i].Args[k]
		need[a] = max(need[a], p.argRows(i, k, r, sides))
	}
	for i, op := range p.g.Ops {
		sp.cut[i] = on[i] && p.isCut(i, sides)
		if !on[i] || !p.needGrad[i] {
			continue
		}
		r := rowsAll
		if sides[i] == 's' {
			r = max(grad[i], rowsDst)
		}
		args, self := backwardReads(&p.g.Ops[i])
		if x := p.xFor[i]; x >= 0 { // the sign from a value that lives anyway (reluSigns)
			args, need[x] = nil, max(need[x], r)
		}
		for _, k := range args {
			needs(i, k, r)
		}
		if self {
			need[i] = max(need[i], r)
		}
		if op.Kind == ir.OpDropout && p.aux[i].mask != nil {
			sp.run[i] = true // its mask (kept, not made again in the backward)
		}
		if p.forwardState(i) {
			need[i] = max(need[i], r)
		}
	}
	safe := true
	for i := n - 1; i >= 0; i-- {
		op := &p.g.Ops[i]
		if need[i] == rowsNone || op.Kind == ir.OpParam || op.Kind == ir.OpGraph {
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
			sp.Reason = fmt.Sprintf("its backward reads the edge values of op #%d %s", i, op.Kind)
			return sp
		case 's':
			sp.NeedsInput = sp.NeedsInput || need[i] == rowsAll
			sp.DstRows = true
			safe = safe && dstSafe(op.Kind)
		}
		alias := op.Kind == ir.OpDropout && op.Alpha == 0
		if p.vals[i] == nil && op.Kind != ir.OpInput && !alias {
			sp.Reason = fmt.Sprintf("op #%d %s has no value of its own", i, op.Kind)
			return sp
		}
		sp.run[i] = op.Kind != ir.OpInput
		for k := range op.Args {
			needs(i, k, need[i])
		}
	}
	// Every source row, or only the destinations' (with no op that
	// could turn the zeros of the others into a non-finite value).
	sp.NeedsInput = sp.NeedsInput || sp.DstRows && !safe
	sp.DstRows = sp.DstRows && !sp.NeedsInput
	sp.Applies = true
	return sp
}

// SplitSaved returns the buffers the split keeps between the forward and
// the backward: every aggregation's output (and a max aggregation's
// winners), in a fixed order.
func (p *Program) SplitSaved(sp SplitPlan) []*tensor.Tensor {
	var out []*tensor.Tensor
	for i, c := range sp.cut {
		if c {
			out = append(out, p.cutTensors(i)...)
		}
	}
	return out
}

// cutTensors are the buffers a split keeps of aggregation op i.
func (p *Program) cutTensors(i int) []*tensor.Tensor {
	if a := p.aux[i].argmax; a != nil {
		return []*tensor.Tensor{p.vals[i], a}
	}
	return []*tensor.Tensor{p.vals[i]}
}

// ResumeSplit reruns, for a training Forward in mode m, the ops of the
// plan, and at each kept aggregation calls restore with the place of
// every buffer of it in SplitSaved's order, which restore fills with what
// that forward left there; Backward may then run. Buffers are filled
// when their op's turn comes, since a buffer may serve an earlier value
// first. The input rows must be bound when the plan NeedsInput (its
// destinations' rows with DstRows).
func (p *Program) ResumeSplit(ctx context.Context, sp SplitPlan, m Mode, restore func(k int, t *tensor.Tensor) error) error {
	if !sp.Applies {
		return fmt.Errorf("engine: the layer does not split: %s", sp.Reason)
	}
	if err := p.Resume(m); err != nil {
		return err
	}
	k := 0
	for i := range p.g.Ops {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		if sp.cut[i] {
			for _, t := range p.cutTensors(i) {
				if err := restore(k, t); err != nil {
					return fmt.Errorf("restore op #%d %s: %w", i, p.g.Ops[i].Kind, err)
				}
				k++
			}
			continue
		}
		if !sp.run[i] {
			continue
		}
		if err := p.forwardOp(ctx, int32(i), m); err != nil {
			return fmt.Errorf("recompute op #%d %s: %w", i, p.g.Ops[i].Kind, err)
		}
	}
	return nil
}

// SplitSize is what the split of a training program over one block moves
// and reruns: the bytes it keeps, and the work of the ops its backward
// reruns (ResumeSplit), for a roofline price.
type SplitSize struct {
	Kept int64 // bytes of the buffers SplitSaved returns
	// RerunValues are the elements of the values the rerun ops write
	// (each op's own buffer; a value that aliases its argument has none).
	RerunValues int64
	// RerunDense is Σ K·M over the rerun products with a parameter [K,M]
	// (a product over R rows is 2·R·K·M flops).
	RerunDense int64
	// Buffers are the kept buffers in SplitSaved's order: each one row
	// per destination of the block, of these columns and dtype.
	Buffers []KeptBuffer
}

// KeptBuffer is the shape of one buffer a split keeps: a row per
// destination, Cols columns of DType (Cols 0: not a matrix of a row per
// destination).
type KeptBuffer struct {
	DType tensor.DType
	Cols  int
}

// Split returns the split plan of the training program that Bind would
// make for one block of this shape (usage u, with Split set) and its
// size: the bytes of the buffers SplitSaved returns and the work the
// backward reruns (zero when it does not apply).
func (s *Sizer) Split(block BlockShape, u Usage) (SplitPlan, SplitSize, error) {
	u.Split = true
	p, err := s.bind([]BlockShape{block}, block.Src, u, &meter{})
	if err != nil {
		return SplitPlan{}, SplitSize{}, err
	}
	sp := p.Split()
	var size SplitSize
	if !sp.Applies {
		return sp, size, nil
	}
	for _, t := range p.SplitSaved(sp) {
		size.Kept += int64(t.Numel()) * int64(t.DType().Size())
		kb := KeptBuffer{DType: t.DType()}
		if sh := t.Shape(); len(sh) == 2 && sh[0] == block.Dst {
			kb.Cols = sh[1]
		}
		size.Buffers = append(size.Buffers, kb)
	}
	for i, run := range sp.run {
		if !run {
			continue
		}
		if v := p.vals[i]; v != nil {
			size.RerunValues += int64(v.Numel())
		}
		op := &p.g.Ops[i]
		if op.Kind == ir.OpMatMul && p.g.Ops[op.Args[1]].Kind == ir.OpParam {
			w := p.g.Ops[op.Args[1]].Shape
			size.RerunDense += w[0] * w[1]
		}
	}
	return sp, size, nil
}
