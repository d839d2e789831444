package engine

import (
	"fmt"
	"math"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// tableCases derives one gradient case per op of the op table (and per
// broadcast form of the binary ops): adding an op to the table adds its
// finite-difference check.
func tableCases() []gradCase {
	var out []gradCase
	// into maps h into the op's domain (lo, hi) when it has one.
	into := func(b *ir.Builder, s *ir.OpSpec, h int32) int32 {
		if s.DomainLo == 0 && s.DomainHi == 0 {
			return h
		}
		lo := b.Unary(ir.OpScale, b.Param("one", []int64{1}, "ones"), s.DomainLo)
		return b.Binary(ir.OpAdd, b.Unary(ir.OpScale, b.Unary(ir.OpSigmoid, h, 0), s.DomainHi-s.DomainLo), lo)
	}
	// edgeVals is a value that differs on every edge of g.
	edgeVals := func(b *ir.Builder, g, h, h2 int32) int32 {
		return b.Binary(ir.OpMul, b.Table(ir.OpGatherSrc, g, h, 0), b.Table(ir.OpGatherDst, g, h2, 0))
	}
	for i := range ir.Ops {
		s := &ir.Ops[i]
		if s.Kind == "" {
			continue
		}
		switch s.Class {
		case ir.ClassUnary:
			out = append(out, gradCase{string(s.Kind), func(b *ir.Builder, h, _, _, _ int32) int32 {
				return b.Unary(s.Kind, into(b, s, h), s.CheckAlpha)
			}})
		case ir.ClassBinary:
			for _, form := range []string{"same", "row", "scalar"} {
				out = append(out, gradCase{string(s.Kind) + "_" + form, func(b *ir.Builder, h, h2, _, _ int32) int32 {
					y := h2
					switch form {
					case "row":
						y = b.Param("r", []int64{width}, "glorot")
					case "scalar":
						y = b.Param("s", []int64{1}, "glorot")
					}
					return b.Binary(s.Kind, h, into(b, s, y))
				}})
			}
		case ir.ClassGather:
			out = append(out, gradCase{string(s.Kind), func(b *ir.Builder, h, h2, g, _ int32) int32 {
				e := b.Binary(ir.OpMul, b.Table(s.Kind, g, h, 0), b.Unary(ir.OpTanh, b.Table(ir.OpGatherSrc, g, h2, 0), 0))
				return b.Table(ir.OpSegmentSum, g, e, 0)
			}})
		case ir.ClassSegment:
			out = append(out, gradCase{string(s.Kind), func(b *ir.Builder, h, h2, g, _ int32) int32 {
				e := edgeVals(b, g, h, h2)
				y := b.Table(s.Kind, g, e, s.CheckAlpha)
				if s.Seg == ir.SegSoftmax {
					y = b.Table(ir.OpSegmentSum, g, b.Binary(ir.OpMul, y, b.Table(ir.OpGatherSrc, g, h, 0)), 0)
				}
				return y
			}})
		case ir.ClassDegree:
			out = append(out, gradCase{string(s.Kind), func(b *ir.Builder, h, _, g, _ int32) int32 {
				return b.Binary(ir.OpMul, h, b.Table(s.Kind, g, h, 0))
			}})
		}
	}
	// The fused forms (a segment sum or mean of a gather_src that nothing
	// else reads).
	for _, k := range []ir.Kind{ir.OpSegmentSum, ir.OpSegmentMean} {
		out = append(out, gradCase{string(k) + "_fused", func(b *ir.Builder, h, _, g, _ int32) int32 {
			return b.Table(k, g, b.Table(ir.OpGatherSrc, g, h, 0), 0)
		}})
	}
	return out
}

// TestFusedSegments checks that a segment sum or mean of a gather_src
// runs fused (no [E,C] buffer) and equals the built-in aggregation,
// forward and backward: bit for bit for the sum; the mean's weights are
// exact where the built-in's are float32 (graph.MeanNorm), each off by at
// most u32 relative, so each mean (a positive combination) and what is
// linear in it moves by at most u32 of its magnitude: 4·u32 relative
// leaves a factor 2 for the cancellation of the terms that follow and
// for float64's own rounding (2^-29 of that).
func TestFusedSegments(t *testing.T) {
	for _, c := range []struct {
		seg ir.Kind
		red string
		tol float64
	}{{ir.OpSegmentSum, "sum", 0}, {ir.OpSegmentMean, "mean", 4 * floattol.UFloat32}} {
		t.Run(c.red, func(t *testing.T) {
			composed := buildCase(t, gradCase{"composed", func(b *ir.Builder, h, _, g, _ int32) int32 {
				return b.Table(c.seg, g, b.Table(ir.OpGatherSrc, g, h, 0), 0)
			}})
			builtin := buildCase(t, gradCase{"builtin", func(b *ir.Builder, h, _, g, _ int32) int32 { return b.Aggregate(g, h, c.red) }})
			hc, hb := newHarness(t, composed, tensor.Float64), newHarness(t, builtin, tensor.Float64)
			fused := 0
			for i := range hc.prog.aux {
				if hc.prog.aux[i].fused {
					fused++
				}
			}
			if fused != 1 {
				t.Fatalf("%d fused segment ops, want 1", fused)
			}
			near := func(a, b float64) bool { return math.Abs(a-b) <= c.tol*math.Max(1, math.Abs(b)) }
			if lc, lb := hc.loss(t, true), hb.loss(t, true); !near(lc, lb) {
				t.Fatalf("loss %v, built-in %v", lc, lb)
			}
			for k, p := range hc.prog.Params() {
				gc, gb := make([]float64, p.Grad.Numel()), make([]float64, p.Grad.Numel())
				if err := hc.be.Download(p.Grad, gc); err != nil {
					t.Fatal(err)
				}
				if err := hb.be.Download(hb.prog.Params()[k].Grad, gb); err != nil {
					t.Fatal(err)
				}
				for i := range gc {
					if !near(gc[i], gb[i]) {
						t.Fatalf("param %s[%d]: gradient %v, built-in %v", p.Name, i, gc[i], gb[i])
					}
				}
			}
		})
	}
}

// TestOpTableGradients checks the backward of every op of the table
// against central finite differences in float64 on the cpu backend.
func TestOpTableGradients(t *testing.T) {
	for _, c := range tableCases() {
		t.Run(c.name, func(t *testing.T) { checkGradients(t, c) })
	}
}

// TestOpTableCovered fails when an op of the table has no gradient case.
func TestOpTableCovered(t *testing.T) {
	names := map[string]bool{}
	for _, c := range append(tableCases(), structuralCases()...) {
		names[c.name] = true
	}
	for _, s := range ir.Ops {
		if s.Kind == "" || s.Class == ir.ClassLeaf {
			continue
		}
		if s.Class == ir.ClassStructural && len(s.Checks) > 0 {
			continue
		}
		if !names[string(s.Kind)] && !names[string(s.Kind)+"_same"] {
			t.Errorf("op %s has no gradient case", s.Kind)
		}
	}
}

// TestSegmentForward compares the segment reductions with a dense
// computation over the test graph's in-edges.
func TestSegmentForward(t *testing.T) {
	for _, s := range ir.Ops {
		if s.Class != ir.ClassSegment || s.Seg == ir.SegSoftmax {
			continue
		}
		t.Run(string(s.Kind), func(t *testing.T) {
			b := ir.NewBuilder()
			x := b.Input("x", inDim)
			g := b.Graph("adj")
			e := b.Table(ir.OpGatherSrc, g, x, 0)
			b.Output(b.Table(s.Kind, g, e, s.CheckAlpha))
			gr, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, gr, tensor.Float64)
			if err := h.prog.Forward(t.Context(), Mode{}); err != nil {
				t.Fatal(err)
			}
			got := make([]float64, nNodes*inDim)
			if err := h.be.Download(h.prog.Output(), got); err != nil {
				t.Fatal(err)
			}
			xs := make([]float64, nNodes*inDim)
			if err := h.be.Download(h.prog.env.Input, xs); err != nil {
				t.Fatal(err)
			}
			want := denseSegment(s, xs, s.CheckAlpha)
			// Each reduction combines at most nNodes in-edges: within
			// γ_{nNodes+2} (a float64 kernel and this float64 reference)
			// of its magnitude, the same reduction of |x| (a sum, a mean,
			// a product, or the selected |x|).
			abs := make([]float64, len(xs))
			for i, v := range xs {
				abs[i] = math.Abs(v)
			}
			mag := denseSegment(s, abs, math.Abs(s.CheckAlpha))
			for i := range want {
				if d := math.Abs(got[i] - want[i]); d > floattol.Gamma(nNodes+2, floattol.Checked64.U)*math.Max(math.Abs(mag[i]), math.Abs(want[i])) {
					t.Fatalf("element %d: got %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

// denseSegment reduces, per node and column, the inputs of its in-neighbours
// in the symmetrised test graph, as the op table defines.
func denseSegment(s ir.OpSpec, xs []float64, alpha float64) []float64 {
	adj := symmetricTestAdj()
	out := make([]float64, nNodes*inDim)
	for i := range nNodes {
		srcs := adj[i]
		for c := range inDim {
			var v []float64
			for _, j := range srcs {
				v = append(v, xs[int(j)*inDim+c])
			}
			out[i*inDim+c] = reduceDense(s, v, alpha)
		}
	}
	return out
}

func reduceDense(s ir.OpSpec, v []float64, alpha float64) float64 {
	if s.Seg == ir.SegProd {
		p := 1.0
		for _, x := range v {
			p *= x
		}
		return p
	}
	if len(v) == 0 {
		return 0
	}
	switch s.Seg {
	case ir.SegSum, ir.SegMean:
		t := 0.0
		for _, x := range v {
			t += x
		}
		if s.Seg == ir.SegMean {
			t /= float64(len(v))
		}
		return t
	case ir.SegMax, ir.SegMin:
		m := v[0]
		for _, x := range v {
			if s.Seg == ir.SegMax {
				m = max(m, x)
			} else {
				m = min(m, x)
			}
		}
		return m
	case ir.SegNth:
		if int(alpha) < len(v) {
			return v[int(alpha)]
		}
		return 0
	case ir.SegQuantile:
		sorted := append([]float64(nil), v...)
		for i := range sorted {
			for j := i + 1; j < len(sorted); j++ {
				if sorted[j] < sorted[i] {
					sorted[i], sorted[j] = sorted[j], sorted[i]
				}
			}
		}
		return sorted[int(alpha*float64(len(v)-1))]
	}
	panic(fmt.Sprint("no dense reference for ", s.Kind))
}

// symmetricTestAdj lists each node's in-neighbours in CSR order.
func symmetricTestAdj() [][]int64 {
	csr := symmetricTestCSR()
	out := make([][]int64, csr.NumRows)
	for r := range csr.NumRows {
		for k := csr.Indptr[r]; k < csr.Indptr[r+1]; k++ {
			out[r] = append(out[r], csr.Col(k))
		}
	}
	return out
}

// TestSegmentProdZeros checks segment_prod's backward against the product
// of the other factors, computed directly, where rows hold no, one and
// several zero factors (the case a log-space composition gets wrong).
func TestSegmentProdZeros(t *testing.T) {
	be := cpu.New(cpu.Options{Threads: 2})
	csr := symmetricTestCSR()
	a, err := be.UploadGraph(csr, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	const cols = 3
	ne := int(csr.NNZ())
	e := make([]float64, ne*cols)
	for k := range e {
		// column 0 no zeros, column 1 about one zero per row, column 2 many
		switch c := k % cols; {
		case c == 1 && (k/cols)%3 == 0, c == 2 && (k/cols)%2 == 0:
			e[k] = 0
		default:
			e[k] = 0.5 + float64(k%7)/4
		}
	}
	dout := make([]float64, csr.NumRows*cols)
	for i := range dout {
		dout[i] = float64(i%5) - 1.5
	}
	up := func(v []float64, rows int) *tensor.Tensor {
		return upload64(t, be, v, []int{rows, cols}, tensor.Float64)
	}
	et, dt := up(e, ne), up(dout, csr.NumRows)
	de := up(make([]float64, ne*cols), ne)
	if err := be.SegmentProdBackward(t.Context(), a, et, dt, de); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, ne*cols)
	if err := be.Download(de, got); err != nil {
		t.Fatal(err)
	}
	var zeroSeen [3]int
	for r := range csr.NumRows {
		k0, k1 := int(csr.Indptr[r]), int(csr.Indptr[r+1])
		for c := range cols {
			z := 0
			for k := k0; k < k1; k++ {
				if e[k*cols+c] == 0 {
					z++
				}
			}
			zeroSeen[min(z, 2)]++
			for k := k0; k < k1; k++ {
				want := dout[r*cols+c]
				for j := k0; j < k1; j++ {
					if j != k {
						want *= e[j*cols+c]
					}
				}
				// A product of at most k1-k0 exact factors (or the
				// product over the edge's own factor): γ_{deg+1} relative.
				if d := got[k*cols+c] - want; math.Abs(d) > floattol.Gamma(k1-k0+1, floattol.Checked64.U)*math.Abs(want) {
					t.Fatalf("row %d col %d edge %d (%d zeros): got %g, want %g", r, c, k, z, got[k*cols+c], want)
				}
			}
		}
	}
	if zeroSeen[1] == 0 || zeroSeen[2] == 0 {
		t.Fatalf("the case has rows with 0/1/2+ zeros %v: it must cover one and several", zeroSeen)
	}
}

// TestUsesEdgeIndex: only the gather, segment and degree ops bind the
// edge index; the structural graph ops (aggregate, ...) do not.
func TestUsesEdgeIndex(t *testing.T) {
	for _, c := range []struct {
		name string
		op   func(b *ir.Builder, g, x int32) int32
		want bool
	}{
		{"aggregate", func(b *ir.Builder, g, x int32) int32 { return b.Aggregate(g, x, "mean") }, false},
		{"lstm", func(b *ir.Builder, g, x int32) int32 {
			return b.LSTMAggregate(g, x, b.Param("wih", []int64{inDim, 8}, "glorot"), b.Param("whh", []int64{2, 8}, "glorot"), b.Param("b", []int64{8}, "zeros"))
		}, false},
		{"segment_sum", func(b *ir.Builder, g, x int32) int32 {
			return b.Table(ir.OpSegmentSum, g, b.Table(ir.OpGatherSrc, g, x, 0), 0)
		}, true},
	} {
		b := ir.NewBuilder()
		b.Output(c.op(b, b.Graph("adj"), b.Input("x", inDim)))
		g, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if got := UsesEdgeIndex(g); got != c.want {
			t.Errorf("%s: UsesEdgeIndex %v, want %v", c.name, got, c.want)
		}
	}
}
