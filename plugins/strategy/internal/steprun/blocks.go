package steprun

import (
	"context"
	"fmt"
	"math"
	"slices"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/sampling"
	"strata/core/tensor"
	"strata/core/train"
)

// Runner runs the model over message-flow blocks: the shared machinery
// of micro-batch and mini-batch training and of chunked evaluation.
//
// Block edges carry GCN weights from the full graph's degrees and mean
// weights from the block's own rows (a sampled neighbourhood's mean).
type Runner struct {
	Env     Env
	PS      *engine.Params
	Layers  []map[string]bool // the graph names each layer reads
	IsqBase []float64         // 1/sqrt(row length) of adj, for GCN weights
	IsqSelf []float64         // the same for adj_self
	// Degree is every row's length (weighted: its weight sum) of adj,
	// for the GCN weights of blocks with excluded edges.
	Degree []float64
	Full   sampling.Full // every neighbour, for evaluation
	Eval   [][]int32     // chunks of all nodes, for prediction
	lw     *layerwise    // layer-wise evaluation (EnableLayerwise); nil: chunks over L-hop blocks
}

func NewRunner(e Env, evalChunks int) (*Runner, error) {
	r := &Runner{Env: e}
	for _, op := range e.Model.Ops {
		for int(op.Layer) >= len(r.Layers) {
			r.Layers = append(r.Layers, map[string]bool{})
		}
		if op.Kind == "graph" {
			r.Layers[op.Layer][op.Name] = true
		}
	}
	r.Full = sampling.Full{Hops: len(r.Layers)}
	r.IsqBase, r.IsqSelf = invSqrtRowLengths(e.Adjs.Adj, 0), invSqrtRowLengths(e.Adjs.Adj, 1)
	r.Degree = graph.RowWeightSums(e.Adjs.Adj)
	if e.Adjs.Adj.Values != nil {
		r.IsqBase, r.IsqSelf = weightedIsq(e.Adjs.Adj), nil
		if e.Adjs.AdjSelf != nil { // built when the model reads adj_self (train.BuildModelAdjacencies)
			r.IsqSelf = weightedIsq(e.Adjs.AdjSelf)
		}
	}
	r.Eval = EvalChunkList(e.DS.NumNodes, evalChunks)
	var err error
	r.PS, err = engine.NewParams(e.Model, backend.ForPurpose(e.Be, backend.PurposeParameters), e.DT, e.Tier, e.Seed)
	return r, err
}

// EvalChunkList splits the nodes [0, n) into chunks contiguous ranges of
// about equal size (at least 1, at most n).
func EvalChunkList(n, chunks int) [][]int32 {
	chunks = max(1, min(chunks, n))
	out := make([][]int32, 0, chunks)
	for c := 0; c < chunks; c++ {
		out = append(out, Iota32From(c*n/chunks, (c+1)*n/chunks))
	}
	return out
}

// invSqrtRowLengths returns 1/sqrt(row length + extra) per row (0 for an
// empty row), the GCN normalisation of g (extra=0) or of g with self loops
// (extra=1).
func invSqrtRowLengths(g *graph.CSR, extra int64) []float64 {
	out := make([]float64, g.NumRows)
	for r := range out {
		if d := g.Indptr[r+1] - g.Indptr[r] + extra; d > 0 {
			out[r] = 1 / math.Sqrt(float64(d))
		}
	}
	return out
}

// Bound is one batch bound for execution, with what it uploaded.
type Bound struct {
	Prog    *engine.Program
	Tensors []*tensor.Tensor
	Graphs  []*engine.Graph
}

// Bind uploads blocks and the features of their inputs and binds the model
// to them; infer binds for evaluation only. The features are input (a
// tensor already on the device, which bind then owns), or x, or when both
// are nil gathered from the host.
func (r *Runner) Bind(blocks []sampling.Block, x FeatRows, input *tensor.Tensor, infer bool) (*Bound, error) {
	if len(blocks) != len(r.Layers) {
		return nil, fmt.Errorf("%d blocks for a %d-layer model", len(blocks), len(r.Layers))
	}
	return r.bind(r.Env.Model, 0, blocks, x, input, infer)
}

// bind binds g, the model's layers from first on, to blocks (block l for
// layer first+l), with its input as Bind says.
func (r *Runner) bind(g *ir.Graph, first int, blocks []sampling.Block, x FeatRows, input *tensor.Tensor, infer bool) (*Bound, error) {
	e := r.Env
	bb := &Bound{}
	if input != nil {
		bb.Tensors = append(bb.Tensors, input) // owned from here: released on failure
	}
	fail := func(err error) (*Bound, error) {
		bb.Release(e)
		return nil, err
	}
	env := engine.Env{Backend: e.Be, DType: e.DT, Tier: e.Tier, Blocks: make([]map[string]*engine.Graph, len(blocks)),
		NodeIDs: make([][]int32, len(blocks)), Inference: infer}
	for l, b := range blocks {
		env.NodeIDs[l] = b.Src
		w, err := r.blockWeights(b)
		if err == nil {
			env.Blocks[l], err = r.uploadGraphs(bb, first+l, b, func(name string) (*graph.CSR, []float32) { return blockGraph(b, name, w) }, nil)
		}
		if err != nil {
			return fail(fmt.Errorf("block %d: %w", l, err))
		}
	}
	src := blocks[0].Src
	var err error
	if input != nil {
		env.Input = input
	} else {
		if x.empty() {
			if x, err = e.GatherInput(src); err != nil {
				return fail(err)
			}
		}
		if x.entries != nil {
			if bb.Prog, err = r.bindEntries(bb, g, env, x.entries); err != nil {
				return fail(err)
			}
			return bb, nil
		}
		if env.Input, err = uploadRows(backend.ForPurpose(e.Be, backend.PurposeFeatures), x, e.Half, []int{len(src), e.Dim}, e.DT, e.Tier); err != nil {
			return fail(err)
		}
		bb.Tensors = append(bb.Tensors, env.Input)
	}
	if bb.Prog, err = engine.Bind(g, env, r.PS); err != nil {
		return fail(err)
	}
	return bb, nil
}

// uploadGraphs uploads the graphs layer l reads in block b, each as
// graphOf gives it (its adjacency and the edge weights of its entries),
// with the GCN and mean weights of the reducers that reducers names for
// it (train.GraphReducers; nil: both).
func (r *Runner) uploadGraphs(bb *Bound, l int, b sampling.Block, graphOf func(name string) (*graph.CSR, []float32), reducers map[string]map[string]bool) (map[string]*engine.Graph, error) {
	out := map[string]*engine.Graph{}
	for name := range r.Layers[l] {
		adj, ew := graphOf(name)
		need := normWeights{gcn: reducers == nil || reducers[name]["gcn"], mean: reducers == nil || reducers[name]["mean"]}
		eg, err := r.upload(bb, adj, ew, b, r.GCNScale(b, name == "adj_self"), need)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = eg
	}
	return out, nil
}

// GatherRows copies the rows of ids from a row-major matrix of dim
// columns (feature rows, or a layer's rows for a halo exchange).
func GatherRows[T float32 | float64 | uint16](feats []T, dim int, ids []int32) []T {
	x := make([]T, 0, len(ids)*dim)
	for _, v := range ids {
		x = append(x, feats[int(v)*dim:(int(v)+1)*dim]...)
	}
	return x
}

// GCNScale returns GCN's 1/sqrt(degree) of a node for block b, with self
// loops (adj_self) or without: the graph's, or for a node that lost
// in-edges in b (Block.Excluded), that of the graph without them.
func (r *Runner) GCNScale(b sampling.Block, self bool) func(int32) float64 {
	isq, loop := r.IsqBase, 0.0
	if self {
		isq, loop = r.IsqSelf, 1
	}
	if b.Excluded == nil {
		return func(v int32) float64 { return isq[v] }
	}
	return func(v int32) float64 {
		lost, ok := b.Excluded[v]
		if !ok {
			return isq[v]
		}
		if d := r.Degree[v] - lost + loop; d > 0 {
			return 1 / math.Sqrt(d)
		}
		return 0
	}
}

// normWeights says which edge weights a graph's aggregations read.
type normWeights struct{ gcn, mean bool }

// upload places one block graph with the GCN and mean weights need
// names, scaled by the edge weights ew of its entries (nil: none).
func (r *Runner) upload(bb *Bound, adj *graph.CSR, ew []float32, b sampling.Block, isq func(int32) float64, need normWeights) (*engine.Graph, error) {
	e := r.Env
	be := backend.ForPurpose(e.Be, backend.PurposeTopology)
	a, err := be.UploadGraph(adj, e.Tier)
	if err != nil {
		return nil, err
	}
	eg := &engine.Graph{Adj: a, Host: adj}
	bb.Graphs = append(bb.Graphs, eg)
	if engine.UsesEdgeIndex(e.Model) {
		if eg.Edges, err = engine.BindEdgeIndex(be, adj, e.DT, e.Tier); err != nil {
			return nil, err
		}
	}
	type weights struct {
		v   []float32
		dst **tensor.Tensor
	}
	var ws []weights
	if need.gcn {
		ws = append(ws, weights{gcnWeights(adj, ew, b, isq), &eg.GCNNorm})
	}
	if need.mean {
		mean := adj.Unweighted() // the sampled neighbours' mean, not the sampler's values
		mean.Values = ew
		ws = append(ws, weights{graph.MeanNorm(mean), &eg.MeanNorm})
	}
	for _, w := range ws {
		t, err := train.UploadFloat32s(be, w.v, []int{len(w.v)}, e.DT, e.Tier)
		if err != nil {
			return nil, err
		}
		bb.Tensors = append(bb.Tensors, t)
		*w.dst = t
	}
	return eg, nil
}

// gcnWeights returns the GCN weight of every entry of block b's graph
// adj, scaled by the edge weights ew (nil: none): every node's scale
// once, then per entry two indexed reads.
func gcnWeights(adj *graph.CSR, ew []float32, b sampling.Block, isq func(int32) float64) []float32 {
	dst, src := nodeScales(b.Dst, isq), nodeScales(b.Src, isq)
	gcn := make([]float32, adj.NNZ())
	for row := 0; row < adj.NumRows; row++ {
		for k := adj.Indptr[row]; k < adj.Indptr[row+1]; k++ {
			w := 1.0
			if ew != nil {
				w = float64(ew[k])
			}
			gcn[k] = float32(w * dst[row] * src[adj.Col(k)])
		}
	}
	return gcn
}

// nodeScales returns isq of every node of ids, in order.
func nodeScales(ids []int32, isq func(int32) float64) []float64 {
	out := make([]float64, len(ids))
	for i, v := range ids {
		out[i] = isq(v)
	}
	return out
}

func (bb *Bound) Release(e Env) {
	if bb == nil {
		return
	}
	if bb.Prog != nil {
		bb.Prog.Release()
	}
	for _, t := range bb.Tensors {
		e.Be.Release(t)
	}
	for _, g := range bb.Graphs {
		e.Be.ReleaseGraph(g.Adj)
		g.Edges.Release(e.Be)
	}
}

// withLocalSelfLoops adds the self loop of every destination: destination
// i is source i (the block convention). Rows stay sorted by local id.
func withLocalSelfLoops(a *graph.CSR) *graph.CSR {
	out := &graph.CSR{NumRows: a.NumRows, NumCols: a.NumCols, Indptr: make([]int64, a.NumRows+1), Idx32: make([]int32, 0, a.NNZ()+int64(a.NumRows))}
	for r := 0; r < a.NumRows; r++ {
		row := make([]int32, 0, a.Indptr[r+1]-a.Indptr[r]+1)
		self := false
		for k := a.Indptr[r]; k < a.Indptr[r+1]; k++ {
			c := int32(a.Col(k))
			self = self || int(c) == r
			row = append(row, c)
		}
		if !self {
			row = append(row, int32(r))
		}
		slices.Sort(row)
		out.Idx32 = append(out.Idx32, row...)
		out.Indptr[r+1] = int64(len(out.Idx32))
	}
	return out
}

// TrainBatch runs forward, the batch's loss weighed by share, and backward
// (accumulating into the parameter gradients when accumulate is set). The
// last block's destinations are the batch's nodes. It returns the weighed
// loss.
func (r *Runner) TrainBatch(ctx context.Context, bb *Bound, nodes []int32, seed uint64, share float64, accumulate bool) (float64, error) {
	e, p := r.Env, bb.Prog
	if err := p.Forward(ctx, engine.Mode{Train: true, Seed: seed, AccumulateGrads: accumulate}); err != nil {
		return 0, err
	}
	rows := make([]int32, len(nodes))
	for i := range nodes {
		rows[i] = int32(i)
	}
	loss, err := WeighedLoss(e.Be, p, e.DS, nodes, rows, e.Tier, share)
	if err != nil {
		return 0, err
	}
	return loss, p.Backward(ctx)
}

// WeighedLoss computes the loss of ds's kind (train.Loss) of p's output
// rows rows against the targets of nodes (the node of each output row),
// leaves its gradient, weighed by share, in p.OutputGrad() and returns
// the loss weighed by share.
func WeighedLoss(be backend.Backend, p *engine.Program, ds *graph.Dataset, nodes, rows []int32, tier tensor.Tier, share float64) (float64, error) {
	lb := backend.ForPurpose(be, backend.PurposeLabels)
	lt, err := train.UploadTargets(lb, ds, nodes, p.Output().DType(), tier)
	if err != nil {
		return 0, err
	}
	defer be.Release(lt)
	it, err := train.UploadInt32s(lb, rows, tier)
	if err != nil {
		return 0, err
	}
	defer be.Release(it)
	loss, err := train.Loss(be, ds.Kind, p.Output(), lt, it, p.OutputGrad())
	if err != nil {
		return 0, err
	}
	if share != 1 {
		if err := be.Axpby(0, p.OutputGrad(), share, p.OutputGrad()); err != nil {
			return 0, err
		}
	}
	return loss * share, nil
}

// Predict writes the class of every node, chunk by chunk over full
// neighbourhoods, with programs bound for inference.
func (r *Runner) Predict(ctx context.Context, pred []int32) error {
	return r.PredictScores(ctx, pred, nil, nil)
}

// PredictScores implements train.Scorer: Predict, keeping the logits of
// rows from each chunk's forward pass (none are downloaded without rows).
func (r *Runner) PredictScores(ctx context.Context, pred, rows []int32, logits []float64) error {
	if r.lw != nil {
		return r.layerwiseForward(ctx, func(nodes []int32, out *tensor.Tensor) error {
			return r.keepScores(nodes, out, pred, rows, logits)
		})
	}
	for _, nodes := range r.Eval {
		blocks, err := r.Full.Sample(ctx, r.Env.Adjs.Adj, nodes, 0)
		if err != nil {
			return err
		}
		bb, err := r.Bind(blocks, FeatRows{}, nil, true)
		if err != nil {
			return err
		}
		err = bb.Prog.Forward(ctx, engine.Mode{})
		if err == nil {
			err = r.keepScores(nodes, bb.Prog.Output(), pred, rows, logits)
		}
		bb.Release(r.Env)
		if err != nil {
			return err
		}
	}
	return nil
}

// keepScores writes the classes of a chunk of nodes (a contiguous range)
// from its output rows into pred, and the logits of rows into logits.
func (r *Runner) keepScores(nodes []int32, out *tensor.Tensor, pred, rows []int32, logits []float64) error {
	if err := train.ArgmaxInto(r.Env.Be, out, pred[nodes[0]:nodes[0]+int32(len(nodes))]); err != nil || len(rows) == 0 {
		return err
	}
	vals, err := engine.PeekFloats(r.Env.Be, out) // an observation: uncounted
	if err == nil {
		train.CopyScoreRows(vals, int(nodes[0]), len(nodes), r.Env.DS.NumClasses, rows, logits)
	}
	return err
}

// PredictOutputs implements train.OutputPredictor for the block-based
// strategies (micro-batches embed the runner; mini-batches delegate): it
// runs the same full-neighbourhood chunks as predict and keeps, per
// chunk, the output rows and the last hidden layer's rows of the chunk's
// nodes (the first sources of the last block are its destinations).
func (r *Runner) PredictOutputs(ctx context.Context) (logits, hidden []float64, width int, err error) {
	lastHidden, hasHidden := r.Env.Model.LastHidden()
	logits = make([]float64, r.Env.DS.NumNodes*r.outputWidth())
	for _, nodes := range r.Eval {
		blocks, err := r.Full.Sample(ctx, r.Env.Adjs.Adj, nodes, 0)
		if err != nil {
			return nil, nil, 0, err
		}
		bb, err := r.Bind(blocks, FeatRows{}, nil, true)
		if err != nil {
			return nil, nil, 0, err
		}
		err = r.chunkOutputs(ctx, bb, nodes, logits, &hidden, &width, lastHidden, hasHidden)
		bb.Release(r.Env)
		if err != nil {
			return nil, nil, 0, err
		}
	}
	return logits, hidden, width, nil
}

// chunkOutputs runs one bound chunk forward and copies its nodes' output
// and last hidden rows into logits and *hidden (allocated at the first
// chunk, when the hidden width is known).
func (r *Runner) chunkOutputs(ctx context.Context, bb *Bound, nodes []int32, logits []float64, hidden *[]float64, width *int, h int32, hasHidden bool) error {
	if err := bb.Prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	out, err := engine.DownloadFloats(r.Env.Be, bb.Prog.Output())
	if err != nil {
		return err
	}
	classes, first := r.outputWidth(), int(nodes[0])
	copy(logits[first*classes:], out[:len(nodes)*classes])
	if !hasHidden {
		return nil
	}
	t := bb.Prog.Value(h)
	vals, err := engine.DownloadFloats(r.Env.Be, t)
	if err != nil {
		return err
	}
	w := t.Shape()[len(t.Shape())-1]
	if *hidden == nil {
		*hidden, *width = make([]float64, r.Env.DS.NumNodes*w), w
	}
	copy((*hidden)[first*w:], vals[:len(nodes)*w])
	return nil
}

// outputWidth is the model's output width: the classes, or a link
// task's embedding width.
func (r *Runner) outputWidth() int {
	m := r.Env.Model
	return int(m.Ops[m.Outputs[0]].Shape[1])
}

func (r *Runner) Params() *engine.Params { return r.PS }

func (r *Runner) Release() { r.PS.Release() }
