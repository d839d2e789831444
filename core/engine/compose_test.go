package engine

import (
	"fmt"
	"testing"

	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// gcnLayer is a layer as a module records it: Â·(x·W) + b, then ReLU
// unless it is the classifier.
func gcnLayer(t *testing.T, in, out int64, last bool) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input("x", in)
	h := b.Bias(b.Aggregate(b.Graph("adj_self"), b.MatMul(x, b.Param("W", []int64{in, out}, "glorot")), "gcn"), b.Param("b", []int64{out}, "normal"))
	if !last {
		h = b.Unary(ir.OpReLU, h, 0)
	}
	b.Output(h)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// composeCase is a model composed by ir.Residual or ir.LinkJK with its
// dense reference.
type composeCase struct {
	name  string
	model func(t *testing.T) (*ir.Graph, error)
	ref   func(r *denseRef) []floattol.Val
}

// denseRef computes a composed model's output by hand from its parameters.
type denseRef struct {
	ar     floattol.Arith
	adj, x []floattol.Val
	p      map[string][]float64
}

func (r *denseRef) param(name string) []floattol.Val { return floattol.Ins(r.p[name]) }

// layer is gcnLayer l on h (in columns) with out columns.
func (r *denseRef) layer(l int, h []floattol.Val, in, out int, last bool) []floattol.Val {
	pre := fmt.Sprintf("l%d.", l)
	v := addRowV(r.ar, matmulV(r.ar, r.adj, matmulV(r.ar, h, r.param(pre+"W"), nNodes, in, out), nNodes, nNodes, out), r.param(pre+"b"))
	if !last {
		v = reluV(v)
	}
	return v
}

// residual is layer l plus its input (times l<l>.residual.weight when the
// widths differ).
func (r *denseRef) residual(l int, h []floattol.Val, in, out int, last bool) []floattol.Val {
	v, short := r.layer(l, h, in, out, last), h
	if in != out {
		short = matmulV(r.ar, h, r.param(fmt.Sprintf("l%d.residual.weight", l)), nNodes, in, out)
	}
	for i := range v {
		v[i] = r.ar.Add(v[i], short[i])
	}
	return v
}

// classify is the JK classifier: h (c columns)·jk.lin.weight + jk.lin.bias.
func (r *denseRef) classify(h []floattol.Val, c int) []floattol.Val {
	return addRowV(r.ar, matmulV(r.ar, h, r.param("jk.lin.weight"), nNodes, c, classes), r.param("jk.lin.bias"))
}

func composeCases() []composeCase {
	hidden := func(t *testing.T) []*ir.Graph {
		return []*ir.Graph{gcnLayer(t, inDim, width, false), gcnLayer(t, width, width, false)}
	}
	jk := func(mode string) func(t *testing.T) (*ir.Graph, error) {
		return func(t *testing.T) (*ir.Graph, error) { return ir.LinkJK(hidden(t), mode, classes) }
	}
	combine := func(r *denseRef, f func(a, b floattol.Val) floattol.Val) []floattol.Val {
		h0 := r.layer(0, r.x, inDim, width, false)
		h1 := r.layer(1, h0, width, width, false)
		out := make([]floattol.Val, len(h0))
		for i := range out {
			out[i] = f(h0[i], h1[i])
		}
		return out
	}
	return []composeCase{
		{"residual", func(t *testing.T) (*ir.Graph, error) {
			layers := []*ir.Graph{gcnLayer(t, inDim, width, false), gcnLayer(t, width, width, false), gcnLayer(t, width, classes, true)}
			for i, l := range layers {
				var err error
				if layers[i], err = ir.Residual(l); err != nil {
					return nil, err
				}
			}
			return ir.Link(layers)
		}, func(r *denseRef) []floattol.Val {
			h := r.residual(0, r.x, inDim, width, false) // a projected shortcut
			h = r.residual(1, h, width, width, false)    // the identity
			return r.residual(2, h, width, classes, true)
		}},
		{"jk_max", jk("max"), func(r *denseRef) []floattol.Val {
			return r.classify(combine(r, floattol.Max), width)
		}},
		{"jk_cat", jk("cat"), func(r *denseRef) []floattol.Val {
			h0 := r.layer(0, r.x, inDim, width, false)
			h1 := r.layer(1, h0, width, width, false)
			cat := make([]floattol.Val, 0, 2*len(h0))
			for i := range nNodes {
				cat = append(append(cat, h0[i*width:][:width]...), h1[i*width:][:width]...)
			}
			return r.classify(cat, 2*width)
		}},
		{"jk_lstm", jk("lstm"), func(r *denseRef) []floattol.Val {
			h0 := r.layer(0, r.x, inDim, width, false)
			return r.classify(r.jkLSTM([][]floattol.Val{h0, r.layer(1, h0, width, width, false)}), width)
		}},
	}
}

// TestComposedModelsMatchDense compares residual connections and jumping
// knowledge around GCN layers with their dense reference (forward, in
// float64 and float32) and their gradients with central finite
// differences.
func TestComposedModelsMatchDense(t *testing.T) {
	adj := floattol.Ins(denseGCNAdj(graph.AddSelfLoops(graph.Symmetrize(testGraph()))))
	for _, c := range composeCases() {
		t.Run(c.name, func(t *testing.T) {
			gr, err := c.model(t)
			if err != nil {
				t.Fatal(err)
			}
			for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
				hn := newHarness(t, gr, dt)
				got, snap := hn.forward(t, Mode{})
				r := &denseRef{ar: checked(dt), adj: adj, x: floattol.Ins(download(t, hn, hn.prog.env.Input)), p: snap}
				want := c.ref(r)
				if i, q := floattol.Exceeds(got, floattol.Values(want), floattol.Errors(want)); i >= 0 {
					t.Fatalf("%s: output[%d] = %g, dense reference %g: off by %.3g times the bound %.3g", dt, i, got[i], want[i].V, q, want[i].E)
				}
			}
			hn := newHarness(t, gr, tensor.Float64)
			hn.loss(t, true)
			for _, p := range hn.prog.Params() {
				hn.checkFD(t, "param "+p.Name, p.Value, download(t, hn, p.Grad))
			}
		})
	}
}

// jkLSTM is PyG's JumpingKnowledge("lstm") on the layer outputs xs (each
// nNodes×width): a bi-directional LSTM with hidden H = L·width/2 from a
// zero state over the sequence x_0 .. x_{L-1} of every node, the score
// [h_fwd, h_bwd]·att + b of every step, and Σ_t softmax_t(score)·x_t.
func (r *denseRef) jkLSTM(xs [][]floattol.Val) []floattol.Val {
	ar, steps := r.ar, len(xs)
	hid := steps * width / 2
	out := make([]floattol.Val, nNodes*width)
	for n := range nNodes {
		seq := make([][]floattol.Val, steps)
		for t := range steps {
			seq[t] = xs[t][n*width:][:width]
		}
		fwd := r.lstm("jk.lstm.fwd", seq, hid, false)
		bwd := r.lstm("jk.lstm.bwd", seq, hid, true)
		scores := make([]floattol.Val, steps)
		for t := range steps {
			scores[t] = ar.Add(ar.Add(ar.Dot(fwd[t], r.param("jk.att.weight_fwd")), ar.Dot(bwd[t], r.param("jk.att.weight_bwd"))), r.param("jk.att.bias")[0])
		}
		top := scores[0]
		for _, s := range scores[1:] {
			top = floattol.Max(top, s)
		}
		for t := range scores {
			scores[t] = ar.Exp(ar.Sub(scores[t], top))
		}
		sum := ar.Sum(scores...)
		for c := range width {
			terms := make([]floattol.Val, steps)
			for t := range steps {
				terms[t] = ar.Mul(seq[t][c], ar.Div(scores[t], sum))
			}
			out[n*width+c] = ar.Sum(terms...)
		}
	}
	return out
}

// lstm runs one direction of an LSTM (gates i, f, g, o) over seq from a
// zero state and returns the hidden state of every step, in seq's order.
func (r *denseRef) lstm(name string, seq [][]floattol.Val, hid int, reverse bool) [][]floattol.Val {
	ar := r.ar
	h, c := make([]floattol.Val, hid), make([]floattol.Val, hid)
	out := make([][]floattol.Val, len(seq))
	for k := range seq {
		t := k
		if reverse {
			t = len(seq) - 1 - k
		}
		gate := func(g string, act func(floattol.Val) floattol.Val) []floattol.Val {
			w, u, b := r.param(name+".weight_i"+g), r.param(name+".weight_h"+g), r.param(name+".bias_"+g)
			v := make([]floattol.Val, hid)
			for j := range hid {
				xw := make([]floattol.Val, len(seq[t]))
				for i := range seq[t] {
					xw[i] = ar.Mul(seq[t][i], w[i*hid+j])
				}
				hu := make([]floattol.Val, hid)
				for i := range hid {
					hu[i] = ar.Mul(h[i], u[i*hid+j])
				}
				v[j] = act(ar.Add(ar.Add(ar.Sum(xw...), b[j]), ar.Sum(hu...)))
			}
			return v
		}
		ig, fg, gg, og := gate("i", ar.Sigmoid), gate("f", ar.Sigmoid), gate("g", ar.Tanh), gate("o", ar.Sigmoid)
		nh := make([]floattol.Val, hid)
		for j := range hid {
			c[j] = ar.Add(ar.Mul(fg[j], c[j]), ar.Mul(ig[j], gg[j]))
			nh[j] = ar.Mul(og[j], ar.Tanh(c[j]))
		}
		h, out[t] = nh, nh
	}
	return out
}

// TestComposedModelsOnBlocks: residual connections and jumping knowledge
// read values across the layers' row spaces (a layer's sources, an
// earlier layer's output); bound to sampled blocks they give the
// full-graph outputs at the seeds and the whole batch's gradients.
func TestComposedModelsOnBlocks(t *testing.T) {
	seeds := []int32{3, 17, 5, 22, 9, 31, 0, 12}
	layers := func(t *testing.T, dims []int64, jk bool) []*ir.Graph {
		var out []*ir.Graph
		for l := range len(dims) - 1 {
			b := ir.NewBuilder()
			b.Output(blockModels["sage"](b, dims[l], dims[l+1], !jk && l == len(dims)-2))
			g, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, g)
		}
		return out
	}
	cases := map[string]func(t *testing.T) (*ir.Graph, error){
		"residual": func(t *testing.T) (*ir.Graph, error) {
			ls := layers(t, []int64{inDim, inDim, classes}, false) // the identity, then a projection
			for i := range ls {
				var err error
				if ls[i], err = ir.Residual(ls[i]); err != nil {
					return nil, err
				}
			}
			return ir.Link(ls)
		},
	}
	for _, mode := range ir.JKModes {
		cases["jk_"+mode] = func(t *testing.T) (*ir.Graph, error) {
			return ir.LinkJK(layers(t, []int64{inDim, width, width}, true), mode, classes)
		}
	}
	for name, model := range cases {
		t.Run(name, func(t *testing.T) {
			g, err := model(t)
			if err != nil {
				t.Fatal(err)
			}
			if n := blocksMatchFull(t, g, seeds); n == 0 {
				t.Error("no narrow ops in the block program")
			}
		})
	}
}
