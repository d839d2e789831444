package engine

import (
	"context"
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
)

// EdgeIndex is what the op table's gather, segment and degree ops need of
// a bound graph beyond its adjacency: the incidence matrix (row i lists
// the positions of i's in-edges, so a segment reduction of edge values is
// an SpMM, SpMMMax or their transposes over it, on every backend), the
// source and destination row of every edge, and the degrees.
type EdgeIndex struct {
	Inc      backend.Adj    // [dst × E], entry (i, k) for every in-edge k of i, values 1
	Src, Dst *tensor.Tensor // [E] Int32
	InvDeg   *tensor.Tensor // [E] 1/deg(dst(k)), the program's float type (exact in float64, unlike the built-in mean's float32 graph.MeanNorm)
	Deg      *tensor.Tensor // [dst, 1] in-degrees, the program's float type
	// UnitValues: the CSR has no edge values, so an SpMM of its adjacency
	// sums the source rows unweighted (a segment sum of gather_src fuses).
	UnitValues bool
}

// UsesEdgeIndex reports whether the graph g reads the edge index of any
// adjacency (one of its ops is a gather, segment or degree op).
func UsesEdgeIndex(g *ir.Graph) bool {
	for _, op := range g.Ops {
		if s := ir.Spec(op.Kind); s != nil && s.Table() && ir.GraphOp(op.Kind) {
			return true
		}
	}
	return false
}

// BindEdgeIndex uploads the edge index of a CSR (rows = destinations).
func BindEdgeIndex(be backend.Backend, a *graph.CSR, dt tensor.DType, tier tensor.Tier) (*EdgeIndex, error) {
	e := a.NNZ()
	if e > math.MaxInt32 || a.NumCols > math.MaxInt32 {
		return nil, fmt.Errorf("engine: edge index: %d edges over %d sources do not fit int32 indices", e, a.NumCols)
	}
	inc := &graph.CSR{NumRows: a.NumRows, NumCols: int(e), Indptr: a.Indptr, Idx32: make([]int32, e)}
	src, dst := make([]int32, e), make([]int32, e)
	inv := make([]float64, e)
	deg := make([]float64, a.NumRows)
	for r := 0; r < a.NumRows; r++ {
		d := a.Indptr[r+1] - a.Indptr[r]
		deg[r] = float64(d)
		for k := a.Indptr[r]; k < a.Indptr[r+1]; k++ {
			inc.Idx32[k] = int32(k)
			src[k], dst[k] = int32(a.Col(k)), int32(r)
			inv[k] = 1 / float64(d)
		}
	}
	x := &EdgeIndex{UnitValues: a.Values == nil}
	var err error
	if x.Inc, err = be.UploadGraph(inc, tier); err != nil {
		return nil, fmt.Errorf("engine: edge index: %w", err)
	}
	fail := func(err error) (*EdgeIndex, error) {
		x.Release(be)
		return nil, fmt.Errorf("engine: edge index: %w", err)
	}
	for _, t := range []struct {
		dst **tensor.Tensor
		v   []int32
	}{{&x.Src, src}, {&x.Dst, dst}} {
		if *t.dst, err = be.Alloc(tensor.Int32, []int{int(e)}, tier); err != nil {
			return fail(err)
		}
		if err := be.Upload(*t.dst, t.v); err != nil {
			return fail(err)
		}
	}
	if x.InvDeg, err = be.Alloc(dt, []int{int(e)}, tier); err != nil {
		return fail(err)
	}
	if err := uploadFloats(be, x.InvDeg, inv); err != nil {
		return fail(err)
	}
	if x.Deg, err = be.Alloc(dt, []int{a.NumRows, 1}, tier); err != nil {
		return fail(err)
	}
	if err := uploadFloats(be, x.Deg, deg); err != nil {
		return fail(err)
	}
	return x, nil
}

// Release frees what BindEdgeIndex uploaded (x may be nil or partial).
func (x *EdgeIndex) Release(be backend.Backend) {
	if x == nil {
		return
	}
	if x.Inc != nil {
		be.ReleaseGraph(x.Inc)
	}
	for _, t := range []*tensor.Tensor{x.Src, x.Dst, x.InvDeg, x.Deg} {
		if t != nil {
			be.Release(t)
		}
	}
}

// meanWeights returns the per-edge weights of a segment mean (1/deg of
// the destination), nil for a sum.
func (x *EdgeIndex) meanWeights(seg ir.Segment) *tensor.Tensor {
	if seg == ir.SegMean {
		return x.InvDeg
	}
	return nil
}

// rows returns the source (src) or destination row of every edge.
func (x *EdgeIndex) rows(src bool) *tensor.Tensor {
	if src {
		return x.Src
	}
	return x.Dst
}

// edges returns the edge index of graph op h, or an error naming the op.
func (p *Program) edges(h int32) (*EdgeIndex, error) {
	gr := p.adj(h)
	if gr.Edges == nil {
		return nil, fmt.Errorf("graph %q has no edge index bound (engine.BindEdgeIndex)", p.g.Ops[h].Name)
	}
	return gr.Edges, nil
}

// fuseGathers marks the segment sums and means of a gather_src on the
// same graph that nothing else reads: they run as the fused aggregation,
// one SpMM of the adjacency over the node rows (with the mean's 1/deg
// weights), forward and backward, and the [E,C] gather is never
// materialised. The sums are the same, in the same order. Only graphs
// whose edge index says the adjacency's values are ones qualify.
func (p *Program) fuseGathers() {
	readers := make([]int, len(p.g.Ops))
	for _, op := range p.g.Ops {
		for _, a := range op.Args {
			readers[a]++
		}
	}
	for _, o := range p.g.Outputs {
		readers[o]++
	}
	for i, op := range p.g.Ops {
		s := ir.Spec(op.Kind)
		if s == nil || s.Class != ir.ClassSegment || (s.Seg != ir.SegSum && s.Seg != ir.SegMean) {
			continue
		}
		a := op.Args[1]
		src := &p.g.Ops[a]
		if src.Kind != ir.OpGatherSrc || src.Args[0] != op.Args[0] || readers[a] != 1 {
			continue
		}
		if x := p.adj(op.Args[0]).Edges; x == nil || !x.UnitValues {
			continue
		}
		p.aux[i].fused, p.aux[a].fusedInto = true, true
	}
}

// bindTableAux allocates the per-op state of a table op.
func (p *Program) bindTableAux(i int, op *ir.Op, s *ir.OpSpec, shape []int) (err error) {
	a := &p.aux[i]
	switch {
	case s.Class == ir.ClassSegment && s.Seg != ir.SegSum && s.Seg != ir.SegMean && s.Seg != ir.SegSoftmax && s.Seg != ir.SegProd:
		a.argmax, err = p.allocT(KindIndex, tensor.Int32, shape)
	case s.Class == ir.ClassDegree:
		if a.ones, err = p.alloc(KindValue, []int{1, shape[1]}); err != nil || p.dry() {
			return err
		}
		err = p.be.Fill(a.ones, 1)
	}
	return err
}

// forwardTable runs a table op.
func (p *Program) forwardTable(ctx context.Context, i int32, s *ir.OpSpec) error {
	op := &p.g.Ops[i]
	be, y := p.be, p.vals[i]
	arg := func(k int) *tensor.Tensor { return p.val(op.Args[k]) }
	switch s.Class {
	case ir.ClassUnary:
		return be.Apply(backend.Unary(s.Code), op.Alpha, arg(0), y)
	case ir.ClassBinary:
		return be.Elementwise(backend.Binary(s.Code), arg(0), arg(1), y)
	}
	x, err := p.edges(op.Args[0])
	if err != nil {
		return err
	}
	switch s.Class {
	case ir.ClassGather:
		if p.aux[i].fusedInto {
			return nil
		}
		return be.Gather(arg(1), x.rows(s.Src), y)
	case ir.ClassDegree:
		return be.GEMM(false, false, 1, x.Deg, p.aux[i].ones, 0, y)
	}
	e := arg(1)
	if p.aux[i].fused { // segment of gather_src: the node rows through the adjacency
		return be.SpMM(ctx, p.adj(op.Args[0]).Adj, false, x.meanWeights(s.Seg), p.val(p.g.Ops[op.Args[1]].Args[1]), 0, y)
	}
	switch s.Seg {
	case ir.SegSum:
		return be.SpMM(ctx, x.Inc, false, nil, e, 0, y)
	case ir.SegMean:
		return be.SpMM(ctx, x.Inc, false, x.InvDeg, e, 0, y)
	case ir.SegMax:
		return be.SpMMMax(ctx, x.Inc, e, y, p.aux[i].argmax)
	case ir.SegMin:
		neg, err := p.scratchFor(KindScratch, e.DType(), e.Shape(), 9)
		if err != nil {
			return err
		}
		if err := be.Apply(backend.Neg, 0, e, neg); err != nil {
			return err
		}
		if err := be.SpMMMax(ctx, x.Inc, neg, y, p.aux[i].argmax); err != nil {
			return err
		}
		return be.Apply(backend.Neg, 0, y, y)
	case ir.SegSoftmax:
		return be.EdgeSoftmax(ctx, p.adj(op.Args[0]).Adj, e, y)
	case ir.SegProd:
		mul, err := p.multiplier(op.Kind)
		if err != nil {
			return err
		}
		return mul.SegmentProd(ctx, x.Inc, e, y)
	case ir.SegQuantile, ir.SegNth:
		sel, ok := be.(backend.SegmentSelector)
		if !ok {
			return fmt.Errorf("the %s backend has no segment selection kernel (backend.SegmentSelector), which %s needs", be.Name(), op.Kind)
		}
		q, nth := op.Alpha, -1
		if s.Seg == ir.SegNth {
			q, nth = 0, int(op.Alpha)
		}
		return sel.SegmentSelect(ctx, x.Inc, q, nth, e, y, p.aux[i].argmax)
	}
	return fmt.Errorf("op table entry %s has no forward", s.Name)
}

// backwardTable differentiates a table op.
func (p *Program) backwardTable(ctx context.Context, i int32, s *ir.OpSpec) error {
	op := &p.g.Ops[i]
	be, dy, y := p.be, p.grads[i], p.val(i)
	args := op.Args
	switch s.Class {
	case ir.ClassUnary:
		return p.accumulate(args[0], func(out *tensor.Tensor) error {
			return be.ApplyBackward(backend.Unary(s.Code), op.Alpha, p.backwardX(i), y, dy, out)
		})
	case ir.ClassBinary:
		return p.backwardBinary(i, s, dy)
	case ir.ClassDegree:
		return nil // constant in x
	}
	if p.aux[i].fused { // into the gather's input, through the adjacency's transpose
		g, xa := p.adj(args[0]), p.g.Ops[args[1]].Args[1]
		x, err := p.edges(args[0])
		if err != nil {
			return err
		}
		return p.accumulateBeta(xa, func(out *tensor.Tensor, beta float64) error {
			return be.SpMM(ctx, g.Adj, true, x.meanWeights(s.Seg), dy, beta, out)
		})
	}
	if !p.needGrad[args[1]] {
		return nil
	}
	x, err := p.edges(args[0])
	if err != nil {
		return err
	}
	switch s.Class {
	case ir.ClassGather:
		dx, err := p.zeroed(args[1])
		if err != nil {
			return err
		}
		return be.ScatterAdd(dy, x.rows(s.Src), dx)
	}
	switch s.Seg {
	case ir.SegSum, ir.SegMean:
		var w *tensor.Tensor
		if s.Seg == ir.SegMean {
			w = x.InvDeg
		}
		return p.accumulateBeta(args[1], func(out *tensor.Tensor, beta float64) error {
			return be.SpMM(ctx, x.Inc, true, w, dy, beta, out)
		})
	case ir.SegSoftmax:
		g := p.adj(args[0]).Adj
		return p.accumulate(args[1], func(out *tensor.Tensor) error { return be.EdgeSoftmaxBackward(ctx, g, y, dy, out) })
	case ir.SegProd:
		mul, err := p.multiplier(op.Kind)
		if err != nil {
			return err
		}
		return p.accumulate(args[1], func(out *tensor.Tensor) error {
			return mul.SegmentProdBackward(ctx, x.Inc, p.val(args[1]), dy, out)
		})
	default: // max, min, quantile, nth: the selected edge takes dy
		de, err := p.zeroed(args[1])
		if err != nil {
			return err
		}
		return be.ScatterArgmax(p.aux[i].argmax, dy, de)
	}
}

// backwardBinary differentiates a binary op of the table, b broadcasting:
// its gradient is reduced over the broadcast rows (or to a scalar).
func (p *Program) backwardBinary(i int32, s *ir.OpSpec, dy *tensor.Tensor) error {
	be, op := p.be, &p.g.Ops[i]
	a, b, y := p.val(op.Args[0]), p.val(op.Args[1]), p.val(i)
	needB := p.needGrad[op.Args[1]]
	// da
	if err := p.accumulate(op.Args[0], func(out *tensor.Tensor) error {
		switch s.Grad {
		case ir.GradMul:
			return be.Elementwise(backend.Mul, dy, b, out)
		case ir.GradDiv:
			return be.Elementwise(backend.Div, dy, b, out)
		case ir.GradSelect:
			if err := be.Elementwise(backend.Equal, y, a, out); err != nil {
				return err
			}
			return be.Elementwise(backend.Mul, out, dy, out)
		}
		return be.Axpby(1, dy, 0, out)
	}); err != nil || !needB {
		return err
	}
	// db before the reduction over broadcast dimensions: src·signB.
	if s.Grad == ir.GradAdd || s.Grad == ir.GradSub {
		signB := 1.0
		if s.Grad == ir.GradSub {
			signB = -1
		}
		return p.reduceInto(op.Args[1], a, b, dy, signB)
	}
	tmp, err := p.scratchFor(KindScratch, dy.DType(), dy.Shape(), 5)
	if err != nil {
		return err
	}
	signB := 1.0
	switch s.Grad {
	case ir.GradMul: // dy·a
		err = be.Elementwise(backend.Mul, dy, a, tmp)
	case ir.GradDiv: // -dy·y/b
		if err = be.Elementwise(backend.Mul, dy, y, tmp); err == nil {
			err = be.Elementwise(backend.Div, tmp, b, tmp)
		}
		signB = -1
	case ir.GradSelect: // dy·[y != a] = dy - dy·[y == a]
		if err = be.Elementwise(backend.Equal, y, a, tmp); err == nil {
			err = be.Elementwise(backend.Mul, tmp, dy, tmp)
		}
		if err == nil {
			err = be.Axpby(1, dy, -1, tmp)
		}
	}
	if err != nil {
		return err
	}
	return p.reduceInto(op.Args[1], a, b, tmp, signB)
}

// multiplier returns the backend's segment product kernel, or an error
// naming the op that needs it.
func (p *Program) multiplier(k ir.Kind) (backend.SegmentMultiplier, error) {
	mul, ok := p.be.(backend.SegmentMultiplier)
	if !ok {
		return nil, fmt.Errorf("the %s backend has no segment product kernel (backend.SegmentMultiplier), which %s needs", p.be.Name(), k)
	}
	return mul, nil
}
