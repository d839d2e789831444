package engine

import (
	"context"
	"errors"
	"fmt"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// Sparse input features. Bag-of-words inputs are about 1% non-zero
// (CiteSeer's 3,327 × 3,703: 0.85%), and a first layer's x·W and the
// weight gradient xᵀ·dy, as dense GEMMs over them, were 87% of a
// CiteSeer GAE epoch. On a backend with backend.SparseInputs, a
// whole-graph binding whose input takes no gradient holds the input's
// non-zeros once, at Bind (an adjacency of x's rows × columns and its
// entries as edge weights), when they are at most the backend's
// SparseInputDensity; every matmul with the input (or a dropout of it
// that passes it, or that is multiplied in: fuseInputDropouts) as its
// left operand then runs x·W as SpMM(x, W) and its weight gradient as
// the transposed SpMM(xᵀ, dy), and never reads the dense input.
//
// A dropout of the input with a rate draws its mask at the non-zeros
// alone: the engine keys entry (r, c) by K[r]·cols + c (K the dropout's
// row keys), which is the stream index of element (r, c) of the dense
// mask (backend.DropoutIndex), so one DropoutMask over the entries ([E,1]
// with those keys) is the dense mask at the entries, and the masked
// entries are the edge weights of the forward and the backward product.
// The products are the dense ones up to the order of their sums (a zero
// element adds an exact 0 to a dense sum; TestSparseInputMatchesDense).
//
// A 16-bit input's entries are its float32 values (what Widen writes),
// so a program over 16-bit rows still computes what the float32 program
// computes over the widened rows, bit for bit; planHalfInput leaves the
// sparse matmuls alone.
//
// Not held sparse: bindings over blocks (mini-batches bind a program per
// batch, and the input rows change), an input that takes a gradient or
// may be missing at Backward (Env.InputGrad, Env.Resumable), an input in
// another tier than the program's, and a dry binding (Sizer): the
// footprint it estimates is the dense program's, which holds at least
// what the sparse one does but a scratch of the fused dropout.

// sparseIn is the program's input held by its non-zeros.
type sparseIn struct {
	m backend.SparseMatrix
	// keys[d] and masked[d] are, for a dropout d with a rate that a
	// sparse matmul reads, the stream keys of the entries ([E] Int64)
	// and the entries masked by the last training forward ([E,1]); mask
	// is a scratch [E,1].
	keys, masked map[int32]*tensor.Tensor
	mask         *tensor.Tensor
}

// ErrDenseInput is the error of a binding whose input is given by its
// entries (Env.InputEntries) and that would read it densely: an op other
// than a matmul (or a dropout into matmuls) reads the input, or the
// backend multiplies no sparse input. The caller binds the dense rows
// instead.
var ErrDenseInput = errors.New("the input is read densely")

// planSparseInput holds the input sparse and marks the matmuls that
// multiply by it (aux.sparseX) where the backend and the binding allow
// (see above). It runs after fuseInputDropouts: a sparse matmul leaves
// its dropout group, whose products it no longer shares.
func (p *Program) planSparseInput() error {
	if p.env.InputEntries != nil {
		return p.planGivenEntries()
	}
	si, ok := p.be.(backend.SparseInputs)
	x := p.env.Input
	if !p.env.SparseInput || !ok || p.env.Blocks != nil || p.env.InputGrad || p.env.Resumable || p.dry() || x.Tier() != p.env.Tier ||
		x.DType().IsHalf() && p.env.DType != tensor.Float32 { // (an error of planHalfInput's)
		return nil
	}
	rows, k := x.Rows(), x.Cols()
	cells := float64(rows) * float64(k)
	limit := map[int32]float64{} // a candidate's largest non-zero count
	most := 0.0
	readers := graphReaders(p.g)
	for i, op := range p.g.Ops {
		if op.Kind != ir.OpMatMul || op.Args[0] == op.Args[1] || !p.sparseOperand(readers, op.Args[0]) {
			continue
		}
		if d := si.SparseInputDensity(rows, k, int(op.Shape[1])); d > 0 {
			limit[int32(i)] = d * cells
			most = max(most, d*cells)
		}
	}
	if len(limit) == 0 {
		return nil
	}
	m, ok, err := si.SparseInput(x, int64(most), p.env.Tier)
	if err != nil || !ok {
		return err
	}
	p.holdSparse(m)
	p.owned.adjs = append(p.owned.adjs, m.Adj)
	p.owned.ts = append(p.owned.ts, m.Values)
	nnz := float64(m.Adj.NNZ())
	for i, lim := range limit {
		if nnz <= lim {
			p.aux[i].sparseX = true
		}
	}
	p.settleSparse(readers)
	return nil
}

// holdSparse keeps m as the program's sparse input, counted as a value.
func (p *Program) holdSparse(m backend.SparseMatrix) {
	p.sparse = &sparseIn{m: m, keys: map[int32]*tensor.Tensor{}, masked: map[int32]*tensor.Tensor{}}
	p.meter.add(KindValue, int64(m.Values.Numel()))
	p.meter.buffer(1)
}

// settleSparse dissolves the dropout groups and unforms the dropouts
// that the sparse matmuls took over.
func (p *Program) settleSparse(readers [][]int32) {
	p.leaveDropGroups()
	p.unformDropouts(readers)
}

// planGivenEntries runs every matmul with the input (Env.InputEntries)
// over its entries, whatever their density: the caller holds no dense
// rows. Any other reader of the input is ErrDenseInput.
func (p *Program) planGivenEntries() error {
	if _, ok := p.be.(backend.SparseInputs); !ok || p.dry() {
		return fmt.Errorf("engine: the %s backend multiplies no sparse input: %w", p.be.Name(), ErrDenseInput)
	}
	readers := graphReaders(p.g)
	for i, op := range p.g.Ops {
		if op.Kind == ir.OpMatMul && op.Args[0] != op.Args[1] && p.sparseOperand(readers, op.Args[0]) {
			p.aux[i].sparseX = true
		}
	}
	for i, op := range p.g.Ops {
		if op.Kind != ir.OpInput {
			continue
		}
		for _, r := range readers[i] {
			if !p.readsEntries(readers, r) {
				return fmt.Errorf("engine: op #%d %s reads the input: %w", r, p.opKind(r), ErrDenseInput)
			}
		}
	}
	m := *p.env.InputEntries
	p.holdSparse(m)
	p.settleSparse(readers)
	return nil
}

// readsEntries reports whether reader r of the input reads only its
// entries: a sparse matmul, or a dropout (passing or multiplied in) whose
// readers all are.
func (p *Program) readsEntries(readers [][]int32, r int32) bool {
	if r < 0 {
		return false // the input is an output
	}
	if p.aux[r].sparseX {
		return true
	}
	if op := &p.g.Ops[r]; op.Kind != ir.OpDropout || !p.sparseOperand(readers, r) {
		return false
	}
	for _, q := range readers[r] {
		if q < 0 || !p.aux[q].sparseX {
			return false
		}
	}
	return true
}

// opKind names op r (an output reader, -1, as "output").
func (p *Program) opKind(r int32) ir.Kind {
	if r < 0 {
		return "output"
	}
	return p.g.Ops[r].Kind
}

// sparseOperand reports whether value v is the input, or a dropout of it
// that passes it, or whose readers are all matmuls that take it as their
// left operand (so that, when they all run sparse, it is never formed).
func (p *Program) sparseOperand(readers [][]int32, v int32) bool {
	op := &p.g.Ops[v]
	switch op.Kind {
	case ir.OpInput:
		return true
	case ir.OpDropout:
		return p.aliasDropout(v) || inputDropoutIntoMatMuls(p.g, readers, int(v))
	}
	return false
}

// unformDropouts marks the dropouts of the input whose readers all run
// sparse as never formed (dropInto): each reader masks the input's
// entries itself.
func (p *Program) unformDropouts(readers [][]int32) {
	for d := range p.g.Ops {
		if p.aux[d].dropInto || !inputDropoutIntoMatMuls(p.g, readers, d) {
			continue
		}
		all := true
		for _, r := range readers[d] {
			all = all && p.aux[r].sparseX
		}
		p.aux[d].dropInto = all
	}
}

// leaveDropGroups dissolves every dropout group with a sparse member: its
// other members run their own DropoutGEMM, as ungrouped readers do.
func (p *Program) leaveDropGroups() {
	for i := range p.aux {
		a := &p.aux[i]
		if len(a.dropGroup) == 0 {
			continue
		}
		sparse := false
		for _, r := range a.dropGroup {
			sparse = sparse || p.aux[r].sparseX
		}
		if !sparse {
			continue
		}
		for _, r := range a.dropGroup {
			p.aux[r].dropLead = 0
		}
		a.dropGroup = nil
	}
}

// bindSparseMasks gives every dropout with a rate that a sparse matmul
// reads the stream keys of the input's entries and the buffer of its
// masked entries (after bindDropoutKeys, whose row keys it reads).
func (p *Program) bindSparseMasks() error {
	s := p.sparse
	if s == nil || p.env.Inference {
		return nil
	}
	for i := range p.g.Ops {
		if !p.aux[i].sparseX {
			continue
		}
		d := p.g.Ops[i].Args[0]
		if op := &p.g.Ops[d]; op.Kind != ir.OpDropout || op.Alpha == 0 || s.keys[d] != nil {
			continue
		}
		if err := p.bindSparseMask(d); err != nil {
			return fmt.Errorf("engine: op #%d dropout over a sparse input: %w", d, err)
		}
	}
	return nil
}

// bindSparseMask computes and uploads dropout d's keys of the entries and
// allocates its masked entries (and the shared mask scratch).
func (p *Program) bindSparseMask(d int32) error {
	s, h := p.sparse, p.sparse.m.Host
	var rowKeys []int64
	if t := p.aux[d].dropRows; t != nil {
		rowKeys = make([]int64, t.Numel())
		if err := p.be.Download(t, rowKeys); err != nil {
			return err
		}
	}
	keys := make([]int64, h.NNZ())
	for r := range h.NumRows {
		k := uint64(r)
		if rowKeys != nil {
			k = uint64(rowKeys[r])
		}
		for e := h.Indptr[r]; e < h.Indptr[r+1]; e++ {
			keys[e] = int64(backend.DropoutIndex(k, h.NumCols, int(h.Col(e))))
		}
	}
	e := len(keys)
	kt, err := p.allocT(KindIndex, tensor.Int64, []int{e})
	if err != nil {
		return err
	}
	if err := p.be.Upload(kt, keys); err != nil {
		return err
	}
	s.keys[d] = kt
	if s.masked[d], err = p.alloc(KindMask, []int{e, 1}); err != nil {
		return err
	}
	if s.mask == nil {
		s.mask, err = p.alloc(KindScratch, []int{e, 1})
	}
	return err
}

// sparseWeights returns the edge weights of sparse matmul op i's products:
// the input's entries, or its dropout's masked entries in training
// (drawn afresh when draw is set, the forward product).
func (p *Program) sparseWeights(i int32, train, draw bool) (*tensor.Tensor, error) {
	s := p.sparse
	d := p.g.Ops[i].Args[0]
	w := s.masked[d]
	if w == nil || !train {
		return s.m.Values, nil
	}
	if draw && w.Numel() > 0 { // (an input without entries has nothing to mask)
		op := &p.g.Ops[d]
		if err := p.be.DropoutMask(p.opStream(p.mode.Seed, d), s.keys[d], op.Alpha, s.mask); err != nil {
			return nil, err
		}
		if err := p.be.Elementwise(backend.Mul, s.m.Values, s.mask, w); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// sparseForward is the forward product of sparse matmul op i: x·W.
func (p *Program) sparseForward(ctx context.Context, i int32, m Mode) error {
	w, err := p.sparseWeights(i, m.Train, true)
	if err != nil {
		return err
	}
	return p.be.SpMM(ctx, p.sparse.m.Adj, false, w, p.val(p.g.Ops[i].Args[1]), 0, p.vals[i])
}

// sparseBackward is the weight gradient of sparse matmul op i: xᵀ·dy
// (the input takes none).
func (p *Program) sparseBackward(ctx context.Context, i int32) error {
	w, err := p.sparseWeights(i, true, false)
	if err != nil {
		return err
	}
	return p.accumulateBeta(p.g.Ops[i].Args[1], func(out *tensor.Tensor, beta float64) error {
		return p.be.SpMM(ctx, p.sparse.m.Adj, true, w, p.grads[i], beta, out)
	})
}
