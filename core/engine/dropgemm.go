package engine

import (
	"slices"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// A layer's input dropout is never formed where the backend can multiply
// by it directly (backend.DropoutGEMMer): a dropout of the program's input
// (which takes no gradient) whose only readers are matmuls, as their left
// operand, holds no buffer, and each matmul runs DropoutGEMM on the input
// with the dropout's seed, in the forward pass and for the weight gradient,
// a region of the masked input at a time in a scratch of
// backend.DropoutGEMMScratch elements. The products are those of the
// unfused sequence bit for bit (the kernel makes GEMM's own calls). On
// coauthor-physics this is the 1.08 GiB the dropped-out 34,493 × 8,415
// input held through the step.
//
// Not fused: an evaluation forward (the dropout passes its input, and the
// matmul is a plain GEMM), inference programs (no dropout), the reference
// binding without buffer sharing (noShare, which tests compare with), and
// programs whose input takes a gradient (Env.InputGrad), and programs
// whose backward may run without the input's rows (Env.Resumable).

// fuseInputDropouts marks the dropouts that run inside their matmuls.
func (p *Program) fuseInputDropouts() {
	if _, ok := p.be.(backend.DropoutGEMMer); !ok || p.env.Inference || p.env.InputGrad || p.env.Resumable || p.noShare || p.env.Input == nil {
		return // (an input given by its entries: its matmuls mask them, sparse.go)
	}
	readers := graphReaders(p.g)
	for d := range p.g.Ops {
		if !inputDropoutIntoMatMuls(p.g, readers, d) {
			continue
		}
		ok := true
		// Fused only where the scratch is smaller than the dropout's value
		// (an input of few rows fits its regions at once).
		for _, r := range readers[d] {
			ok = ok && p.dropScratchSize(int(p.g.Ops[r].Shape[1])) < p.env.Input.Numel()
		}
		if !ok {
			continue
		}
		p.aux[d].dropInto = true
		for _, r := range readers[d] {
			p.aux[r].maskedBy = int32(d)
		}
		p.groupDropReaders(readers, readers[d])
	}
}

// Matmuls that read the same fused dropout (GraphSAGE's self and
// neighbour weights, x·W_r and x·W_n) share its masking: the first of them
// (the group's lead) runs all their products over one pass of the masked
// input, in the forward pass (x·W into each one's value) and for the
// weight gradients (xᵀ·dy into each weight's gradient), instead of one
// pass per matmul (backend.DropoutGEMMSharer; a backend without it runs
// DropoutGEMM once per product at the same point, with the same results).
// The buffer plan follows: a later member's value is written at the
// lead's forward, so it lives from there, and its output gradient, read
// at the lead's backward, lives until then (planBuffers). A member's
// weight is a parameter that only it reads, so moving its gradient's
// product to the lead's backward changes no sum's order.

// groupDropReaders makes the readers rs of one fused dropout whose weight
// is a parameter read by that matmul alone a group (when there are two or
// more): the first is the lead.
func (p *Program) groupDropReaders(readers [][]int32, rs []int32) {
	var group []int32
	for _, r := range rs {
		w := p.g.Ops[r].Args[1]
		// (a matmul over the first rows alone multiplies its own rows)
		if learnable(&p.g.Ops[w]) && len(readers[w]) == 1 && !p.plan.prefix[r] {
			group = append(group, r)
		}
	}
	if len(group) < 2 {
		return
	}
	slices.Sort(group)
	p.aux[group[0]].dropGroup = group
	for _, r := range group {
		p.aux[r].dropLead = group[0]
	}
}

// bindDropGEMM allocates the scratch of matmul op i that multiplies by its
// input's dropout: enough for the forward product (x·W) and the weight
// gradient (xᵀ·dy), shared by every such matmul of the same size.
//
// In float32 the dropout also keeps its mask as bits (one int32 word per
// 32 elements, KindIndex: 36 MB for physics' input), which the forward
// product records and the weight gradient reads instead of drawing the
// mask a second time.
func (p *Program) bindDropGEMM(i int, shape []int) error {
	size := p.dropScratchSize(shape[1])
	if l := p.aux[i].dropLead; l > 0 { // one scratch for the group's products
		for _, r := range p.aux[l].dropGroup {
			size = max(size, p.dropScratchSize(int(p.g.Ops[r].Shape[1])))
		}
	}
	var err error
	if p.aux[i].dropScratch, err = p.scratchFor(KindScratch, p.env.DType, []int{max(size, 1)}, 9); err != nil {
		return err
	}
	d := &p.aux[p.aux[i].maskedBy]
	if d.dropKeep == nil && p.env.DType == tensor.Float32 {
		d.dropKeep, err = p.allocT(KindIndex, tensor.Int32, backend.DropoutKeepWords(p.env.Input.Rows(), p.env.Input.Cols()))
	}
	return err
}

// dropScratchSize is the scratch of a DropoutGEMM of the input by a
// weight of n columns, forward and backward.
func (p *Program) dropScratchSize(n int) int {
	rows, cols := p.env.Input.Rows(), p.env.Input.Cols()
	return max(backend.DropoutGEMMScratch(rows, n, cols), backend.DropoutGEMMScratch(cols, n, rows))
}

// dropGEMM runs matmul op i over its input's dropout: the forward product
// (transX false, beta 0, into c) or the weight gradient (transX true).
//
// A matmul that reads only the first rows of the dropout (plan.prefix, a
// root term) multiplies the first rows of the input with their keys, and
// draws its mask without the recorded bits, which are the whole input's.
func (p *Program) dropGEMM(i int32, transX bool, b *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	d := p.aux[i].maskedBy
	op := &p.g.Ops[d]
	x, keys, keep := p.val(op.Args[0]), p.aux[d].dropRows, p.aux[d].dropKeep
	if p.plan.prefix[i] {
		var err error
		if x, err = tensor.Prefix(x, p.plan.rows[i]); err != nil {
			return err
		}
		if keys, err = tensor.Prefix(keys, p.plan.rows[i]); err != nil {
			return err
		}
		keep = nil
	}
	return p.be.(backend.DropoutGEMMer).DropoutGEMM(p.opStream(p.mode.Seed, d), keys, op.Alpha, transX,
		x, b, beta, c, p.aux[i].dropScratch, keep)
}

// dropGroupForward runs the forward products of the group that matmul op
// i leads, each into its member's value.
func (p *Program) dropGroupForward(i int32) error {
	var prods []backend.DropoutProduct
	for _, r := range p.aux[i].dropGroup {
		// A later member's weight may come after the lead in op order: a
		// parameter's value is bound, not set by its forward.
		prods = append(prods, backend.DropoutProduct{B: p.vals[p.g.Ops[r].Args[1]], C: p.vals[r]})
	}
	return p.dropGEMMs(i, false, prods)
}

// dropGroupGrads runs the weight gradients of the group that matmul op i
// leads, at the lead's backward (which runs it even when the lead's own
// gradient was never written): those of the members whose backward would
// have run, with their output gradients, into their weights' gradients.
func (p *Program) dropGroupGrads(i int32) error {
	var prods []backend.DropoutProduct
	for _, r := range p.aux[i].dropGroup {
		w := p.g.Ops[r].Args[1]
		if !p.needGrad[r] || !p.gradInit[r] || !p.needGrad[w] {
			continue
		}
		beta := 1.0
		if !p.gradInit[w] {
			beta, p.gradInit[w] = 0, true
		}
		prods = append(prods, backend.DropoutProduct{B: p.grads[r], Beta: beta, C: p.grads[w]})
	}
	if len(prods) == 0 {
		return nil
	}
	return p.dropGEMMs(i, true, prods)
}

// dropGEMMs runs products over the dropout that matmul op i reads: in one
// call where the backend shares the masking (backend.DropoutGEMMSharer),
// else one DropoutGEMM each.
func (p *Program) dropGEMMs(i int32, transX bool, prods []backend.DropoutProduct) error {
	if sh, ok := p.be.(backend.DropoutGEMMSharer); ok {
		d := p.aux[i].maskedBy
		op := &p.g.Ops[d]
		return sh.DropoutGEMMs(p.opStream(p.mode.Seed, d), p.aux[d].dropRows, op.Alpha, transX, p.val(op.Args[0]), prods, p.aux[i].dropScratch, p.aux[d].dropKeep)
	}
	for _, pr := range prods {
		if err := p.dropGEMM(i, transX, pr.B, pr.Beta, pr.C); err != nil {
			return err
		}
	}
	return nil
}

// graphReaders lists, for every value of g, the ops that read it (-1
// for a program output).
func graphReaders(g *ir.Graph) [][]int32 {
	readers := make([][]int32, len(g.Ops))
	for i, op := range g.Ops {
		for _, a := range op.Args {
			readers[a] = append(readers[a], int32(i))
		}
	}
	for _, o := range g.Outputs {
		readers[o] = append(readers[o], -1)
	}
	return readers
}

// inputDropoutIntoMatMuls reports whether op d is a dropout of the
// program's input whose only readers are matmuls, as their left operand:
// the dropouts a DropoutGEMMer backend multiplies in when training.
func inputDropoutIntoMatMuls(g *ir.Graph, readers [][]int32, d int) bool {
	op := g.Ops[d]
	if op.Kind != ir.OpDropout || op.Alpha <= 0 || g.Ops[op.Args[0]].Kind != ir.OpInput || len(readers[d]) == 0 {
		return false
	}
	for _, r := range readers[d] {
		if r < 0 || g.Ops[r].Kind != ir.OpMatMul || g.Ops[r].Args[0] != int32(d) || g.Ops[r].Args[1] == int32(d) {
			return false
		}
	}
	return true
}

// MultipliedInDropouts marks the ops of g that a training program on a
// backend.DropoutGEMMer runs inside their matmuls (the input dropouts
// whose only readers are matmuls), each masked twice a step: for the
// forward products and again for the weight gradients. A cost model
// counts their masking from it; the engine fuses them unless the
// binding rules it out (inference, an input gradient, a scratch no
// smaller than the input).
func MultipliedInDropouts(g *ir.Graph) []bool {
	readers := graphReaders(g)
	out := make([]bool, len(g.Ops))
	for d := range g.Ops {
		out[d] = inputDropoutIntoMatMuls(g, readers, d)
	}
	return out
}
