package engine

import (
	"slices"
	"testing"

	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// layerNormV is the dense reference of LayerNorm with bounds: every row
// of x (r×c) normalised by its mean and biased variance, times gamma plus
// beta, as torch.nn.LayerNorm.
func layerNormV(ar floattol.Arith, x, gamma, beta []floattol.Val, r, c int, eps float64) []floattol.Val {
	out := make([]floattol.Val, r*c)
	inv := ar.Param(1 / float64(c))
	for i := range r {
		row := x[i*c:][:c]
		mu := ar.Mul(ar.Sum(row...), inv)
		xc := make([]floattol.Val, c)
		for j := range c {
			xc[j] = ar.Sub(row[j], mu)
		}
		vr := ar.Mul(ar.Dot(xc, xc), inv)
		is := ar.Pow(ar.Add(vr, ar.Param(eps)), -0.5)
		for j := range c {
			out[i*c+j] = ar.Add(ar.Mul(ar.Mul(xc[j], is), gamma[j]), beta[j])
		}
	}
	return out
}

// TestLayerNormMatchesDense compares the layernorm op (x·W, so rows have
// distinct means and spreads, then LayerNorm) with the dense reference in
// float64 and float32, in training and evaluation (the same op in both).
// Its gradients are checked by finite differences in TestGradients (the
// op table's check).
func TestLayerNormMatchesDense(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input("x", inDim)
	w := b.Param("W", []int64{inDim, width}, "glorot")
	g := b.Param("gamma", []int64{width}, "normal")
	be := b.Param("beta", []int64{width}, "normal")
	b.Output(b.LayerNorm(b.MatMul(x, w), g, be, 1e-5))
	gr, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		for _, train := range []bool{true, false} {
			hn := newHarness(t, gr, dt)
			got, snap := hn.forward(t, Mode{Train: train, Seed: 1})
			ar := checked(dt)
			xs := floattol.Ins(download(t, hn, hn.prog.env.Input))
			h := matmulV(ar, xs, floattol.Ins(snap["W"]), nNodes, inDim, width)
			want := layerNormV(ar, h, floattol.Ins(snap["gamma"]), floattol.Ins(snap["beta"]), nNodes, width, 1e-5)
			if i, r := floattol.Exceeds(got, floattol.Values(want), floattol.Errors(want)); i >= 0 {
				t.Fatalf("%s train=%v: output[%d] = %g, dense reference %g: off by %.3g times the bound %.3g", dt, train, i, got[i], want[i].V, r, want[i].E)
			}
		}
	}
}

// TestBufferIsNotLearnable: a buffer (ir.Builder.Buffer) is read like a
// param, gets no gradient, is not in the learnable list, is held in the
// state snapshot and restored from it, and a backward leaves it unchanged.
func TestBufferIsNotLearnable(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input("x", inDim)
	w := b.Param("W", []int64{inDim, classes}, "glorot")
	s := b.Buffer("shift", []int64{classes}, "normal")
	b.Output(b.Bias(b.MatMul(x, w), s))
	gr, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if n := gr.NumParams(); n != inDim*classes {
		t.Fatalf("NumParams = %d, want %d (the buffer is not learnable)", n, inDim*classes)
	}
	hn := newHarness(t, gr, tensor.Float64)
	ps := hn.prog.params
	for _, p := range ps.List() {
		if p.Name == "shift" {
			t.Fatal("the buffer is in the learnable list")
		}
	}
	buf := ps.Buffer("shift")
	if buf == nil {
		t.Fatal("no buffer \"shift\" in the parameter set")
	}
	before := download(t, hn, buf)
	hn.loss(t, true)
	if after := download(t, hn, buf); !slices.Equal(before, after) {
		t.Fatalf("buffer changed by forward and backward: %v -> %v", before, after)
	}
	// The output is x·W + shift: the buffer's values reach it.
	out := download(t, hn, hn.prog.Output())
	xw := matmul(download(t, hn, hn.prog.env.Input), download(t, hn, ps.List()[0].Value), nNodes, inDim, classes)
	for i := range out {
		if d := out[i] - xw[i] - before[i%classes]; d > 1e-12 || d < -1e-12 {
			t.Fatalf("output[%d] = %g, want x·W + shift = %g", i, out[i], xw[i]+before[i%classes])
		}
	}
	st, err := ps.SnapshotState()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st["shift"], before) {
		t.Fatalf("state snapshot holds %v for the buffer, want %v", st["shift"], before)
	}
	st["shift"] = []float64{1, 2, 3}
	if err := ps.RestoreState(st); err != nil {
		t.Fatal(err)
	}
	if got := download(t, hn, buf); !slices.Equal(got, []float64{1, 2, 3}) {
		t.Fatalf("restored buffer = %v, want [1 2 3]", got)
	}
}
