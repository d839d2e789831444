package ir

import "testing"

// TestConstCut builds first layers whose aggregation of the input is
// the same every step (GCN aggregating first with no input dropout, two
// hops, GIN with a fixed ε) or is not (dropout or a product before the
// aggregation, GraphSAGE's root product of the input, a learned op
// before a second aggregation, no aggregation at all), and checks
// CutConst: pre computes the cut from the input and the graph alone,
// post reads it as its input with every parameter and no graph op.
func TestConstCut(t *testing.T) {
	w := func(b *Builder, name string, in int64) int32 { return b.Param(name, []int64{in, 2}, "glorot") }
	cases := []struct {
		name  string
		build func(b *Builder, x, g int32)
		cut   Kind // the cut op's kind ("": none)
		pre   []Kind
		post  []Kind
	}{
		{"gcn, aggregation first", func(b *Builder, x, g int32) {
			h := b.MatMul(b.Aggregate(g, x, "gcn"), w(b, "w", 8))
			b.Output(b.Unary(OpReLU, b.Bias(h, b.Param("b", []int64{2}, "zeros")), 0))
		}, OpAggregate, []Kind{OpInput, OpGraph, OpAggregate}, []Kind{OpInput, OpParam, OpMatMul, OpParam, OpBias, OpReLU}},
		{"two hops, then dropout", func(b *Builder, x, g int32) {
			h := b.Aggregate(g, b.Aggregate(g, x, "mean"), "mean")
			b.Output(b.MatMul(b.Dropout(h, 0.5), w(b, "w", 8)))
		}, OpAggregate, []Kind{OpInput, OpGraph, OpAggregate, OpAggregate}, []Kind{OpInput, OpDropout, OpParam, OpMatMul}},
		{"gin, fixed ε", func(b *Builder, x, g int32) {
			h := b.Binary(OpAdd, b.Aggregate(g, x, "sum"), x)
			b.Output(b.MatMul(h, w(b, "w", 8)))
		}, OpAdd, []Kind{OpInput, OpGraph, OpAggregate, OpAdd}, []Kind{OpInput, OpParam, OpMatMul}},
		{"input dropout", func(b *Builder, x, g int32) {
			b.Output(b.MatMul(b.Aggregate(g, b.Dropout(x, 0.5), "gcn"), w(b, "w", 8)))
		}, "", nil, nil},
		{"W first", func(b *Builder, x, g int32) {
			b.Output(b.Aggregate(g, b.MatMul(x, w(b, "w", 8)), "gcn"))
		}, "", nil, nil},
		{"sage, root product", func(b *Builder, x, g int32) {
			b.Output(b.Binary(OpAdd, b.MatMul(x, w(b, "root", 8)), b.MatMul(b.Aggregate(g, x, "mean"), w(b, "nbr", 8))))
		}, "", nil, nil},
		{"a learned op, then a hop", func(b *Builder, x, g int32) {
			b.Output(b.Aggregate(g, b.MatMul(b.Aggregate(g, x, "mean"), w(b, "w", 8)), "mean"))
		}, "", nil, nil},
		{"no aggregation", func(b *Builder, x, g int32) {
			b.Output(b.MatMul(b.Unary(OpReLU, x, 0), w(b, "w", 8)))
		}, "", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := buildLayer(t, c.build)
			cut, ok := g.ConstCut()
			if c.cut == "" {
				if ok {
					t.Fatalf("cut at op #%d %s, want none", cut, g.Ops[cut].Kind)
				}
				if _, _, err := g.CutConst(cut); err == nil {
					t.Error("CutConst cut a layer ConstCut refuses")
				}
				return
			}
			if !ok || g.Ops[cut].Kind != c.cut {
				t.Fatalf("cut %d (%v), want a %s", cut, ok, c.cut)
			}
			pre, post, err := g.CutConst(cut)
			if err != nil {
				t.Fatal(err)
			}
			checkCut(t, g, cut, pre, post, c.pre, c.post)
			if len(post.Params()) != len(g.Params()) {
				t.Errorf("post has %d parameters, the layer %d", len(post.Params()), len(g.Params()))
			}
			if _, _, err := g.CutConst(0); err == nil {
				t.Error("cut at the input")
			}
		})
	}
}
