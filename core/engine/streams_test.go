package engine

import (
	"context"
	"math"
	"strings"
	"testing"

	"strata/core/ir"
	"strata/core/tensor"
)

// dropModels are blockModels with dropouts where models have them: on
// the input (multiplied into the matmul where it can be), on the hidden
// rows, on a value read by an aggregation, and on the attention
// coefficients (edge rows).
var dropModels = map[string]func(b *ir.Builder, in, out int64, last bool) int32{
	"gcn": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Dropout(b.Input("x", in), 0.5)
		h := b.Aggregate(b.Graph("adj_self"), b.MatMul(x, b.Param("w", []int64{in, out}, "glorot")), "gcn")
		h = b.Bias(h, b.Param("b", []int64{out}, "normal"))
		if !last {
			h = b.Unary(ir.OpReLU, h, 0)
		}
		return h
	},
	"sage": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Dropout(b.Input("x", in), 0.4)
		root := b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot"))
		nbr := b.MatMul(b.Aggregate(b.Graph("adj"), x, "mean"), b.Param("wn", []int64{in, out}, "glorot"))
		return b.Dropout(b.Binary(ir.OpAdd, root, nbr), 0.3)
	},
	"sage-lstm": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Dropout(b.Input("x", in), 0.5)
		root := b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot"))
		agg := b.LSTMAggregate(b.Graph("adj"), x, b.Param("wih", []int64{in, 4 * in}, "uniform"),
			b.Param("whh", []int64{in, 4 * in}, "uniform"), b.Param("b", []int64{4 * in}, "glorot"))
		h := b.Binary(ir.OpAdd, root, b.MatMul(agg, b.Param("wn", []int64{in, out}, "glorot")))
		if !last {
			h = b.Dropout(b.Unary(ir.OpTanh, h, 0), 0.5)
		}
		return h
	},
	"gat": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Dropout(b.Input("x", in), 0.6)
		g := b.Graph("adj_self")
		z := b.MatMul(x, b.Param("w", []int64{in, 2 * out}, "glorot"))
		src := b.HeadDot(z, b.Param("as", []int64{2, out}, "glorot"))
		dst := b.HeadDot(z, b.Param("ad", []int64{2, out}, "glorot"))
		alpha := b.EdgeSoftmax(g, b.Unary(ir.OpLeakyReLU, b.UAddV(g, src, dst), 0.2))
		h := b.HeadMean(b.SpMMEdge(g, b.Dropout(alpha, 0.5), z), 2)
		if !last {
			h = b.Unary(ir.OpELU, h, 1)
		}
		return h
	},
}

// identityIDs are the node ids 0..n-1 (a binding of the whole graph's
// rows as a block).
func identityIDs(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	return ids
}

// TestDropoutFollowsRows: with dropout on (inputs, hidden rows and
// attention coefficients), a training program over the full-neighbour
// blocks of some seeds computes exactly the full-graph training outputs
// of those seeds, and two micro-batches the whole batch's gradients: a
// row draws its mask by its global id, wherever it is bound. Blocks
// bound under wrong node ids draw other masks, which the comparison
// catches.
func TestDropoutFollowsRows(t *testing.T) {
	const dt = tensor.Float64
	seeds := []int32{3, 17, 5, 22, 9, 31, 0, 12}
	train := Mode{Train: true, Seed: 99}
	for name, layer := range dropModels {
		t.Run(name, func(t *testing.T) {
			f := newBlockFixture()
			g := linkLayers(t, layer, []int64{inDim, width, classes})
			full, err := Compile(g, f.fullEnv(t, dt), 11)
			if err != nil {
				t.Fatal(err)
			}
			defer full.Release()
			if err := full.Forward(context.Background(), train); err != nil {
				t.Fatal(err)
			}
			want := download(t, &harness{prog: full}, full.Output())
			cols := full.Output().Cols()
			seedRows := func(env Env) []float64 {
				mb, err := Bind(g, env, full.ParamSet())
				if err != nil {
					t.Fatal(err)
				}
				defer mb.Release()
				if err := mb.Forward(context.Background(), train); err != nil {
					t.Fatal(err)
				}
				return download(t, &harness{prog: mb}, mb.Output())
			}
			// worst is the largest difference of the seeds' rows from the
			// full graph's relative to tol64, the bound of one value's two
			// orders of sums.
			worst := func(got []float64) float64 {
				d := 0.0
				for i, s := range seeds {
					for c := range cols {
						w := want[int(s)*cols+c]
						d = max(d, math.Abs(got[i*cols+c]-w)/tol64(g, f, w))
					}
				}
				return d
			}
			if d := worst(seedRows(f.blockEnv(t, seeds, dt))); d > 1 {
				t.Fatalf("block outputs differ from the full graph's by %.3g of their bound", d)
			}
			wrong := f.blockEnv(t, seeds, dt)
			for l, ids := range wrong.NodeIDs {
				wrong.NodeIDs[l] = append(append([]int32(nil), ids[1:]...), ids[0]) // every row named as another
			}
			if d := worst(seedRows(wrong)); d < 1e6 {
				t.Fatalf("blocks under the wrong node ids give the full graph's outputs (%.3g of the bound): the masks do not follow the ids", d)
			}
			checkMicroGrads(t, f, g, full, seeds, train)
		})
	}
}

// checkMicroGrads compares the whole batch's gradients over seeds (the
// full graph, mode m) with two micro-batches' accumulated ones.
func checkMicroGrads(t *testing.T, f *blockFixture, g *ir.Graph, full *Program, seeds []int32, m Mode) {
	t.Helper()
	ctx := context.Background()
	labelOf := func(v int32) int32 { return v % classes }
	labels := make([]int32, f.adj.NumRows)
	for i := range labels {
		labels[i] = labelOf(int32(i))
	}
	ps := full.ParamSet()
	if err := full.Forward(ctx, m); err != nil {
		t.Fatal(err)
	}
	lt, it := upload32(t, f.be, labels), upload32(t, f.be, seeds)
	if _, err := f.be.SoftmaxCrossEntropy(full.Output(), lt, it, full.OutputGrad()); err != nil {
		t.Fatal(err)
	}
	if err := full.Backward(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := gradsOf(f.be, ps)
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.ZeroGrads(); err != nil {
		t.Fatal(err)
	}
	m.AccumulateGrads = true
	for _, part := range [][]int32{seeds[:3], seeds[3:]} {
		p, err := Bind(g, f.blockEnv(t, part, tensor.Float64), ps)
		if err != nil {
			t.Fatal(err)
		}
		lab, idx := make([]int32, len(part)), make([]int32, len(part))
		for i, s := range part {
			lab[i], idx[i] = labelOf(s), int32(i)
		}
		if err := p.Forward(ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, err := f.be.SoftmaxCrossEntropy(p.Output(), upload32(t, f.be, lab), upload32(t, f.be, idx), p.OutputGrad()); err != nil {
			t.Fatal(err)
		}
		if err := f.be.Axpby(0, p.OutputGrad(), float64(len(part))/float64(len(seeds)), p.OutputGrad()); err != nil {
			t.Fatal(err)
		}
		if err := p.Backward(ctx); err != nil {
			t.Fatal(err)
		}
		p.Release()
	}
	got, err := gradsOf(f.be, ps)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		for i := range w {
			if d := math.Abs(got[name][i] - w[i]); d > tol64(g, f, w[i]) {
				t.Fatalf("gradient %s[%d]: micro-batches %g, whole batch %g", name, i, got[name][i], w[i])
			}
		}
	}
}

// TestDropoutNeedsRowIDs: a training program over blocks with a dropout
// and no node ids is an error naming Env.NodeIDs (its masks would follow
// the rows' positions), as is an edge dropout over a graph without its
// host structure; an inference program needs neither.
func TestDropoutNeedsRowIDs(t *testing.T) {
	const dt = tensor.Float64
	seeds := []int32{3, 17, 5}
	f := newBlockFixture()
	for _, c := range []struct {
		model, breaks, want string
	}{
		{"gcn", "ids", "Env.NodeIDs must name the sources of block 0"},
		{"gat", "host", `has no host structure (Graph.Host)`},
	} {
		g := linkLayers(t, dropModels[c.model], []int64{inDim, width, classes})
		ps, err := NewParams(g, f.be, dt, tensor.Host, 1)
		if err != nil {
			t.Fatal(err)
		}
		env := f.blockEnv(t, seeds, dt)
		switch c.breaks {
		case "ids":
			env.NodeIDs = nil
		case "host":
			for _, gr := range env.Blocks[0] {
				gr.Host = nil
			}
		}
		if _, err := Bind(g, env, ps); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s without %s: error %v, want %q", c.model, c.breaks, err, c.want)
		}
		env.Inference = true
		p, err := Bind(g, env, ps)
		if err != nil {
			t.Errorf("%s without %s, inference: %v", c.model, c.breaks, err)
		} else {
			p.Release()
		}
		ps.Release()
	}
}

// TestDropsEdges tells the models that drop edge rows from the others.
func TestDropsEdges(t *testing.T) {
	for _, c := range []struct {
		name  string
		layer func(b *ir.Builder, in, out int64, last bool) int32
		want  bool
	}{
		{"gcn with dropout", dropModels["gcn"], false},
		{"sage with dropout", dropModels["sage"], false},
		{"gat with attention dropout", dropModels["gat"], true},
		{"gat without dropout", blockModels["gat"], false},
	} {
		if got := DropsEdges(linkLayers(t, c.layer, []int64{inDim, width, classes})); got != c.want {
			t.Errorf("%s: DropsEdges %v, want %v", c.name, got, c.want)
		}
	}
}
