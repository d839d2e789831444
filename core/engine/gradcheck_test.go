package engine

import (
	"context"
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// testGraph is a small directed graph with an isolated node and varied degrees.
func testGraph() *graph.CSR {
	edges := [][2]int64{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {0, 3}, {3, 0}, {4, 0}, {0, 4}, {4, 2}, {2, 4}, {1, 3}}
	return graph.FromEdges(6, edges)
}

const (
	nNodes  = 6
	inDim   = 5
	width   = ir.CheckWidth
	classes = 3
)

type gradCase struct {
	name  string
	build func(b *ir.Builder, h, h2, g, gs int32) int32
}

// gradCases are the structural ops' gradient checks, as the op table
// declares them (ir.OpSpec.Checks), then a few elementwise forms and a
// whole GAT layer.
func gradCases() []gradCase {
	param := func(b *ir.Builder, name string, shape ...int64) int32 { return b.Param(name, shape, "glorot") }
	out := structuralCases()
	return append(out, []gradCase{
		{"add_same", func(b *ir.Builder, h, h2, _, _ int32) int32 { return b.Binary(ir.OpAdd, h, h2) }},
		{"sub_row", func(b *ir.Builder, h, _, _, _ int32) int32 { return b.Binary(ir.OpSub, h, param(b, "r", width)) }},
		{"mul_same", func(b *ir.Builder, h, h2, _, _ int32) int32 { return b.Binary(ir.OpMul, h, h2) }},
		{"mul_row", func(b *ir.Builder, h, _, _, _ int32) int32 { return b.Binary(ir.OpMul, h, param(b, "r", width)) }},
		{"mul_scalar", func(b *ir.Builder, h, _, _, _ int32) int32 { return b.Binary(ir.OpMul, h, param(b, "s", 1)) }},
		{"relu", func(b *ir.Builder, h, _, _, _ int32) int32 { return b.Unary(ir.OpReLU, h, 0) }},
		{"leaky_relu", func(b *ir.Builder, h, _, _, _ int32) int32 { return b.Unary(ir.OpLeakyReLU, h, 0.2) }},
		{"elu", func(b *ir.Builder, h, _, _, _ int32) int32 { return b.Unary(ir.OpELU, h, 1) }},
		{"sigmoid", func(b *ir.Builder, h, _, _, _ int32) int32 { return b.Unary(ir.OpSigmoid, h, 0) }},
		{"tanh", func(b *ir.Builder, h, _, _, _ int32) int32 { return b.Unary(ir.OpTanh, h, 0) }},
		{"gat_layer", func(b *ir.Builder, h, _, _, gs int32) int32 {
			s := b.HeadDot(h, param(b, "as", 2, width/2))
			d := b.HeadDot(h, param(b, "ad", 2, width/2))
			e := b.Unary(ir.OpLeakyReLU, b.UAddV(gs, s, d), 0.2)
			a := b.Unary(ir.OpDropout, b.EdgeSoftmax(gs, e), 0.3)
			return b.Unary(ir.OpELU, b.HeadMean(b.SpMMEdge(gs, a, h), 2), 1)
		}},
	}...)
}

// structuralCases derives one gradient case per check of every
// structural op of the op table: adding a structural op with its Checks
// adds its finite-difference check.
func structuralCases() []gradCase {
	var out []gradCase
	for _, s := range ir.Ops {
		for _, c := range s.Checks {
			name := string(s.Kind)
			if c.Name != "" {
				name += "_" + c.Name
			}
			out = append(out, gradCase{name, c.Build})
		}
	}
	return out
}

// buildCase wraps a case between an input projection and a classifier.
func buildCase(t *testing.T, c gradCase) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input("x", inDim)
	g, gs := b.Graph("adj"), b.Graph("adj_self")
	h := b.MatMul(x, b.Param("W1", []int64{inDim, width}, "glorot"))
	h2 := b.Unary(ir.OpTanh, b.MatMul(x, b.Param("W2", []int64{inDim, width}, "glorot")), 0)
	v := c.build(b, h, h2, g, gs)
	out := b.MatMul(v, b.Param("Wout", []int64{b.Shape(v)[1], classes}, "glorot"))
	b.Output(out)
	gr, err := b.Finish()
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return gr
}

type harness struct {
	gr     *ir.Graph
	be     backend.Backend
	prog   *Program
	labels *tensor.Tensor
	idx    *tensor.Tensor
}

func newHarness(t *testing.T, gr *ir.Graph, dt tensor.DType) *harness {
	be := cpu.New(cpu.Options{Threads: 2})
	adj := symmetricTestCSR()
	adjSelf := graph.AddSelfLoops(adj)
	graphs := map[string]*Graph{}
	for name, csr := range map[string]*graph.CSR{"adj": adj, "adj_self": adjSelf} {
		a, err := be.UploadGraph(csr, tensor.Host)
		if err != nil {
			t.Fatal(err)
		}
		eg := &Graph{Adj: a, Host: csr}
		eg.GCNNorm = upload64(t, be, toF64(graph.GCNNorm(csr)), []int{int(csr.NNZ())}, dt)
		eg.MeanNorm = upload64(t, be, toF64(graph.MeanNorm(csr)), []int{int(csr.NNZ())}, dt)
		if UsesEdgeIndex(gr) {
			if eg.Edges, err = BindEdgeIndex(be, csr, dt, tensor.Host); err != nil {
				t.Fatal(err)
			}
		}
		graphs[name] = eg
	}
	xs := make([]float64, nNodes*inDim)
	r := newSplitMix(7)
	for i := range xs {
		xs[i] = r.normal()
	}
	x := upload64(t, be, xs, []int{nNodes, inDim}, dt)
	prog, err := Compile(gr, Env{Backend: be, DType: dt, Tier: tensor.Host, Graphs: graphs, Input: x}, 42)
	if err != nil {
		t.Fatal(err)
	}
	labels, _ := be.Alloc(tensor.Int32, []int{nNodes}, tensor.Host)
	idx, _ := be.Alloc(tensor.Int32, []int{nNodes}, tensor.Host)
	if err := be.Upload(labels, []int32{0, 1, 2, 1, 0, 2}); err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(idx, []int32{0, 1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	return &harness{gr: gr, be: be, prog: prog, labels: labels, idx: idx}
}

func toF64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func upload64(t *testing.T, be backend.Backend, v []float64, shape []int, dt tensor.DType) *tensor.Tensor {
	t.Helper()
	tt, err := be.Alloc(dt, shape, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	if dt == tensor.Float64 {
		err = be.Upload(tt, v)
	} else {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		err = be.Upload(tt, f)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// loss runs a training forward with a fixed dropout stream.
func (h *harness) loss(t *testing.T, withGrad bool) float64 {
	t.Helper()
	ctx := context.Background()
	if err := h.prog.Forward(ctx, Mode{Train: true, Seed: 99}); err != nil {
		t.Fatal(err)
	}
	var dl *tensor.Tensor
	if withGrad {
		dl = h.prog.OutputGrad()
	}
	l, err := h.be.SoftmaxCrossEntropy(h.prog.Output(), h.labels, h.idx, dl)
	if err != nil {
		t.Fatal(err)
	}
	if withGrad {
		if err := h.prog.Backward(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func symmetricTestCSR() *graph.CSR { return graph.Symmetrize(testGraph()) }

// TestGradients checks every op's backward against central finite
// differences on float64 inputs.
func TestGradients(t *testing.T) {
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) { checkGradients(t, c) })
	}
}

// checkGradients compares the backward of a case with central finite
// differences in float64.
func checkGradients(t *testing.T, c gradCase) {
	t.Helper()
	h := newHarness(t, buildCase(t, c), tensor.Float64)
	h.loss(t, true)
	for _, p := range h.prog.Params() {
		h.checkFD(t, "param "+p.Name, p.Value, download(t, h, p.Grad))
	}
}

// fdRoundings bounds the roundings on any path to the loss of these tiny
// programs: each op of gr adds at most its longest reduction and two, and
// no reduction is longer than the largest dimension here (nodes, features,
// classes, edges of adj_self).
func fdRoundings(gr *ir.Graph) int {
	dim := max(nNodes, inDim, width, classes, int(graph.AddSelfLoops(symmetricTestCSR()).NNZ()))
	return len(gr.Ops) * (dim + 2)
}

// checkFD compares analytic, the gradient of the loss with respect to the
// values of tt, element by element with central differences in float64:
// the step and the bound follow from the loss's scale s = max(1, |loss|)
// (a mean of positive cross-entropy terms, of unit derivatives in
// parameters of order 1) and its roundings (floattol.Slope, which also
// widens the bound next to a kink of a ReLU or a max).
func (h *harness) checkFD(t *testing.T, what string, tt *tensor.Tensor, analytic []float64) {
	t.Helper()
	vals := download(t, h, tt)
	s := math.Max(1, math.Abs(h.loss(t, false)))
	g := floattol.Gamma(fdRoundings(h.gr), floattol.UFloat64)
	eps := g * s
	num, bound := floattol.Gradient(len(vals), func(i int, d float64) float64 {
		orig := vals[i]
		vals[i] = orig + d
		h.upload(t, tt, vals)
		l := h.loss(t, false)
		vals[i] = orig
		h.upload(t, tt, vals)
		return l
	}, floattol.CentralStep(eps, s), eps)
	for i, a := range analytic {
		bound[i] += g * (math.Abs(a) + s) // the backward's own rounding
	}
	if i, r := floattol.Exceeds(analytic, num, bound); i >= 0 {
		t.Errorf("%s[%d]: backward %g, central difference %g: off by %.3g times the bound %.3g", what, i, analytic[i], num[i], r, bound[i])
	}
}

func (h *harness) upload(t *testing.T, tt *tensor.Tensor, v []float64) {
	t.Helper()
	if err := h.be.Upload(tt, v); err != nil {
		t.Fatal(err)
	}
}

// TestFloat32MatchesFloat64 runs a GAT-like layer in both precisions.
func TestFloat32MatchesFloat64(t *testing.T) {
	cases := gradCases()
	c := cases[len(cases)-1]
	gr := buildCase(t, c)
	l64 := newHarness(t, gr, tensor.Float64).loss(t, true)
	l32 := newHarness(t, gr, tensor.Float32).loss(t, true)
	// float64 is exact at float32's scale: the float32 loss is within
	// γ_k(u32) of the loss's scale, k bounding the roundings on any path
	// (fdRoundings), each moving a cross-entropy of order-one logits by
	// at most its own relative size.
	if math.Abs(l64-l32) > floattol.Gamma(fdRoundings(gr), floattol.Checked32.U)*math.Max(1, math.Abs(l64)) {
		t.Fatalf("float32 loss %.8g differs from float64 loss %.8g", l32, l64)
	}
}
