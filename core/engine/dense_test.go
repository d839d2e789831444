package engine

import (
	"context"
	"math"
	"testing"

	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
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
		if err := hn.prog.Forward(context.Background(), Mode{}); err != nil {
			t.Fatal(err)
		}
		got := download(t, hn, hn.prog.Output())
		snap, err := hn.prog.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		xs := download(t, hn, hn.prog.env.Input)
		a := denseGCNAdj(graph.AddSelfLoops(graph.Symmetrize(testGraph())))
		hid := relu(addRow(matmul(a, matmul(xs, snap["W1"], nNodes, inDim, width), nNodes, nNodes, width), snap["b1"]))
		want := addRow(matmul(matmul(a, hid, nNodes, nNodes, width), snap["W2"], nNodes, width, classes), snap["b2"])
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("%s: output[%d] = %g, dense reference %g", dt, i, got[i], want[i])
			}
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
	out := make([]float64, r*c)
	for i := 0; i < r; i++ {
		for l := 0; l < k; l++ {
			for j := 0; j < c; j++ {
				out[i*c+j] += a[i*k+l] * b[l*c+j]
			}
		}
	}
	return out
}

func addRow(a, row []float64) []float64 {
	for i := range a {
		a[i] += row[i%len(row)]
	}
	return a
}

func relu(a []float64) []float64 {
	for i, v := range a {
		a[i] = math.Max(v, 0)
	}
	return a
}
