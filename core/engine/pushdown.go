package engine

import (
	"slices"

	"strata/core/ir"
	"strata/core/tensor"
)

// Narrows pushed below row-wise ops. In a block, a layer's destinations
// are the first rows of its sources, and the planner narrows a
// source-row value where it meets a destination-row one: GraphSAGE's
// root term x·W_r + b, added to the aggregation, is planned as
// narrow(bias(matmul(x, W_r), b)). The product then runs over every
// source row, and a mini-batch's first layer has about fanout times more
// sources than destinations: on a 2-layer SAGE with fanouts [10, 10]
// that product was most of the first layer's arithmetic, forward and
// backward.
//
// pushNarrows moves each narrow below the row-wise ops whose value only
// it (or a further pushed op) reads, down to the first operand that
// something else reads too: the ops in between are computed on the
// destination rows alone, and the lowest reads the first rows of its
// operand in place (plan.prefix; tensor.Prefix, no copy). Row i of a
// row-wise op depends on row i of its node operands alone, so every row
// it still computes is the row it computed before, from the same
// operands; only the weight gradient xᵀ·dy sums fewer rows, the ones it
// drops having been zero.
//
// A product that multiplies the input's dropout in (dropgemm.go) or reads
// 16-bit input rows region by region (half.go) multiplies the first rows
// of the input. Not pushed into: input rows given by their entries
// (sparse.go), or a dropout of them; the narrow then stays where it is.

// rowWise reports whether planned op i computes each node row from the
// same row of its node operands alone (elementwise ops, a bias, a
// product with a weight, a concatenation).
func (p *plan) rowWise(i int) bool {
	op := &p.g.Ops[i]
	if p.space[i] != SpaceNode {
		return false
	}
	switch op.Kind {
	case ir.OpBias, ir.OpScale, ir.OpConcat:
		return true
	case ir.OpMatMul:
		return op.Args[0] != op.Args[1] && p.space[op.Args[1]] == SpaceNone
	}
	s := ir.Spec(op.Kind)
	return s != nil && (s.Class == ir.ClassUnary || s.Class == ir.ClassBinary)
}

// rowOperand reports whether value a is a node operand of op u with u's
// rows.
func (p *plan) rowOperand(u, a int32) bool {
	return p.space[a] == SpaceNode && p.rows[a] == p.rows[u] && slices.Contains(p.g.Ops[u].Args, a)
}

// pushNarrows returns the plan with its narrows pushed below the
// row-wise ops that feed only them (see above).
func pushNarrows(p *plan, plainInput bool) *plan {
	want := p.narrowedRows()
	p.keepReadable(want, plainInput)
	if !slices.ContainsFunc(want, func(r int) bool { return r > 0 }) {
		return p
	}
	q := &plan{g: &ir.Graph{}}
	remap := make([]int32, len(p.g.Ops))
	for i, op := range p.g.Ops {
		if op.Kind == opNarrow && want[op.Args[0]] == p.rows[i] {
			remap[i] = remap[op.Args[0]] // the op below already has these rows
			continue
		}
		op.Args = slices.Clone(op.Args)
		rows, prefix := p.rows[i], false
		if want[i] > 0 {
			rows = want[i]
		}
		for k, a := range op.Args {
			op.Args[k] = remap[a]
			prefix = prefix || want[i] > 0 && p.space[a] == SpaceNode && q.rows[remap[a]] > rows
		}
		remap[i] = q.push(op, rows, p.space[i], p.orig[i], prefix)
	}
	q.g.Outputs = make([]int32, len(p.g.Outputs))
	for k, o := range p.g.Outputs {
		q.g.Outputs[k] = remap[o]
	}
	return q
}

// narrowedRows returns, for every planned op, the rows it can be
// computed on when its narrows are pushed below it (0: as planned): a
// row-wise op all of whose readers are narrows to, or pushed ops on, the
// same rows.
func (p *plan) narrowedRows() []int {
	readers := graphReaders(p.g)
	want := make([]int, len(p.g.Ops))
	for i := len(p.g.Ops) - 1; i >= 0; i-- {
		if !p.rowWise(i) || len(readers[i]) == 0 {
			continue
		}
		r := 0
		for _, u := range readers[i] {
			ur := -1
			switch {
			case u < 0: // an output keeps its rows
			case p.g.Ops[u].Kind == opNarrow:
				ur = p.rows[u]
			case want[u] > 0 && p.rowOperand(u, int32(i)):
				ur = want[u]
			}
			if ur <= 0 || r > 0 && ur != r {
				r = -1
				break
			}
			r = ur
		}
		if r > 0 && r < p.rows[i] {
			want[i] = r
		}
	}
	return want
}

// keepReadable undoes the pushes that would make an op read the first
// rows of a value that has no rows to read in place: the entry-given
// input, or a dropout of it (see above). Operands come before
// their readers, so one pass in order settles every op.
func (p *plan) keepReadable(want []int, plainInput bool) {
	if plainInput {
		return
	}
	for i := range p.g.Ops {
		if want[i] == 0 {
			continue
		}
		for _, a := range p.g.Ops[i].Args {
			if p.space[a] == SpaceNode && want[a] != want[i] && p.readsInput(a) {
				want[i] = 0
				break
			}
		}
	}
}

// readsInput reports whether planned value a is the input or a dropout
// of it.
func (p *plan) readsInput(a int32) bool {
	op := &p.g.Ops[a]
	return op.Kind == ir.OpInput || op.Kind == ir.OpDropout && p.g.Ops[op.Args[0]].Kind == ir.OpInput
}

// push appends a planned op and returns its index.
func (p *plan) push(op ir.Op, rows int, sp Space, orig int32, prefix bool) int32 {
	p.g.Ops = append(p.g.Ops, op)
	p.rows = append(p.rows, rows)
	p.space = append(p.space, sp)
	p.orig = append(p.orig, orig)
	p.prefix = append(p.prefix, prefix)
	return int32(len(p.g.Ops) - 1)
}

// withPrefixArgs runs fn, op i's forward or backward, with the node
// operands that have more rows than op i (plan.prefix) seen as their
// destination rows (the first, or those from Env.DstFirst on): their
// values and, in a backward pass, their gradients (first rows). A
// gradient that op i contributes to first is cleared whole beforehand,
// so that its rows past the prefix are zero; op i then writes the prefix.
func (p *Program) withPrefixArgs(i int32, backward bool, fn func() error) error {
	rows := p.plan.rows[i]
	type held struct {
		a         int32
		cur, grad *tensor.Tensor
	}
	var undo []held
	defer func() {
		for _, h := range slices.Backward(undo) {
			p.cur[h.a], p.grads[h.a] = h.cur, h.grad
		}
	}()
	for _, a := range p.g.Ops[i].Args {
		if p.plan.space[a] != SpaceNode || p.plan.rows[a] <= rows || slices.ContainsFunc(undo, func(h held) bool { return h.a == a }) {
			continue
		}
		h := held{a: a, cur: p.cur[a], grad: p.grads[a]}
		cur, err := p.dstRows(p.cur[a], rows)
		if err != nil {
			return err
		}
		var grad *tensor.Tensor
		if backward && p.needGrad[a] && p.grads[a] != nil {
			if !p.gradInit[a] {
				if err := p.be.Fill(p.grads[a], 0); err != nil {
					return err
				}
			}
			if grad, err = tensor.Prefix(p.grads[a], rows); err != nil {
				return err
			}
		} else {
			grad = p.grads[a]
		}
		undo = append(undo, h)
		p.cur[a], p.grads[a] = cur, grad
	}
	return fn()
}
