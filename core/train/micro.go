package train

import (
	"context"
	"fmt"
	"math"
	"slices"

	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/partitioners"
	"strata/plugins/registry"
	"strata/plugins/sampler"
)

// microBatches splits every step into K micro-batches of training nodes, as
// Betty does: each micro-batch runs over the full-neighbour blocks of its
// nodes, the gradients of all of them accumulate into one optimizer step,
// and peak memory is that of the largest micro-batch, not of the graph.
//
// The step's gradient equals the full-graph gradient: every micro-batch's
// mean loss is weighed by its share of the training nodes, and block edges
// carry the full graph's normalisation weights. (Dropout draws differ, and
// batch norm sees each micro-batch's statistics.)
type microBatches struct {
	e       stepEnv
	ps      *engine.Params
	layers  []map[string]bool // the graph names each layer reads
	train   [][]int32         // micro-batches of training nodes, ascending
	eval    [][]int32         // chunks of all nodes, for prediction
	total   int               // training nodes
	isqBase []float64         // 1/sqrt(row length) of adj, for GCN weights
	isqSelf []float64         // the same for adj_self
	hops    *sampler.Full
	inputs  []int // input rows (block 0 sources) per micro-batch, last step
	// wholeInputs is the input rows of the whole batch (all training
	// nodes at once), the denominator of the redundancy.
	wholeInputs int
}

// redundancy returns Betty's redundancy of the last step: the micro-batches'
// input rows summed, over the whole batch's.
func (m *microBatches) redundancy() float64 {
	s := 0
	for _, n := range m.inputs {
		s += n
	}
	return float64(s) / float64(m.wholeInputs)
}

func newMicroBatches(ctx context.Context, cfg *config.Config, e stepEnv) (*microBatches, error) {
	k := cfg.Train.MicroBatches
	train := e.ds.Train
	if k > len(train) {
		return nil, cfg.KeyError(fmt.Sprintf("train.micro_batches = %d is more than the %d training nodes", k, len(train)), "train", "micro_batches")
	}
	if cfg.Partition.Name == "" {
		return nil, cfg.KeyError(fmt.Sprintf("train.micro_batches = %d needs a partitioner to split the training nodes: add [partition] with name = \"betty-reg\" (or %s)",
			k, registry.QuoteList(partitionerNames())), "train", "micro_batches")
	}
	part, ok := cfg.Partition.Module.(partitioners.Partitioner)
	if !ok {
		return nil, fmt.Errorf("partition.name = %q is not a partitioner", cfg.Partition.Name)
	}
	if err := registry.Provision(ctx, cfg.Partition.Module); err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	m := &microBatches{e: e, total: len(train), hops: &sampler.Full{Layers: 1}}
	for _, op := range e.model.Ops {
		for int(op.Layer) >= len(m.layers) {
			m.layers = append(m.layers, map[string]bool{})
		}
		if op.Kind == "graph" {
			m.layers[op.Layer][op.Name] = true
		}
	}
	m.isqBase, m.isqSelf = invSqrtRowLengths(e.adjs.adj, 0), invSqrtRowLengths(e.adjs.adj, 1)

	// Split the training nodes by their last-layer block: rows are the
	// training nodes, columns the nodes they read.
	blocks, err := m.hops.Sample(ctx, e.adjs.adj, train, 0)
	if err != nil {
		return nil, err
	}
	parts, err := part.Partition(ctx, blocks[0].Adj, k, nil)
	if err != nil {
		return nil, fmt.Errorf("partition: splitting %d training nodes into %d micro-batches: %w", len(train), k, err)
	}
	m.train = make([][]int32, k)
	for i, p := range parts {
		m.train[p] = append(m.train[p], train[i])
	}
	for i, mb := range m.train {
		if len(mb) == 0 {
			return nil, fmt.Errorf("partition: %s left micro-batch %d of %d empty", cfg.Partition.ID, i, k)
		}
		slices.Sort(mb)
	}
	// Evaluation reads every node: it runs in twice as many chunks, bound
	// for inference (no gradients), so it fits wherever training does.
	n, chunks := e.ds.NumNodes, min(2*k, e.ds.NumNodes)
	for c := 0; c < chunks; c++ {
		lo, hi := c*n/chunks, (c+1)*n/chunks
		ids := make([]int32, hi-lo)
		for i := range ids {
			ids[i] = int32(lo + i)
		}
		m.eval = append(m.eval, ids)
	}
	m.hops = &sampler.Full{Layers: len(m.layers)}
	whole, err := m.hops.Sample(ctx, e.adjs.adj, train, 0)
	if err != nil {
		return nil, err
	}
	m.wholeInputs = len(whole[0].Src)
	if m.ps, err = engine.NewParams(e.model, e.be, e.dt, e.tier, e.seed); err != nil {
		return nil, err
	}
	return m, nil
}

func partitionerNames() []string {
	var out []string
	for _, mi := range registry.Namespace("partitioner") {
		out = append(out, mi.Name())
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

// microProgram is one micro-batch bound for execution, with what it
// uploaded.
type microProgram struct {
	prog    *engine.Program
	tensors []*tensor.Tensor
	graphs  []*engine.Graph
}

// bind uploads the blocks that compute nodes and binds the model to them
// (for evaluation only when infer is set).
func (m *microBatches) bind(ctx context.Context, nodes []int32, infer bool) (*microProgram, error) {
	e := m.e
	blocks, err := m.hops.Sample(ctx, e.adjs.adj, nodes, 0)
	if err != nil {
		return nil, err
	}
	mp := &microProgram{}
	fail := func(err error) (*microProgram, error) {
		mp.release(e)
		return nil, err
	}
	env := engine.Env{Backend: e.be, DType: e.dt, Tier: e.tier, Blocks: make([]map[string]*engine.Graph, len(blocks)), Inference: infer}
	for l, b := range blocks {
		env.Blocks[l] = map[string]*engine.Graph{}
		for name := range m.layers[l] {
			adj, isq := b.Adj, m.isqBase
			if name == "adj_self" {
				adj, isq = withLocalSelfLoops(b.Adj), m.isqSelf
			}
			eg, err := m.upload(mp, adj, b, isq)
			if err != nil {
				return fail(fmt.Errorf("block %d %s: %w", l, name, err))
			}
			env.Blocks[l][name] = eg
		}
	}
	src := blocks[0].Src
	x := make([]float32, 0, len(src)*e.dim)
	for _, v := range src {
		x = append(x, e.feats[int(v)*e.dim:(int(v)+1)*e.dim]...)
	}
	if env.Input, err = uploadFloat32s(e.be, x, []int{len(src), e.dim}, e.dt, e.tier); err != nil {
		return fail(err)
	}
	mp.tensors = append(mp.tensors, env.Input)
	if mp.prog, err = engine.Bind(e.model, env, m.ps); err != nil {
		return fail(err)
	}
	return mp, nil
}

// upload places one block graph with its GCN weights (from the full
// graph's degrees) and mean weights (from the block's rows).
func (m *microBatches) upload(mp *microProgram, adj *graph.CSR, b sampler.Block, isq []float64) (*engine.Graph, error) {
	e := m.e
	a, err := e.be.UploadGraph(adj, e.tier)
	if err != nil {
		return nil, err
	}
	eg := &engine.Graph{Adj: a}
	mp.graphs = append(mp.graphs, eg)
	gcn := make([]float32, adj.NNZ())
	for r := 0; r < adj.NumRows; r++ {
		for k := adj.Indptr[r]; k < adj.Indptr[r+1]; k++ {
			gcn[k] = float32(isq[b.Dst[r]] * isq[b.Src[adj.Col(k)]])
		}
	}
	for _, w := range []struct {
		v   []float32
		dst **tensor.Tensor
	}{{gcn, &eg.GCNNorm}, {graph.MeanNorm(adj), &eg.MeanNorm}} {
		t, err := uploadFloat32s(e.be, w.v, []int{len(w.v)}, e.dt, e.tier)
		if err != nil {
			return nil, err
		}
		mp.tensors = append(mp.tensors, t)
		*w.dst = t
	}
	return eg, nil
}

func (mp *microProgram) release(e stepEnv) {
	if mp.prog != nil {
		mp.prog.Release()
	}
	for _, t := range mp.tensors {
		e.be.Release(t)
	}
	for _, g := range mp.graphs {
		e.be.ReleaseGraph(g.Adj)
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

func (m *microBatches) gradients(ctx context.Context, seed uint64) (float64, error) {
	e := m.e
	if err := m.ps.ZeroGrads(); err != nil {
		return 0, err
	}
	m.inputs = m.inputs[:0]
	var loss float64
	for i, nodes := range m.train {
		mp, err := m.bind(ctx, nodes, false)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		l, err := m.run(ctx, mp, nodes, seed^uint64(i+1)*0x9e3779b97f4a7c15)
		m.inputs = append(m.inputs, mp.prog.InputRows())
		mp.release(e)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		loss += l
	}
	return loss, nil
}

// run does forward, the micro-batch's share of the loss and backward, and
// returns that share.
func (m *microBatches) run(ctx context.Context, mp *microProgram, nodes []int32, seed uint64) (float64, error) {
	e, p := m.e, mp.prog
	if err := p.Forward(ctx, engine.Mode{Train: true, Seed: seed, AccumulateGrads: true}); err != nil {
		return 0, err
	}
	labels := make([]int32, len(nodes))
	rows := make([]int32, len(nodes))
	for i, v := range nodes {
		labels[i], rows[i] = e.ds.Labels[v], int32(i)
	}
	lt, err := uploadInt32s(e.be, labels, e.tier)
	if err != nil {
		return 0, err
	}
	defer e.be.Release(lt)
	it, err := uploadInt32s(e.be, rows, e.tier)
	if err != nil {
		return 0, err
	}
	defer e.be.Release(it)
	loss, err := e.be.SoftmaxCrossEntropy(p.Output(), lt, it, p.OutputGrad())
	if err != nil {
		return 0, fmt.Errorf("loss: %w", err)
	}
	share := float64(len(nodes)) / float64(m.total)
	if err := e.be.Axpby(0, p.OutputGrad(), share, p.OutputGrad()); err != nil {
		return 0, err
	}
	return loss * share, p.Backward(ctx)
}

func (m *microBatches) predict(ctx context.Context, pred []int32) error {
	for _, nodes := range m.eval {
		mp, err := m.bind(ctx, nodes, true)
		if err != nil {
			return err
		}
		err = mp.prog.Forward(ctx, engine.Mode{})
		if err == nil {
			err = argmaxInto(m.e.be, mp.prog.Output(), pred[nodes[0]:nodes[0]+int32(len(nodes))])
		}
		mp.release(m.e)
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *microBatches) params() *engine.Params { return m.ps }

func (m *microBatches) release() { m.ps.Release() }
