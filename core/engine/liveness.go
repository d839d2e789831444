package engine

import (
	"slices"
	"sort"

	"strata/core/backend"

	"strata/core/ir"
	"strata/core/tensor"
)

// Buffer planning. A program binds once and then runs many steps, so its
// buffers are planned once, at Bind, from the lifetimes of what they hold:
// every forward value, activation gradient and dropout mask lives from the
// step that writes it to the last step that reads it, and tenants whose
// lifetimes do not overlap share one buffer (a slot). An elementwise op
// whose input dies where it runs writes its output over that input (ReLU,
// bias, dropout, add), and its backward writes the input's gradient over
// the output's. The plan is static: an epoch still allocates nothing, and
// a dry binding (Sizer) counts exactly the slots Bind allocates.
//
// The timeline of one training step: the forward of op i at 2i, the loss
// at 2n, the backward of op i at 4n-2i. Lifetimes are closed intervals;
// two tenants conflict when their intervals meet, so an op's output never
// shares with what the op reads, but for the in-place pairs above.

// tenant is one planned tensor: a value, a gradient or a mask.
type tenant struct {
	kind       Kind
	dst        **tensor.Tensor
	shape      []int
	numel      int
	start, end int
	partner    int // the tenant whose slot this one may take in place, or -1
	slot       int
}

// slot is one allocated buffer and the tenant that holds it now.
type slot struct {
	t     *tensor.Tensor
	numel int
	holds int
}

func (p *Program) fwdT(i int32) int { return 2 * int(i) }
func (p *Program) lossT() int       { return 2 * len(p.g.Ops) }
func (p *Program) bwdT(i int32) int { return 4*len(p.g.Ops) - 2*int(i) }

// aliasDropout reports whether op i is a dropout that never has a buffer
// of its own: its value is its input's (drop probability 0, or a program
// bound for inference).
func (p *Program) aliasDropout(i int32) bool {
	op := &p.g.Ops[i]
	return op.Kind == ir.OpDropout && (op.Alpha == 0 || p.env.Inference)
}

// backwardReads says which argument values (by position) and whether its
// own value op's backward reads, as its op table entry declares (ReadsArgs,
// ReadsY). A narrowing reads nothing; an op outside the table everything.
func backwardReads(op *ir.Op) (args []int, self bool) {
	if op.Kind == opNarrow {
		return nil, false
	}
	if s := ir.Spec(op.Kind); s != nil {
		return s.ReadsArgs, s.ReadsY
	}
	all := make([]int, len(op.Args))
	for k := range all {
		all[k] = k
	}
	return all, true
}

// inPlaceForward lists the arguments whose buffer op's forward may write
// its output over (the op table's InPlace: elementwise kernels that read
// each element before they write it).
func inPlaceForward(op *ir.Op) []int {
	if s := ir.Spec(op.Kind); s != nil {
		return s.InPlace
	}
	return nil
}

// inPlaceBackward says whether op's backward may write the gradient of its
// first argument over its output's gradient (the op table's InPlaceGrad):
// it is computed elementwise from the output gradient, and what else the
// backward computes from the output gradient (a bias gradient, b's
// gradient of add and sub) reads the same numbers from it.
func inPlaceBackward(op *ir.Op) bool {
	s := ir.Spec(op.Kind)
	return s != nil && s.InPlaceGrad
}

// planBuffers plans and allocates the values, gradients and dropout masks
// of the ops with a shape in shapes (nil for ops without a buffer).
func (p *Program) planBuffers(shapes [][]int, model *ir.Graph) error {
	n := len(p.g.Ops)
	val, grad, mask := make([]int, n), make([]int, n), make([]int, n)
	var ts []tenant
	add := func(k Kind, dst **tensor.Tensor, shape []int, start, end int) int {
		ne := 1
		for _, d := range shape {
			ne *= d
		}
		ts = append(ts, tenant{kind: k, dst: dst, shape: shape, numel: ne, start: start, end: end, partner: -1})
		return len(ts) - 1
	}
	train := !p.env.Inference
	p.reluSigns(func(i int32) bool { return shapes[i] != nil && !p.aliasDropout(i) })
	p.fuseEpilogues(model)
	for i := range n {
		val[i], grad[i], mask[i] = -1, -1, -1
		if shapes[i] == nil || p.aliasDropout(int32(i)) {
			continue
		}
		t := int32(i)
		start := p.fwdT(t)
		if a := &p.aux[i]; a.inEpilogue {
			if a.epilogueOf < 0 {
				continue // computed by the aggregation's epilogue, never formed
			}
			start = p.fwdT(a.epilogueOf) // written by the aggregation
		}
		if l := p.aux[i].dropLead; l > 0 && train {
			start = p.fwdT(l) // written by its group's lead (groupDropReaders)
		}
		val[i] = add(KindValue, &p.vals[i], shapes[i], start, start)
		if op := &p.g.Ops[i]; op.Kind == ir.OpDropout && train && !p.regeneratesMasks() {
			end := p.fwdT(t)
			if p.needGrad[i] {
				end = p.bwdT(t)
			}
			mask[i] = add(KindMask, &p.aux[i].mask, shapes[i], p.fwdT(t), end)
		}
	}
	// reads extends the life of the buffer that holds op a's value to t;
	// an aliasing dropout's value is its input's.
	var reads func(a int32, t int)
	reads = func(a int32, t int) {
		if v := val[a]; v >= 0 {
			ts[v].end = max(ts[v].end, t)
		} else if p.aliasDropout(a) || p.aux[a].dropInto {
			reads(p.g.Ops[a].Args[0], t)
		}
	}
	for i := range n {
		op := &p.g.Ops[i]
		t := int32(i)
		for _, a := range op.Args {
			reads(a, p.fwdT(t))
		}
		if p.aux[i].fused { // the segment of a gather reads the gather's operand
			reads(p.g.Ops[op.Args[1]].Args[1], p.fwdT(t))
		}
		if !train || !p.needGrad[i] {
			continue
		}
		args, self := backwardReads(op)
		if x := p.xFor[i]; x >= 0 {
			args = nil
			reads(x, p.bwdT(t))
		}
		for _, k := range args {
			reads(op.Args[k], p.bwdT(t))
		}
		if self {
			reads(t, p.bwdT(t))
		}
	}
	// The outputs (read by the loss, and after an evaluation forward) and
	// the last hidden layer (read after an evaluation forward) live on
	// past the forward.
	pinned := append([]int32(nil), p.g.Outputs...)
	if h, ok := model.LastHidden(); ok && p.plan.planned(h) >= 0 {
		pinned = append(pinned, p.plan.planned(h))
	}
	if train && p.env.Split { // kept after the forward (SplitSaved)
		sides, on := p.sides(), p.onPath()
		for i := range n {
			if on[i] && p.isCut(i, sides) {
				pinned = append(pinned, int32(i))
			}
		}
	}
	for _, o := range pinned {
		reads(o, p.lossT())
	}
	if train {
		first := make([]int, n) // the earliest backward step that writes op a's gradient
		for i := range first {
			first[i] = -1
		}
		for i := n - 1; i >= 0; i-- {
			if !p.needGrad[i] {
				continue
			}
			args := p.g.Ops[i].Args
			if p.aux[i].fused { // the segment of a gather writes the gather operand's gradient
				args = append(slices.Clone(args), p.g.Ops[args[1]].Args[1])
			}
			for _, a := range args {
				if first[a] < 0 {
					first[a] = p.bwdT(int32(i))
				}
			}
		}
		for _, o := range p.g.Outputs {
			first[o] = p.lossT()
		}
		for i := range n {
			op := &p.g.Ops[i]
			if !p.needGrad[i] || op.Kind == ir.OpParam || op.Kind == ir.OpGraph || op.Kind == ir.OpInput || shapes[i] == nil {
				continue // an input's gradient (Env.InputGrad) has a buffer of its own, below
			}
			if first[i] < 0 { // nothing reads the value: the gradient stays unwritten
				first[i] = p.bwdT(int32(i))
			}
			end := p.bwdT(int32(i))
			if l := p.aux[i].dropLead; l > 0 {
				end = p.bwdT(l) // read by its group's lead (groupDropReaders)
			}
			grad[i] = add(KindGrad, &p.grads[i], shapes[i], first[i], end)
		}
	}
	for i := range n {
		op := &p.g.Ops[i]
		if v := val[i]; v >= 0 {
			for _, k := range inPlaceForward(op) {
				a := op.Args[k]
				if pa := val[a]; pa >= 0 && ts[pa].end == ts[v].start && ts[pa].numel == ts[v].numel {
					ts[v].partner = pa
					break
				}
			}
		}
		// A matmul's backward reads a last (for b's gradient) before it
		// writes a's gradient: that may take a's buffer.
		if op.Kind == ir.OpMatMul && train && p.needGrad[i] && op.Args[0] != op.Args[1] {
			a := op.Args[0]
			if ga, va := grad[a], val[a]; ga >= 0 && va >= 0 && ts[ga].start == p.bwdT(int32(i)) &&
				ts[va].end == p.bwdT(int32(i)) && ts[va].numel == ts[ga].numel {
				ts[ga].partner = va
			}
		}
		if g := grad[i]; g >= 0 && train && inPlaceBackward(op) {
			a := op.Args[0]
			if ga := grad[a]; ga >= 0 && ts[ga].start == p.bwdT(int32(i)) && ts[ga].numel == ts[g].numel {
				ts[ga].partner = g
			}
		}
	}
	return p.assignSlots(ts)
}

// assignSlots gives every tenant a slot, in the order they start: the
// slot of its in-place partner when the partner ends where it starts, else
// a free slot of its size, else a new one.
func (p *Program) assignSlots(ts []tenant) error {
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ts[order[a]].start < ts[order[b]].start })
	var slots []slot
	taken := make([]bool, len(ts)) // a partner's slot went to another tenant
	for _, j := range order {
		tj := &ts[j]
		s := -1
		if pa := tj.partner; pa >= 0 && !p.noShare && !taken[pa] && slots[ts[pa].slot].holds == pa {
			s, taken[pa] = ts[pa].slot, true
		}
		for k := 0; s < 0 && !p.noShare && k < len(slots); k++ {
			if h := slots[k].holds; slots[k].numel == tj.numel && (h < 0 || ts[h].end < tj.start) {
				s = k
			}
		}
		if s < 0 {
			t, err := p.alloc(tj.kind, tj.shape)
			if err != nil {
				return err
			}
			slots = append(slots, slot{t: t, numel: tj.numel, holds: -1})
			s = len(slots) - 1
			*tj.dst = t
		} else {
			v, err := tensor.View(slots[s].t, tj.shape)
			if err != nil {
				return err
			}
			*tj.dst = v
		}
		tj.slot = s
		slots[s].holds = j
	}
	return nil
}

// passDropout is dropout op i outside training: its value is its input.
// A dropout with a buffer of its own (a training program's) takes a copy
// unless it runs in place, since the plan may give its input's buffer to
// another value once the dropout has read it.
func (p *Program) passDropout(i int32) error {
	x, y := p.val(p.g.Ops[i].Args[0]), p.vals[i]
	if y == nil {
		p.cur[i] = x
		return nil
	}
	if y.Buffer() == x.Buffer() {
		return nil
	}
	return p.be.Copy(y, x)
}

// planned returns the index in the planned graph of op i of the bound
// graph (the plan inserts narrow ops), or -1.
func (pl *plan) planned(i int32) int32 {
	for j, o := range pl.orig {
		if o == i {
			return int32(j)
		}
	}
	return -1
}

// regeneratesMasks reports whether dropout masks are made again in the
// backward pass instead of kept: the backend applies dropout in one pass
// (dropoutApplier), so dx = dy·mask is the forward's kernel run on dy with
// the forward's seed, the same products bit for bit, and no mask is
// stored.
func (p *Program) regeneratesMasks() bool {
	_, ok := p.be.(dropoutApplier)
	return ok
}

// dropoutBackward writes dx = dy·mask for dropout op i: with the mask made
// again from the step's seed, or the one the forward kept.
func (p *Program) dropoutBackward(i int32, dy, dx *tensor.Tensor) error {
	if da, ok := p.be.(dropoutApplier); ok {
		return da.DropoutApply(p.opStream(p.mode.Seed, i), p.aux[i].dropRows, p.g.Ops[i].Alpha, dy, nil, dx)
	}
	return p.be.Elementwise(backend.Mul, dy, p.aux[i].mask, dx)
}

// reluSigns finds the activations whose backward can read the sign of x
// from a value that lives anyway: ELU's own output (below), and for a ReLU
// its dropout's output: a ReLU read only by a dropout (of a training
// program, with a buffer) has y = relu(x) > 0 exactly where x > 0, and
// the dropout's output z = y·mask, so where the mask keeps an element
// z > 0 ⟺ x > 0, and where it drops one the gradient reaching the ReLU
// is already zero. The ReLU's input then dies at its forward (the ReLU
// runs in place over it, and the dropout over the ReLU's output), where it
// otherwise lived until the backward. Only the sign of a zero gradient can
// differ (+0 for dz·0 = -0).
func (p *Program) reluSigns(hasValue func(int32) bool) {
	n := len(p.g.Ops)
	p.xFor = make([]int32, n)
	readers := make([]int, n)
	var only = make([]int32, n)
	for i := range n {
		p.xFor[i] = -1
		for _, a := range p.g.Ops[i].Args {
			readers[a]++
			only[a] = int32(i)
		}
	}
	if p.env.Inference || p.noShare {
		return
	}
	for i := range n {
		op := &p.g.Ops[i]
		if op.Kind == ir.OpELU && op.Alpha > 0 && p.needGrad[i] {
			// ELU's backward tests x > 0 and uses y: with α > 0, y > 0
			// exactly where x > 0 (y = α(eˣ-1) ≤ 0 elsewhere), so y serves
			// as x and the input dies at the forward, bit for bit.
			p.xFor[i] = int32(i)
			continue
		}
		if op.Kind != ir.OpReLU || !p.needGrad[i] || readers[i] != 1 {
			continue
		}
		if d := only[i]; p.g.Ops[d].Kind == ir.OpDropout && hasValue(d) {
			p.xFor[i] = d
		}
	}
}

// backwardX is the x that unary op i's backward reads (see reluSigns).
func (p *Program) backwardX(i int32) *tensor.Tensor {
	if x := p.xFor[i]; x >= 0 {
		return p.val(x)
	}
	return p.val(p.g.Ops[i].Args[0])
}
