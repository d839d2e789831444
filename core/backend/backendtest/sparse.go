package backendtest

import (
	"fmt"
	"testing"

	"strata/core/backend"
	"strata/core/backend/backendtest/ref"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// Graph ops. Every case draws its graph from graphSpecs (or lstmSpecs) with
// its own random stream and uploads it to both backends.

// variant is one case of an op beside its dtype and graph.
type variant[V any] struct {
	name string
	v    V
}

// eachGraph runs f as "op/dtype/graph/variant" for every float dtype,
// graph of specs and variant.
func eachGraph[V any](s *suite, t *testing.T, op string, specs []graphSpec, vs []variant[V], f func(c *tc, dt tensor.DType, g *adj, v V)) {
	for _, dt := range floats {
		for _, sp := range specs {
			for _, v := range vs {
				name := dt.Short() + "/" + sp.name
				if v.name != "" {
					name += "/" + v.name
				}
				s.each(t, op, name, func(c *tc) { f(c, dt, c.graph(c.randCSR(sp)), v.v) })
			}
		}
	}
}

// spmmW is one kind of SpMM weights: none, [E], or [E,H].
type spmmW struct {
	name    string
	h, c    int // heads and columns per head of x
	rank1   bool
	weights bool
}

var spmmWs = []spmmW{
	{name: "w=nil", h: 1, c: 19},
	{name: "w=E", h: 1, c: 19, rank1: true, weights: true},
	{name: "w=EH1", h: 1, c: 19, weights: true},
	{name: "w=EH3", h: 3, c: 7, weights: true},
}

type spmmCase struct {
	trans bool
	w     spmmW
	beta  float64
}

// testSpMM covers A·x and Aᵀ·x, the three kinds of weights and beta 0
// (y poisoned) and 0.5.
func testSpMM(s *suite, t *testing.T) {
	var vs []variant[spmmCase]
	for _, trans := range []bool{false, true} {
		for _, w := range spmmWs {
			for _, beta := range []float64{0, 0.5} {
				name := fmt.Sprintf("%s/%s/beta=%g", map[bool]string{false: "fwd", true: "trans"}[trans], w.name, beta)
				vs = append(vs, variant[spmmCase]{name, spmmCase{trans, w, beta}})
			}
		}
	}
	eachGraph(s, t, "SpMM", graphSpecs, vs, func(c *tc, dt tensor.DType, g *adj, v spmmCase) {
		in, out := g.csr.NumCols, g.csr.NumRows
		if v.trans {
			in, out = out, in
		}
		e, f := int(g.csr.NNZ()), v.w.h*v.w.c
		var wt *pair
		var wv []float64
		wh := 0
		switch {
		case v.w.rank1:
			wt = c.rand(dt, -1, 1, e)
			wv = wt.h
		case v.w.weights:
			wt = c.rand(dt, -1, 1, e, v.w.h)
			wv, wh = wt.h, v.w.h
		}
		x := c.rand(dt, -1, 1, in, f)
		var y *pair
		if v.beta == 0 {
			y = c.out(dt, out, f)
		} else {
			y = c.rand(dt, -1, 1, out, f)
		}
		c.call("SpMM", func(b backend.Backend, sd side) error {
			return b.SpMM(c.ctx, sd.A(g), v.trans, sd.T(wt), sd.T(x), v.beta, sd.T(y))
		})
		c.near("y", y, ref.SpMM(arithOf(dt), g.csr, v.trans, wv, wh, x.h, v.w.h, v.w.c, v.beta, y.h))
	})
}

// testSpMMBiasAct covers the optional backend.SpMMBiasActer (skipped for
// a candidate without it): unweighted and rank-1 weighted aggregations
// with a bias and no activation, a ReLU or an ELU.
func testSpMMBiasAct(s *suite, t *testing.T) {
	if _, ok := s.got.(backend.SpMMBiasActer); !ok {
		t.Skipf("%s has no SpMMBiasAct", s.got.Name())
	}
	type biasCase struct {
		weighted bool
		act      backend.Unary
		name     string
	}
	var vs []variant[biasCase]
	for _, weighted := range []bool{false, true} {
		for _, act := range []backend.Unary{backend.Identity, backend.ReLU, backend.ELU} {
			vs = append(vs, variant[biasCase]{fmt.Sprintf("w=%v/act=%d", weighted, act), biasCase{weighted, act, ir.UnarySpec(uint8(act)).Name}})
		}
	}
	eachGraph(s, t, "SpMMBiasAct", graphSpecs, vs, func(c *tc, dt tensor.DType, g *adj, v biasCase) {
		const f = 6
		var wt *pair
		var wv []float64
		if v.weighted {
			wt = c.rand(dt, -1, 1, int(g.csr.NNZ()))
			wv = wt.h
		}
		x, bias := c.rand(dt, -1, 1, g.csr.NumCols, f), c.rand(dt, -1, 1, f)
		y := c.out(dt, g.csr.NumRows, f)
		c.call("SpMMBiasAct", func(b backend.Backend, sd side) error {
			return b.(backend.SpMMBiasActer).SpMMBiasAct(c.ctx, sd.A(g), sd.T(wt), sd.T(x), sd.T(bias), v.act, 0.7, sd.T(y))
		})
		// bias as a beta term of 1 over a column of biases: y = act(A·x + bias).
		ar := arithOf(dt)
		agg := ref.SpMM(ar, g.csr, false, wv, 0, x.h, 1, f, 0, nil)
		want := make([]ref.Val, len(agg))
		for i, z := range agg {
			want[i] = ref.Act(ar, v.name, ar.Add(z, floattol.In(bias.h[i%f])), 0.7)
		}
		c.near("y", y, want)
	})
}

// testSpMMMax checks the max, its argmax (exactly, -1 for empty rows) and
// ScatterArgmax through each backend's own argmax. x holds distinct
// values, so there are no ties between different sources.
func testSpMMMax(s *suite, t *testing.T) {
	type maxCase struct {
		it tensor.DType
		f  int
	}
	var vs []variant[maxCase]
	for _, it := range indexTypes {
		for _, f := range []int{3, 21} {
			vs = append(vs, variant[maxCase]{fmt.Sprintf("argmax=%s/F=%d", it.Short(), f), maxCase{it, f}})
		}
	}
	eachGraph(s, t, "SpMMMax", graphSpecs, vs, func(c *tc, dt tensor.DType, g *adj, v maxCase) {
		it, f := v.it, v.f
		rows, cols := g.csr.NumRows, g.csr.NumCols
		x := c.put(dt, c.distinct(cols*f), cols, f)
		y, am := c.out(dt, rows, f), c.out(it, rows, f)
		c.call("SpMMMax", func(b backend.Backend, sd side) error { return b.SpMMMax(c.ctx, sd.A(g), sd.T(x), sd.T(y), sd.T(am)) })
		c.exact("y", y) // a maximum of the inputs: no rounding
		c.exact("argmax", am)
		amv := c.refValues("argmax", am)
		dy, dx := c.rand(dt, -1, 1, rows, f), c.rand(dt, -1, 1, cols, f)
		c.call("ScatterArgmax", func(b backend.Backend, sd side) error { return b.ScatterArgmax(sd.T(am), sd.T(dy), sd.T(dx)) })
		c.near("dx of ScatterArgmax", dx, ref.Scatter(arithOf(dt), dy.h, func(i, j int) int { return int(amv[i*f+j]) }, rows, f, dx.h))
	})
}

// testScatterArgmax accumulates through a given argmax with repeated
// targets and -1 (no source) entries into a non-zero dx.
func testScatterArgmax(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, it := range indexTypes {
			for _, f := range []int{1, 13} {
				s.each(t, "ScatterArgmax", fmt.Sprintf("%s/argmax=%s/F=%d", dt.Short(), it.Short(), f), func(c *tc) {
					const n, rows = 60, 25
					am := c.ints(n*f, -1, rows)
					for i := 0; i < len(am); i += 7 {
						am[i] = -1
					}
					amt := c.put(it, am, n, f)
					dy, dx := c.rand(dt, -1, 1, n, f), c.rand(dt, -1, 1, rows, f)
					c.call("ScatterArgmax", func(b backend.Backend, sd side) error { return b.ScatterArgmax(sd.T(amt), sd.T(dy), sd.T(dx)) })
					c.near("dx", dx, ref.Scatter(arithOf(dt), dy.h, func(i, j int) int { return int(am[i*f+j]) }, n, f, dx.h))
				})
			}
		}
	}
}

// heads are the variants "H=1", "H=3", ... of head counts.
func heads(hs ...int) []variant[int] {
	out := make([]variant[int], len(hs))
	for i, h := range hs {
		out[i] = variant[int]{fmt.Sprintf("H=%d", h), h}
	}
	return out
}

// testSDDMM computes per-head edge dot products.
func testSDDMM(s *suite, t *testing.T) {
	eachGraph(s, t, "SDDMM", graphSpecs, heads(1, 2, 3), func(c *tc, dt tensor.DType, g *adj, h int) {
		f := h * map[int]int{1: 8, 2: 5, 3: 7}[h]
		x, y := c.rand(dt, -1, 1, g.csr.NumRows, f), c.rand(dt, -1, 1, g.csr.NumCols, f)
		out := c.out(dt, int(g.csr.NNZ()), h)
		c.call("SDDMM", func(b backend.Backend, sd side) error { return b.SDDMM(c.ctx, sd.A(g), sd.T(x), sd.T(y), sd.T(out)) })
		c.near("out", out, ref.SDDMM(arithOf(dt), g.csr, x.h, y.h, h, f/h))
	})
}

// testUAddV adds source and destination node values onto edges.
func testUAddV(s *suite, t *testing.T) {
	eachGraph(s, t, "UAddV", graphSpecs, heads(1, 3), func(c *tc, dt tensor.DType, g *adj, h int) {
		u, v := c.rand(dt, -1, 1, g.csr.NumCols, h), c.rand(dt, -1, 1, g.csr.NumRows, h)
		out := c.out(dt, int(g.csr.NNZ()), h)
		c.call("UAddV", func(b backend.Backend, sd side) error { return b.UAddV(c.ctx, sd.A(g), sd.T(u), sd.T(v), sd.T(out)) })
		c.near("out", out, ref.UAddV(arithOf(dt), g.csr, u.h, v.h, h))
	})
}

// testEdgeReduce sums edge values into destinations and into sources.
func testEdgeReduce(s *suite, t *testing.T) {
	type reduceCase struct {
		toSrc bool
		h     int
	}
	var vs []variant[reduceCase]
	for _, toSrc := range []bool{false, true} {
		for _, h := range []int{1, 3} {
			vs = append(vs, variant[reduceCase]{fmt.Sprintf("%s/H=%d", map[bool]string{false: "toDst", true: "toSrc"}[toSrc], h), reduceCase{toSrc, h}})
		}
	}
	eachGraph(s, t, "EdgeReduce", graphSpecs, vs, func(c *tc, dt tensor.DType, g *adj, v reduceCase) {
		toSrc, h := v.toSrc, v.h
		n := g.csr.NumRows
		if toSrc {
			n = g.csr.NumCols
		}
		e := c.rand(dt, -1, 1, int(g.csr.NNZ()), h)
		out := c.out(dt, n, h)
		c.call("EdgeReduce", func(b backend.Backend, sd side) error { return b.EdgeReduce(c.ctx, sd.A(g), toSrc, sd.T(e), sd.T(out)) })
		c.near("out", out, ref.EdgeReduce(arithOf(dt), g.csr, toSrc, e.h, h))
	})
}

// testEdgeSoftmax normalises random scores over each destination's edges.
func testEdgeSoftmax(s *suite, t *testing.T) {
	eachGraph(s, t, "EdgeSoftmax", graphSpecs, heads(1, 2), func(c *tc, dt tensor.DType, g *adj, h int) {
		e := int(g.csr.NNZ())
		scores, out := c.rand(dt, -3, 3, e, h), c.out(dt, e, h)
		c.call("EdgeSoftmax", func(b backend.Backend, sd side) error { return b.EdgeSoftmax(c.ctx, sd.A(g), sd.T(scores), sd.T(out)) })
		c.near("out", out, ref.EdgeSoftmax(arithOf(dt), g.csr, scores.h, h))
	})
}

// testEdgeSoftmaxBackward feeds a softmax output (computed on the host)
// and a random gradient.
func testEdgeSoftmaxBackward(s *suite, t *testing.T) {
	eachGraph(s, t, "EdgeSoftmaxBackward", graphSpecs, heads(1, 2), func(c *tc, dt tensor.DType, g *adj, h int) {
		e := int(g.csr.NNZ())
		out := c.put(dt, floattol.Values(ref.EdgeSoftmax(arithOf(dt), g.csr, c.uniform(e*h, -3, 3), h)), e, h)
		dout, ds := c.rand(dt, -1, 1, e, h), c.out(dt, e, h)
		c.call("EdgeSoftmaxBackward", func(b backend.Backend, sd side) error {
			return b.EdgeSoftmaxBackward(c.ctx, sd.A(g), sd.T(out), sd.T(dout), sd.T(ds))
		})
		c.near("dscores", ds, ref.EdgeSoftmaxBackward(arithOf(dt), g.csr, out.h, dout.h, h))
	})
}

// lstmH is the hidden size of the LSTM tests.
const lstmH = 3

// lstm is the tensors of one LSTMAggregate on both backends and its
// host reference.
type lstm struct {
	xw, whh, bias, out  *pair
	gates, cells, hprev *pair // nil for inference
	host                *ref.LSTM
}

// lstmForward runs LSTMAggregate on both backends, training (saving state)
// or not.
func (c *tc) lstmForward(dt tensor.DType, g *adj, train bool) *lstm {
	c.Helper()
	h, e := lstmH, int(g.csr.NNZ())
	l := &lstm{}
	l.xw = c.rand(dt, -1, 1, g.csr.NumCols, 4*h)
	l.whh, l.bias = c.rand(dt, -0.6, 0.6, h, 4*h), c.rand(dt, -0.5, 0.5, 4*h)
	l.out = c.out(dt, g.csr.NumRows, h)
	if train {
		// Saved state is in each backend's own layout: poisoned, never compared.
		l.gates, l.cells, l.hprev = c.out(dt, e, 4*h), c.out(dt, e, h), c.out(dt, e, h)
	}
	c.call("LSTMAggregate", func(b backend.Backend, sd side) error {
		return b.LSTMAggregate(c.ctx, sd.A(g), sd.T(l.xw), sd.T(l.whh), sd.T(l.bias), sd.T(l.out), sd.T(l.gates), sd.T(l.cells), sd.T(l.hprev))
	})
	l.host = ref.NewLSTM(arithOf(dt), g.csr, h, floattol.Ins(l.xw.h), l.whh.h, l.bias.h)
	c.near("out", l.out, l.host.Out)
	return l
}

// testLSTMAggregate compares out, in training and inference mode.
func testLSTMAggregate(s *suite, t *testing.T) {
	modes := []variant[bool]{{"train", true}, {"infer", false}}
	eachGraph(s, t, "LSTMAggregate", lstmSpecs, modes, func(c *tc, dt tensor.DType, g *adj, train bool) {
		c.lstmForward(dt, g, train)
	})
}

// testLSTMAggregateBackward runs a training forward on each backend and
// the backward from its own saved state, comparing dxw and dwhh.
func testLSTMAggregateBackward(s *suite, t *testing.T) {
	eachGraph(s, t, "LSTMAggregateBackward", lstmSpecs, []variant[bool]{{"", true}}, func(c *tc, dt tensor.DType, g *adj, _ bool) {
		l := c.lstmForward(dt, g, true)
		h := lstmH
		dout := c.rand(dt, -1, 1, g.csr.NumRows, h)
		dxw, dwhh := c.out(dt, g.csr.NumCols, 4*h), c.out(dt, h, 4*h)
		c.call("LSTMAggregateBackward", func(b backend.Backend, sd side) error {
			return b.LSTMAggregateBackward(c.ctx, sd.A(g), sd.T(l.whh), sd.T(l.gates), sd.T(l.cells), sd.T(l.hprev), sd.T(dout), sd.T(dxw), sd.T(dwhh))
		})
		l.host.Backward(dout.h)
		c.near("dxw", dxw, l.host.DXW)
		c.near("dwhh", dwhh, l.host.DWHH)
	})
}

// testSegmentProd covers the optional backend.SegmentMultiplier (skipped
// for a candidate without it): small integer values, many of them zero,
// so that rows have no, one and several zero factors.
func testSegmentProd(s *suite, t *testing.T) {
	if _, ok := s.got.(backend.SegmentMultiplier); !ok {
		t.Skipf("%s has no SegmentProd", s.got.Name())
	}
	eachGraph(s, t, "SegmentProd", graphSpecs, []variant[struct{}]{{"", struct{}{}}}, func(c *tc, dt tensor.DType, g *adj, _ struct{}) {
		const f = 5
		rows, e := g.csr.NumRows, int(g.csr.NNZ())
		vals := c.put(dt, c.ints(e*f, -2, 3), e, f)
		dout := c.put(dt, c.ints(rows*f, -3, 4), rows, f)
		out, de := c.out(dt, rows, f), c.out(dt, e, f)
		// Products of at most maxDeg small integers are integers below 2^24:
		// every rounding is exact, in both dtypes, in any order.
		c.call("SegmentProd", func(b backend.Backend, sd side) error {
			return b.(backend.SegmentMultiplier).SegmentProd(c.ctx, sd.A(g), sd.T(vals), sd.T(out))
		})
		c.exact("out", out)
		c.call("SegmentProdBackward", func(b backend.Backend, sd side) error {
			return b.(backend.SegmentMultiplier).SegmentProdBackward(c.ctx, sd.A(g), sd.T(vals), sd.T(dout), sd.T(de))
		})
		c.exact("de", de)
	})
}

// testSegmentSelect covers the optional backend.SegmentSelector (skipped
// for a candidate without it): by rank (q = 0, 0.5, 1; values with ties,
// which go in edge order) and by position (nth = 0, 2), both index types.
func testSegmentSelect(s *suite, t *testing.T) {
	if _, ok := s.got.(backend.SegmentSelector); !ok {
		t.Skipf("%s has no SegmentSelect", s.got.Name())
	}
	type selCase struct {
		it  tensor.DType
		q   float64
		nth int
	}
	var vs []variant[selCase]
	for _, it := range indexTypes {
		for _, q := range []float64{0, 0.5, 1} {
			vs = append(vs, variant[selCase]{fmt.Sprintf("idx=%s/q=%g", it.Short(), q), selCase{it, q, -1}})
		}
		for _, nth := range []int{0, 2} {
			vs = append(vs, variant[selCase]{fmt.Sprintf("idx=%s/nth=%d", it.Short(), nth), selCase{it, 0, nth}})
		}
	}
	eachGraph(s, t, "SegmentSelect", graphSpecs, vs, func(c *tc, dt tensor.DType, g *adj, v selCase) {
		const f = 5
		rows, e := g.csr.NumRows, int(g.csr.NNZ())
		vals := c.put(dt, c.ints(e*f, -3, 4), e, f)
		out, idx := c.out(dt, rows, f), c.out(v.it, rows, f)
		c.call("SegmentSelect", func(b backend.Backend, sd side) error {
			return b.(backend.SegmentSelector).SegmentSelect(c.ctx, sd.A(g), v.q, v.nth, sd.T(vals), sd.T(out), sd.T(idx))
		})
		c.exact("out", out)
		c.exact("idx", idx)
	})
}
