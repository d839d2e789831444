package ir

import (
	"slices"
	"testing"
)

// TestSplitLayers splits a linked model back into its layers: the same op
// kinds, the parameters under their linked names, each layer reading an
// input of the previous layer's width, every op in layer 0.
func TestSplitLayers(t *testing.T) {
	l0, l1 := layer(t, 8, 4), layer(t, 4, 2)
	g, err := Link([]*Graph{l0, l1})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := g.SplitLayers()
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		t.Fatalf("%d layers, want 2", len(parts))
	}
	for i, want := range []*Graph{l0, l1} {
		p := parts[i]
		var kinds, wantKinds []Kind
		for _, op := range p.Ops {
			kinds = append(kinds, op.Kind)
			if op.Layer != 0 {
				t.Errorf("layer %d: op %s has Layer %d", i, op.Kind, op.Layer)
			}
		}
		for _, op := range want.Ops {
			wantKinds = append(wantKinds, op.Kind)
		}
		if !slices.Equal(kinds, wantKinds) {
			t.Errorf("layer %d kinds %v, want %v", i, kinds, wantKinds)
		}
		in := p.Ops[0]
		if in.Kind != OpInput || in.Shape[1] != want.Ops[0].Shape[1] {
			t.Errorf("layer %d input %v", i, in)
		}
		if p.Ops[p.Outputs[0]].Shape[1] != want.Ops[want.Outputs[0]].Shape[1] {
			t.Errorf("layer %d output width differs", i)
		}
		for _, pi := range p.Params() {
			if name := p.Ops[pi].Name; name[:2] != "l"+string(rune('0'+i)) {
				t.Errorf("layer %d param %q lost its prefix", i, name)
			}
		}
	}
	if _, err := (&Graph{}).SplitLayers(); err == nil {
		t.Error("an empty graph splits")
	}
}

// TestRowCut builds layers whose row-wise prefix (the ops computed from
// the input row by row) ends at one value the rest reads (GCN with W
// first, GIN's first linear read by its aggregation and its root term),
// or does not (GCN aggregating its input first: the rest reads the
// input's dropout, which is no narrower, a cut the strategy may refuse;
// the input itself; GraphSAGE's two products of one dropout), and checks
// CutRows: pre computes the cut from the input with the prefix's
// parameters, post reads it as its input with the rest's, every op kept
// once with its dropout stream.
func TestRowCut(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *Builder, x, g int32)
		cut   Kind // the cut op's kind ("": none)
		pre   []Kind
		post  []Kind
	}{
		{"gcn, W first", func(b *Builder, x, g int32) {
			h := b.MatMul(b.Dropout(x, 0.5), b.Param("w", []int64{8, 2}, "glorot"))
			b.Output(b.Bias(b.Aggregate(g, h, "gcn"), b.Param("b", []int64{2}, "zeros")))
		}, OpMatMul, []Kind{OpInput, OpDropout, OpParam, OpMatMul}, []Kind{OpInput, OpGraph, OpAggregate, OpParam, OpBias}},
		{"gin, linear first", func(b *Builder, x, g int32) {
			h := b.MatMul(x, b.Param("w", []int64{8, 2}, "glorot"))
			b.Output(b.Binary(OpAdd, h, b.Aggregate(g, h, "sum")))
		}, OpMatMul, []Kind{OpInput, OpParam, OpMatMul}, []Kind{OpInput, OpGraph, OpAggregate, OpAdd}},
		{"gcn, aggregation first", func(b *Builder, x, g int32) {
			h := b.Aggregate(g, b.Dropout(x, 0.5), "gcn")
			b.Output(b.MatMul(h, b.Param("w", []int64{8, 2}, "glorot")))
		}, OpDropout, []Kind{OpInput, OpDropout}, []Kind{OpInput, OpGraph, OpAggregate, OpParam, OpMatMul}},
		{"the input", func(b *Builder, x, g int32) {
			b.Output(b.MatMul(b.Aggregate(g, x, "mean"), b.Param("w", []int64{8, 2}, "glorot")))
		}, "", nil, nil},
		{"sage, two products", func(b *Builder, x, g int32) {
			d := b.Dropout(x, 0.5)
			root := b.MatMul(d, b.Param("root", []int64{8, 2}, "glorot"))
			nbr := b.Aggregate(g, b.MatMul(d, b.Param("nbr", []int64{8, 2}, "glorot")), "mean")
			b.Output(b.Binary(OpAdd, root, nbr))
		}, "", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := buildLayer(t, c.build)
			cut, ok := g.RowCut()
			if c.cut == "" {
				if ok {
					t.Fatalf("cut at op #%d %s, want none", cut, g.Ops[cut].Kind)
				}
				return
			}
			if !ok || g.Ops[cut].Kind != c.cut {
				t.Fatalf("cut %d (%v), want a %s", cut, ok, c.cut)
			}
			pre, post, err := g.CutRows(cut)
			if err != nil {
				t.Fatal(err)
			}
			checkCut(t, g, cut, pre, post, c.pre, c.post)
			for _, op := range append(slices.Clone(pre.Ops[1:]), post.Ops[1:]...) {
				if op.Kind == OpDropout && op.Stream == 0 {
					t.Errorf("a dropout lost its stream")
				}
			}
			if _, _, err := g.CutRows(0); err == nil {
				t.Error("cut at the input")
			}
		})
	}
}

// buildLayer builds a layer of input "x" (8 wide) and graph "adj" with
// build, every op given a dropout stream of its own.
func buildLayer(t *testing.T, build func(b *Builder, x, g int32)) *Graph {
	t.Helper()
	b := NewBuilder()
	build(b, b.Input("x", 8), b.Graph("adj"))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	for i := range g.Ops {
		g.Ops[i].Stream = uint64(100 + i)
	}
	return g
}

// opKinds lists the kinds of g's ops in order.
func opKinds(g *Graph) []Kind {
	var out []Kind
	for _, op := range g.Ops {
		out = append(out, op.Kind)
	}
	return out
}

// checkCut checks layer g cut at cut into pre and post: their op kinds,
// pre's output the cut (its dropout stream kept), post's input as wide
// as the cut.
func checkCut(t *testing.T, g *Graph, cut int32, pre, post *Graph, wantPre, wantPost []Kind) {
	t.Helper()
	if !slices.Equal(opKinds(pre), wantPre) || !slices.Equal(opKinds(post), wantPost) {
		t.Errorf("pre %v, post %v; want %v, %v", opKinds(pre), opKinds(post), wantPre, wantPost)
	}
	if o := pre.Ops[pre.Outputs[0]]; o.Kind != g.Ops[cut].Kind || o.Stream != g.Ops[cut].Stream {
		t.Errorf("pre's output %v, want the cut", o)
	}
	if in := post.Ops[0]; in.Kind != OpInput || in.Shape[1] != g.Ops[cut].Shape[1] {
		t.Errorf("post's input %v, want the cut's width %d", in, g.Ops[cut].Shape[1])
	}
}
