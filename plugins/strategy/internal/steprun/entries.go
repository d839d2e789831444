package steprun

import (
	"errors"
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/core/train"
)

// Sparse input rows of mini-batches. Bag-of-words features are about 1%
// non-zero (Coauthor-Physics' 34,493 × 8,415: 0.4%), and a mini-batch's
// input rows gathered densely are mostly zeros that its first layer
// multiplies by GEMM, forward and for the weight gradient. With the
// features held by their non-zeros once (Env.Entries), every batch
// gathers the entries of its rows alone and binds them as the program's
// input (engine.Env.InputEntries): the first layer's products run as
// SpMM over them, and the dense rows are never formed. The products are
// the dense ones up to the order of their sums (a zero element adds an
// exact 0 to a dense sum).

// SparseRowsOf returns the n×dim feature rows held by their non-zeros
// (their float32 values, 16-bit rows widened, with the values in the
// CSR's Values; "non-zero" by bits, as backend.SparseInputs: -0 and NaN
// are entries), or nil when more than maxDensity of the elements are
// non-zero.
func SparseRowsOf(x FeatRows, half tensor.DType, n, dim int, maxDensity float64) *graph.CSR {
	limit := int64(maxDensity * float64(n) * float64(dim))
	if limit <= 0 || dim > math.MaxInt32 {
		return nil
	}
	bits, val := rowReader(x, half)
	g := &graph.CSR{NumRows: n, NumCols: dim, Indptr: make([]int64, n+1)}
	for r := range n {
		for c := range dim {
			if i := r*dim + c; bits(i) {
				if int64(len(g.Idx32)) == limit {
					return nil
				}
				g.Idx32, g.Values = append(g.Idx32, int32(c)), append(g.Values, val(i))
			}
		}
		g.Indptr[r+1] = int64(len(g.Idx32))
	}
	return g
}

// rowReader returns whether element i of x is an entry and its float32
// value.
func rowReader(x FeatRows, half tensor.DType) (bits func(int) bool, val func(int) float32) {
	if half == 0 {
		return func(i int) bool { return math.Float32bits(x.F32[i]) != 0 }, func(i int) float32 { return x.F32[i] }
	}
	widen := tensor.F16ToF32
	if half == tensor.BFloat16 {
		widen = tensor.BF16ToF32
	}
	return func(i int) bool { return x.u16[i] != 0 }, func(i int) float32 { return widen(x.u16[i]) }
}

// GatherEntries returns the rows ids of the sparse matrix s, in order.
func GatherEntries(s *graph.CSR, ids []int32) *graph.CSR {
	nnz := int64(0)
	for _, v := range ids {
		nnz += s.Indptr[v+1] - s.Indptr[v]
	}
	g := &graph.CSR{NumRows: len(ids), NumCols: s.NumCols, Indptr: make([]int64, len(ids)+1),
		Idx32: make([]int32, 0, nnz), Values: make([]float32, 0, nnz)}
	for i, v := range ids {
		lo, hi := s.Indptr[v], s.Indptr[v+1]
		g.Idx32, g.Values = append(g.Idx32, s.Idx32[lo:hi]...), append(g.Values, s.Values[lo:hi]...)
		g.Indptr[i+1] = int64(len(g.Idx32))
	}
	return g
}

// UseSparseInput holds e's features by their non-zeros (e.Entries) when
// the backend multiplies sparse inputs and they are sparse enough for
// the model's first products (backend.SparseInputs); it reports whether
// it did. Not with a disk tier, whose rows are never all resident.
func (e *Env) UseSparseInput() bool {
	si, ok := e.Be.(backend.SparseInputs)
	n := inputProductWidth(e.Model)
	if !ok || e.Disk != nil || n == 0 || e.DS.NumNodes == 0 {
		return false
	}
	d := si.SparseInputDensity(e.DS.NumNodes, e.Dim, n)
	e.Entries = SparseRowsOf(e.AllRows(), e.Half, e.DS.NumNodes, e.Dim, d)
	return e.Entries != nil
}

// inputProductWidth is the widest product of the model's input (or a
// dropout of it) by a weight, 0 when none reads it.
func inputProductWidth(g *ir.Graph) int {
	in := map[int32]bool{}
	n := 0
	for i, op := range g.Ops {
		switch {
		case op.Kind == ir.OpInput:
			in[int32(i)] = true
		case op.Kind == ir.OpDropout && in[op.Args[0]]:
			in[int32(i)] = true
		case op.Kind == ir.OpMatMul && in[op.Args[0]] && len(op.Shape) == 2:
			n = max(n, int(op.Shape[1]))
		}
	}
	return n
}

// bindEntries binds g to env with the input given by the entries x (the
// batch's rows of Env.Entries), uploaded into bb. A binding that would
// read the input densely (engine.ErrDenseInput) binds the dense rows
// instead.
func (r *Runner) bindEntries(bb *Bound, g *ir.Graph, env engine.Env, x *graph.CSR) (*engine.Program, error) {
	e := r.Env
	be := backend.ForPurpose(e.Be, backend.PurposeFeatures)
	adj, err := be.UploadGraph(x, e.Tier)
	if err != nil {
		return nil, err
	}
	bb.Graphs = append(bb.Graphs, &engine.Graph{Adj: adj, Host: x})
	v, err := train.UploadFloat32s(be, x.Values, []int{len(x.Values), 1}, e.DT, e.Tier)
	if err != nil {
		return nil, err
	}
	bb.Tensors = append(bb.Tensors, v)
	env.InputEntries = &backend.SparseMatrix{Adj: adj, Host: x, Values: v}
	p, err := engine.Bind(g, env, r.PS)
	if !errors.Is(err, engine.ErrDenseInput) {
		return p, err
	}
	env.InputEntries = nil
	rows := FeatRows{F32: denseOf(x)}
	if env.Input, err = uploadRows(be, rows, 0, []int{x.NumRows, x.NumCols}, e.DT, e.Tier); err != nil {
		return nil, fmt.Errorf("the dense input rows: %w", err)
	}
	bb.Tensors = append(bb.Tensors, env.Input)
	return engine.Bind(g, env, r.PS)
}

// denseOf returns the rows of the sparse matrix x densely (row-major).
func denseOf(x *graph.CSR) []float32 {
	out := make([]float32, x.NumRows*x.NumCols)
	for r := range x.NumRows {
		for k := x.Indptr[r]; k < x.Indptr[r+1]; k++ {
			out[r*x.NumCols+int(x.Idx32[k])] = x.Values[k]
		}
	}
	return out
}
