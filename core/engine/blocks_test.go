package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// Models written as a layer module would write them, linked over 2 layers.
var blockModels = map[string]func(b *ir.Builder, in, out int64, last bool) int32{
	"gcn": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		h := b.Aggregate(b.Graph("adj_self"), b.MatMul(x, b.Param("w", []int64{in, out}, "glorot")), "gcn")
		h = b.Bias(h, b.Param("b", []int64{out}, "normal"))
		if !last {
			h = b.Unary(ir.OpReLU, h, 0)
		}
		return h
	},
	"sage": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		root := b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot")) // on the sources: narrowed
		nbr := b.MatMul(b.Aggregate(b.Graph("adj"), x, "mean"), b.Param("wn", []int64{in, out}, "glorot"))
		h := b.Binary(ir.OpAdd, root, nbr)
		if !last {
			h = b.Unary(ir.OpTanh, h, 0)
		}
		return h
	},
	"gat": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		g := b.Graph("adj_self")
		z := b.MatMul(x, b.Param("w", []int64{in, 2 * out}, "glorot"))
		src := b.HeadDot(z, b.Param("as", []int64{2, out}, "glorot"))
		dst := b.HeadDot(z, b.Param("ad", []int64{2, out}, "glorot"))
		alpha := b.EdgeSoftmax(g, b.Unary(ir.OpLeakyReLU, b.UAddV(g, src, dst), 0.2))
		h := b.HeadMean(b.SpMMEdge(g, alpha, z), 2)
		if !last {
			h = b.Unary(ir.OpELU, h, 1)
		}
		return h
	},
	"sage-lstm": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		root := b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot"))
		agg := b.LSTMAggregate(b.Graph("adj"), x, b.Param("wih", []int64{in, 4 * in}, "uniform"),
			b.Param("whh", []int64{in, 4 * in}, "uniform"), b.Param("b", []int64{4 * in}, "glorot"))
		h := b.Binary(ir.OpAdd, root, b.MatMul(agg, b.Param("wn", []int64{in, out}, "glorot")))
		if !last {
			h = b.Unary(ir.OpTanh, h, 0)
		}
		return h
	},
	"gin-max": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		h := b.Binary(ir.OpAdd, x, b.Aggregate(b.Graph("adj"), x, "max"))
		h = b.MatMul(h, b.Param("w", []int64{in, out}, "glorot"))
		return b.Concat(h, b.Aggregate(b.Graph("adj"), x, "sum"))
	},
}

func linkModel(t *testing.T, name string, dims []int64) *ir.Graph {
	t.Helper()
	return linkLayers(t, blockModels[name], dims)
}

// linkLayers links one layer per pair of dims.
func linkLayers(t *testing.T, layer func(b *ir.Builder, in, out int64, last bool) int32, dims []int64) *ir.Graph {
	t.Helper()
	var layers []*ir.Graph
	in := dims[0]
	for l := 0; l < len(dims)-1; l++ {
		b := ir.NewBuilder()
		b.Output(layer(b, in, dims[l+1], l == len(dims)-2))
		g, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, g)
		in = g.Ops[g.Outputs[0]].Shape[1]
	}
	g, err := ir.Link(layers)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// blockOf builds the block whose destinations are dst and whose sources are
// dst followed by their other in-neighbours in g, with each edge's value
// taken from g (g's Values carry the full-graph normalisation weights).
func blockOf(g *graph.CSR, dst []int32) (*graph.CSR, []int32) {
	local := map[int32]int32{}
	src := slices.Clone(dst)
	for i, v := range dst {
		local[v] = int32(i)
	}
	b := &graph.CSR{NumRows: len(dst), Indptr: []int64{0}, Idx32: []int32{}, Values: []float32{}}
	for _, v := range dst {
		for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
			u := int32(g.Col(e))
			l, ok := local[u]
			if !ok {
				l = int32(len(src))
				local[u] = l
				src = append(src, u)
			}
			b.Idx32 = append(b.Idx32, l)
			b.Values = append(b.Values, g.Values[e])
		}
		b.Indptr = append(b.Indptr, int64(len(b.Idx32)))
	}
	b.NumCols = len(src)
	return b, src
}

type blockFixture struct {
	be             backend.Backend
	adj, adjSelf   *graph.CSR // with GCN weights as values
	mean, meanSelf *graph.CSR // with mean weights as values
	x              []float64
}

func newBlockFixture() *blockFixture { return randomBlockFixture(3, 40, 160) }

// randomBlockFixture is a random symmetric graph of n nodes from m drawn
// edges.
func randomBlockFixture(seed uint64, n, m int) *blockFixture {
	edges := [][2]int64{}
	r := newSplitMix(seed)
	for i := 0; i < m; i++ {
		edges = append(edges, [2]int64{int64(r.next() % uint64(n)), int64(r.next() % uint64(n))})
	}
	adj := graph.Symmetrize(graph.FromEdges(n, edges))
	f := &blockFixture{be: cpu.New(cpu.Options{Threads: 2})}
	withValues := func(g *graph.CSR, w []float32) *graph.CSR {
		c := *g
		c.Values = w
		return &c
	}
	self := graph.AddSelfLoops(adj)
	f.adj, f.adjSelf = withValues(adj, graph.GCNNorm(adj)), withValues(self, graph.GCNNorm(self))
	f.mean, f.meanSelf = withValues(adj, graph.MeanNorm(adj)), withValues(self, graph.MeanNorm(self))
	f.x = make([]float64, n*inDim)
	for i := range f.x {
		f.x[i] = r.normal()
	}
	return f
}

// bind uploads one layer's graphs: the GCN and mean weights of the same
// edges as edge weight tensors.
func (f *blockFixture) bind(t *testing.T, gcn, mean *graph.CSR, dt tensor.DType) *Graph {
	t.Helper()
	a, err := f.be.UploadGraph(gcn, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	e := []int{int(gcn.NNZ())}
	return &Graph{Adj: a, GCNNorm: upload64(t, f.be, toF64(gcn.Values), e, dt), MeanNorm: upload64(t, f.be, toF64(mean.Values), e, dt), Host: gcn}
}

func (f *blockFixture) rows(t *testing.T, ids []int32, dt tensor.DType) *tensor.Tensor {
	t.Helper()
	v := make([]float64, 0, len(ids)*inDim)
	for _, id := range ids {
		v = append(v, f.x[int(id)*inDim:(int(id)+1)*inDim]...)
	}
	return upload64(t, f.be, v, []int{len(ids), inDim}, dt)
}

// blockEnv builds the 2-layer blocks that compute seeds, as sampler.full
// would, with full-graph edge weights. A block's graphs share one source
// list: adj's (adj_self only adds each destination, already a source).
func (f *blockFixture) blockEnv(t *testing.T, seeds []int32, dt tensor.DType) Env {
	t.Helper()
	b1, s1 := blockOf(f.adj, seeds)
	b0, s0 := blockOf(f.adj, s1) // layer 0 computes every source of layer 1
	layer := func(dst, src []int32, b *graph.CSR) map[string]*Graph {
		return map[string]*Graph{
			"adj":      f.bind(t, b, relabel(t, f.mean, dst, src), dt),
			"adj_self": f.bind(t, relabel(t, f.adjSelf, dst, src), relabel(t, f.meanSelf, dst, src), dt),
		}
	}
	return Env{
		Backend: f.be, DType: dt, Tier: tensor.Host,
		Blocks:  []map[string]*Graph{layer(s1, s0, b0), layer(seeds, s1, b1)},
		NodeIDs: [][]int32{s0, s1},
		Input:   f.rows(t, s0, dt),
	}
}

// relabel builds the block of g for dst over a given source list.
func relabel(t *testing.T, g *graph.CSR, dst, src []int32) *graph.CSR {
	t.Helper()
	pos := map[int32]int32{}
	for i, v := range src {
		pos[v] = int32(i)
	}
	b := &graph.CSR{NumRows: len(dst), NumCols: len(src), Indptr: []int64{0}, Idx32: []int32{}, Values: []float32{}}
	for _, v := range dst {
		for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
			l, ok := pos[int32(g.Col(e))]
			if !ok {
				t.Fatalf("node %d reads %d, which is not a source", v, g.Col(e))
			}
			b.Idx32 = append(b.Idx32, l)
			b.Values = append(b.Values, g.Values[e])
		}
		b.Indptr = append(b.Indptr, int64(len(b.Idx32)))
	}
	return b
}

func (f *blockFixture) fullEnv(t *testing.T, dt tensor.DType) Env {
	all := make([]int32, f.adj.NumRows)
	for i := range all {
		all[i] = int32(i)
	}
	return Env{Backend: f.be, DType: dt, Tier: tensor.Host, Input: f.rows(t, all, dt),
		Graphs: map[string]*Graph{"adj": f.bind(t, f.adj, f.mean, dt), "adj_self": f.bind(t, f.adjSelf, f.meanSelf, dt)}}
}

// lossGrads runs forward, the loss over idx (rows of the output) and
// backward, and returns the loss.
func lossGrads(t *testing.T, p *Program, be backend.Backend, labels []int32, idx []int32, accumulate bool) float64 {
	t.Helper()
	ctx := context.Background()
	if err := p.Forward(ctx, Mode{Train: true, AccumulateGrads: accumulate}); err != nil {
		t.Fatal(err)
	}
	lt, _ := be.Alloc(tensor.Int32, []int{len(labels)}, tensor.Host)
	it, _ := be.Alloc(tensor.Int32, []int{len(idx)}, tensor.Host)
	defer be.Release(lt)
	defer be.Release(it)
	if err := be.Upload(lt, labels); err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(it, idx); err != nil {
		t.Fatal(err)
	}
	loss, err := be.SoftmaxCrossEntropy(p.Output(), lt, it, p.OutputGrad())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(ctx); err != nil {
		t.Fatal(err)
	}
	return loss
}

// TestBlocksMatchFullGraph checks, for every model, that a mini-batch
// program over full-neighbour blocks computes exactly the full-graph
// outputs of its seeds, and that micro-batches with accumulated gradients
// give the whole batch's gradient (float64, within tol64).
func TestBlocksMatchFullGraph(t *testing.T) {
	seeds := []int32{3, 17, 5, 22, 9, 31, 0, 12}
	for name := range blockModels {
		t.Run(name, func(t *testing.T) {
			g := linkModel(t, name, []int64{inDim, width, classes})
			narrows := blocksMatchFull(t, g, seeds)
			// GCN only aggregates; the others combine a layer's sources
			// with its destinations (root term, destination scores).
			if wantNarrow := name != "gcn"; (narrows > 0) != wantNarrow {
				t.Errorf("%d narrow ops in the block program, want some: %v", narrows, wantNarrow)
			}
		})
	}
}

// blocksMatchFull checks that a model bound to the blocks of seeds gives
// the full-graph program's outputs at the seeds, and that two
// micro-batches of blocks sum to the whole batch's gradients. It returns
// the number of narrow ops of the block program, and of ops that read the
// first rows of an operand (pushed narrows).
func blocksMatchFull(t *testing.T, g *ir.Graph, seeds []int32) int {
	t.Helper()
	const dt = tensor.Float64
	labelOf := func(v int32) int32 { return v % classes }
	narrows := 0
	f := newBlockFixture()
	full, err := Compile(g, f.fullEnv(t, dt), 11)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Release()
	ps := full.ParamSet()

	// Outputs.
	if err := full.Forward(context.Background(), Mode{}); err != nil {
		t.Fatal(err)
	}
	fullOut := download(t, &harness{prog: full}, full.Output())
	outCols := full.Output().Cols()
	mb, err := Bind(g, f.blockEnv(t, seeds, dt), ps)
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Release()
	for i, op := range mb.g.Ops {
		if op.Kind == opNarrow || mb.plan.prefix[i] {
			narrows++
		}
	}
	if err := mb.Forward(context.Background(), Mode{}); err != nil {
		t.Fatal(err)
	}
	got := download(t, &harness{prog: mb}, mb.Output())
	if len(got) != len(seeds)*outCols {
		t.Fatalf("block output has %d values, want %d", len(got), len(seeds)*outCols)
	}
	for i, s := range seeds {
		for c := 0; c < outCols; c++ {
			if d := math.Abs(got[i*outCols+c] - fullOut[int(s)*outCols+c]); d > tol64(g, f, fullOut[int(s)*outCols+c]) {
				t.Fatalf("seed %d column %d: block %g, full graph %g", s, c, got[i*outCols+c], fullOut[int(s)*outCols+c])
			}
		}
	}

	// Whole-batch gradient over the seeds, on the full graph.
	labels := make([]int32, f.adj.NumRows)
	for i := range labels {
		labels[i] = labelOf(int32(i))
	}
	lossGrads(t, full, f.be, labels, seeds, false)
	want, err := gradsOf(f.be, ps)
	if err != nil {
		t.Fatal(err)
	}

	// Two micro-batches, gradients scaled by their share and summed.
	if err := ps.ZeroGrads(); err != nil {
		t.Fatal(err)
	}
	for _, part := range [][]int32{seeds[:3], seeds[3:]} {
		env := f.blockEnv(t, part, dt)
		p, err := Bind(g, env, ps)
		if err != nil {
			t.Fatal(err)
		}
		lab := make([]int32, len(part))
		idx := make([]int32, len(part))
		for i, s := range part {
			lab[i], idx[i] = labelOf(s), int32(i)
		}
		// The loss is a mean over the micro-batch: weigh it by its share.
		if err := p.Forward(context.Background(), Mode{Train: true, AccumulateGrads: true}); err != nil {
			t.Fatal(err)
		}
		lt := upload32(t, f.be, lab)
		it := upload32(t, f.be, idx)
		if _, err := f.be.SoftmaxCrossEntropy(p.Output(), lt, it, p.OutputGrad()); err != nil {
			t.Fatal(err)
		}
		if err := f.be.Axpby(0, p.OutputGrad(), float64(len(part))/float64(len(seeds)), p.OutputGrad()); err != nil {
			t.Fatal(err)
		}
		if err := p.Backward(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.Release()
	}
	got2, err := gradsOf(f.be, ps)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		for i := range w {
			if d := math.Abs(got2[name][i] - w[i]); d > tol64(g, f, w[i]) {
				t.Fatalf("gradient %s[%d]: micro-batches %g, whole batch %g", name, i, got2[name][i], w[i])
			}
		}
	}
	return narrows
}

// tol64 bounds the difference of a value v of a block program and of the
// full-graph program (float64, the same sums in other orders and groups):
// 2γ_k of its magnitude, k bounding the roundings on any path (every op
// sums at most every node or edge of the fixture), the magnitude taken as
// 100·max(1, |v|) (order-one inputs, glorot parameters, two layers of
// normalised aggregations: terms cancel by far less than that).
func tol64(g *ir.Graph, f *blockFixture, v float64) float64 {
	k := len(g.Ops) * (int(f.adjSelf.NNZ()) + inDim + width + 2)
	return floattol.Orders(floattol.Gamma(k, floattol.UFloat64)) * 100 * math.Max(1, math.Abs(v))
}

func gradsOf(be backend.Backend, ps *Params) (map[string][]float64, error) {
	out := map[string][]float64{}
	for _, p := range ps.List() {
		v, err := downloadFloats(be, p.Grad)
		if err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	return out, nil
}

func upload32(t *testing.T, be backend.Backend, v []int32) *tensor.Tensor {
	t.Helper()
	tt, err := be.Alloc(tensor.Int32, []int{len(v)}, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(tt, v); err != nil {
		t.Fatal(err)
	}
	return tt
}
