package engine

import (
	"context"
	"math"
	"testing"

	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// TestGCNMatchesDense compares a 2-layer GCN forward against a dense
// reference: out = Â·relu(Â·X·W1 + b1)·W2 + b2.
func TestGCNMatchesDense(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input("x", inDim)
	gs := b.Graph("adj_self")
	w1 := b.Param("W1", []int64{inDim, width}, "glorot")
	b1 := b.Param("b1", []int64{width}, "normal")
	w2 := b.Param("W2", []int64{width, classes}, "glorot")
	b2 := b.Param("b2", []int64{classes}, "normal")
	h := b.Unary(ir.OpReLU, b.Bias(b.Aggregate(gs, b.MatMul(x, w1), "gcn"), b1), 0)
	b.Output(b.Bias(b.MatMul(b.Aggregate(gs, h, "gcn"), w2), b2))
	gr, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		hn := newHarness(t, gr, dt)
		got, snap := hn.forward(t, Mode{})
		// The dense reference in the program's order, with the bound of
		// each value (floattol.Val): its exact value and how far any
		// correct float32 or float64 computation of it can be.
		ar := checked(dt)
		in := func(v []float64) []floattol.Val { return floattol.Ins(v) }
		xs := in(download(t, hn, hn.prog.env.Input))
		a := in(denseGCNAdj(graph.AddSelfLoops(graph.Symmetrize(testGraph()))))
		hid := reluV(addRowV(ar, matmulV(ar, a, matmulV(ar, xs, in(snap["W1"]), nNodes, inDim, width), nNodes, nNodes, width), in(snap["b1"])))
		want := addRowV(ar, matmulV(ar, matmulV(ar, a, hid, nNodes, nNodes, width), in(snap["W2"]), nNodes, width, classes), in(snap["b2"]))
		if i, r := floattol.Exceeds(got, floattol.Values(want), floattol.Errors(want)); i >= 0 {
			t.Fatalf("%s: output[%d] = %g, dense reference %g: off by %.3g times the bound %.3g", dt, i, got[i], want[i].V, r, want[i].E)
		}
	}
}

func download(t *testing.T, h *harness, tt *tensor.Tensor) []float64 {
	t.Helper()
	v, err := h.prog.downloadFloats(tt)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// denseGCNAdj returns D^-1/2 A D^-1/2 as a dense row-major matrix.
func denseGCNAdj(g *graph.CSR) []float64 {
	n := g.NumRows
	deg := make([]float64, n)
	for i := 0; i < n; i++ {
		deg[i] = float64(g.Indptr[i+1] - g.Indptr[i])
	}
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for e := g.Indptr[i]; e < g.Indptr[i+1]; e++ {
			j := g.Col(e)
			a[i*n+int(j)] += float64(float32(1 / math.Sqrt(deg[i]*deg[j]))) // weights are stored as float32
		}
	}
	return a
}

func matmul(a, b []float64, r, k, c int) []float64 {
	return floattol.Values(matmulV(floattol.Arith{}, floattol.Ins(a), floattol.Ins(b), r, k, c))
}

// checked is the arithmetic of a dtype's bounds against a float64
// reference (floattol.Checked32, Checked64).
func checked(dt tensor.DType) floattol.Arith {
	if dt == tensor.Float32 {
		return floattol.Checked32
	}
	return floattol.Checked64
}

// matmulV is a·b (r×k by k×c) with bounds: each element a dot product of
// length k in any order.
func matmulV(ar floattol.Arith, a, b []floattol.Val, r, k, c int) []floattol.Val {
	out := make([]floattol.Val, r*c)
	col := make([]floattol.Val, k)
	for i := range r {
		for j := range c {
			for l := range k {
				col[l] = b[l*c+j]
			}
			out[i*c+j] = ar.Dot(a[i*k:][:k], col)
		}
	}
	return out
}

// addRowV adds row to every row of a.
func addRowV(ar floattol.Arith, a, row []floattol.Val) []floattol.Val {
	out := make([]floattol.Val, len(a))
	for i := range a {
		out[i] = ar.Add(a[i], row[i%len(row)])
	}
	return out
}

// reluV is max(a, 0), elementwise.
func reluV(a []floattol.Val) []floattol.Val {
	out := make([]floattol.Val, len(a))
	for i, v := range a {
		out[i] = floattol.Max(v, floattol.In(0))
	}
	return out
}

// forward runs the program in mode m and returns its output and
// parameters.
func (h *harness) forward(t *testing.T, m Mode) (out []float64, params map[string][]float64) {
	t.Helper()
	if err := h.prog.Forward(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	out = download(t, h, h.prog.Output())
	params, err := h.prog.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return out, params
}
