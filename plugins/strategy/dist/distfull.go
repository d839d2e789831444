package dist

import (
	"context"
	"fmt"
	"slices"
	"time"

	"strata/core/backend"
	"strata/core/comm"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/chunkplan"
	"strata/plugins/strategy/internal/steprun"
)

// DistFull is strategy.distfull: distributed full-graph training over the
// ranks of an MPI job, layer by layer. Each rank owns a partition's nodes
// (their in-edges and feature rows) and computes, at every layer, the
// output rows of its own nodes only. Before each layer it receives, by
// all-to-all-v, the rows of that layer's input that its nodes' in-edges
// read and other ranks own (its 1-hop halo), and sends the rows of its
// own nodes that the other ranks' halos hold; in backward each rank sends
// the gradients of its halo rows back to their owners, which add them to
// their own in rank order. The parameter gradients are all-reduced: one
// optimizer step per epoch, the gradient of strategy.fullgraph. The
// layers run one at a time (ir.Graph.SplitLayers), as in
// strategy.chunked: HongTu's chunk machinery with one chunk per rank.
type DistFull struct{}

var (
	_ train.Strategy   = (*DistFull)(nil)
	_ comm.Distributed = (*DistFull)(nil)
)

// StrataModule implements registry.Module.
func (*DistFull) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.distfull", New: func() registry.Module { return new(DistFull) },
		Doc: "distributed full-graph training over MPI ranks: a METIS partition per rank, each layer's 1-hop halo rows (forward) and their gradients (backward) by all-to-all-v, all-reduced parameter gradients (docs/distributed.md)"}
}

// Distributed implements comm.Distributed.
func (*DistFull) Distributed() {}

// Uses implements train.Strategy.
func (*DistFull) Uses() train.Uses {
	return train.Uses{RankPartition: true, Float64: true, Checkpoints: true}
}

// NewStepper implements train.Strategy.
func (*DistFull) NewStepper(ctx context.Context, env *train.Env) (train.Stepper, error) {
	e := steprun.EnvOf(env)
	layers, err := splitForRanks(env.Config, e.Model)
	if err != nil {
		return nil, err
	}
	d, err := newDistRank(ctx, env.Config, e, sampling.Full{Hops: len(layers)})
	if err != nil {
		return nil, err
	}
	lr, err := newLayerRank(ctx, d, layers)
	if err != nil {
		d.Release()
		return nil, err
	}
	d.predicted = lr.predictedBytes(haloRows(e.Adjs.Adj, d.owner, d.c.Rank(), d.c.Size()))
	return &distFull{lr}, nil
}

// distFull is a rank of strategy.distfull.
type distFull struct{ *layerRank }

var _ train.ResultReporter = (*distFull)(nil)

// layerRank runs a model layer by layer over a rank's own nodes (a
// distRank's partition): before each layer the rank receives the rows of
// that layer's input that its nodes' in-edges read and other ranks own
// (its 1-hop halo), and sends its own rows that the other ranks' halos
// hold; in backward the halo rows' gradients go back to their owners.
// strategy.distfull trains this way, and strategy.distmini predicts this
// way (full neighbourhoods, one hop of rows at a time).
type layerRank struct {
	*distRank
	layers []*ir.Graph       // the model, one graph per layer
	used   []map[string]bool // the graphs each layer reads
	widths []int             // widths[l]: layer l's input; widths[L]: the classes
	// src are the rows a layer reads: the rank's own nodes first (in
	// owned order, so local row i is owned[me][i]), then the halo.
	src    []int32
	graphs map[string]*chunkplan.Graph // the own rows' in-edges, in local ids
	// halo[j] are the positions in src of the halo rows rank j owns;
	// serve[j] the rows (into the own nodes) of the nodes rank j's halo
	// holds, in the order rank j lists them.
	halo, serve [][]int32
	trainRows   []int32 // own rows of the training nodes
	nodes       []int32 // the global ids of the own rows
}

// splitForRanks splits the model into its layers for layerRank: batch
// normalisation would normalise each rank's rows apart, and a model that
// is not a chain of layers cannot be split.
func splitForRanks(cfg *config.Config, model *ir.Graph) ([]*ir.Graph, error) {
	for _, op := range model.Ops {
		if op.Kind == ir.OpBatchNorm {
			return nil, cfg.KeyError("model.options.batchnorm: distfull normalises each rank's rows apart, which is not the whole graph's batch statistics; remove batchnorm or use train.mode = \"fullgraph\"", "model", "options", "batchnorm")
		}
	}
	layers, err := model.SplitLayers()
	if err != nil {
		return nil, fmt.Errorf("the ranks run the model layer by layer: %w", err)
	}
	return layers, nil
}

// newLayerRank plans d's layers (a collective: the ranks tell each other
// their halos).
func newLayerRank(ctx context.Context, d *distRank, layers []*ir.Graph) (*layerRank, error) {
	if len(d.owned[d.c.Rank()]) == 0 {
		return nil, fmt.Errorf("rank %d of %d owns no node of the %d-node graph (%s); run fewer ranks", d.c.Rank(), d.c.Size(), d.e.DS.NumNodes, d.part)
	}
	f := &layerRank{distRank: d, layers: layers, used: steprun.GraphsPerLayer(d.e.Model)}
	for _, lg := range layers {
		f.widths = append(f.widths, int(lg.Ops[0].Shape[1]))
	}
	f.widths = append(f.widths, int(d.e.Model.Ops[d.e.Model.Outputs[0]].Shape[1]))
	if err := f.plan(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// plan builds the rank's layer graph (its nodes' in-edges, with the whole
// graph's GCN and mean weights) and its halo, and tells every owner which
// of its rows this rank's halo holds (one all-to-all-v, before training).
func (f *layerRank) plan(ctx context.Context) error {
	me := f.c.Rank()
	mine := f.owned[me]
	f.src, f.nodes = slices.Clone(mine), mine
	local := make(map[int32]int32) // halo node -> local id
	f.halo = make([][]int32, f.c.Size())
	for _, u := range f.topo.Idx32 {
		if f.owner[u] == int32(me) {
			continue
		}
		if _, ok := local[u]; !ok {
			local[u] = int32(len(f.src))
			f.halo[f.owner[u]] = append(f.halo[f.owner[u]], int32(len(f.src)))
			f.src = append(f.src, u)
		}
	}
	lid := func(u int32) int32 {
		if f.owner[u] == int32(me) {
			return f.row[u]
		}
		return local[u]
	}
	f.graphs = map[string]*chunkplan.Graph{}
	for _, used := range f.used {
		for name := range used {
			if f.graphs[name] != nil {
				continue
			}
			isq := f.r.IsqBase
			if name == "adj_self" {
				isq = f.r.IsqSelf
			}
			csr := &graph.CSR{NumRows: len(mine), NumCols: len(f.src), Indptr: make([]int64, len(mine)+1), Idx32: make([]int32, 0, len(f.topo.Idx32))}
			for i := range mine {
				start := len(csr.Idx32)
				for k := f.topo.Indptr[i]; k < f.topo.Indptr[i+1]; k++ {
					csr.Idx32 = append(csr.Idx32, lid(f.topo.Idx32[k]))
				}
				if name == "adj_self" && !slices.Contains(csr.Idx32[start:], int32(i)) {
					csr.Idx32 = append(csr.Idx32, int32(i))
					slices.Sort(csr.Idx32[start:])
				}
				csr.Indptr[i+1] = int64(len(csr.Idx32))
			}
			cg := &chunkplan.Graph{Csr: csr, Gcn: make([]float32, len(csr.Idx32)), Mean: graph.MeanNorm(csr)}
			for i, v := range mine {
				for k := csr.Indptr[i]; k < csr.Indptr[i+1]; k++ {
					cg.Gcn[k] = float32(isq[v] * isq[f.src[csr.Idx32[k]]])
				}
			}
			f.graphs[name] = cg
		}
	}
	isTrain := map[int32]bool{}
	for _, v := range f.e.DS.Train {
		isTrain[v] = true
	}
	for i, v := range mine {
		if isTrain[v] {
			f.trainRows = append(f.trainRows, int32(i))
		}
	}
	send := make([][]byte, f.c.Size())
	for j, pos := range f.halo {
		ids := make([]int32, len(pos))
		for i, p := range pos {
			ids[i] = f.src[p]
		}
		send[j] = comm.Bytes(ids)
	}
	reqs, err := f.exchange(ctx, "halo-requests", send)
	if err != nil {
		return err
	}
	f.serve = make([][]int32, f.c.Size())
	for j, b := range reqs {
		ids, err := comm.Decode[int32](b)
		if err != nil {
			return err
		}
		for _, v := range ids {
			if v < 0 || int(v) >= len(f.owner) || f.owner[v] != int32(me) {
				return fmt.Errorf("rank %d lists node %d in its halo as rank %d's", j, v, me)
			}
			f.serve[j] = append(f.serve[j], f.row[v])
		}
	}
	return nil
}

// haloRows counts, for rank me of a partition (owner) of adj into size
// parts, the rows of one layer's halo exchange: sent, its nodes that are
// in-neighbours of some node of another rank, once for every such rank;
// held, the nodes of other ranks that are in-neighbours of its own (its
// halo).
func haloRows(adj *graph.CSR, owner []int32, me, size int) (sent, held int64) {
	inHalo := make(map[int32]bool)
	sentTo := make(map[int64]bool) // own node · size + the rank it goes to
	for v, o := range owner {
		for k := adj.Indptr[v]; k < adj.Indptr[v+1]; k++ {
			u := int32(adj.Col(k))
			switch {
			case int(o) == me && owner[u] != int32(me) && !inHalo[u]:
				inHalo[u] = true
				held++
			case int(o) != me && owner[u] == int32(me):
				if key := int64(u)*int64(size) + int64(o); !sentTo[key] {
					sentTo[key] = true
					sent++
				}
			}
		}
	}
	return sent, held
}

// predictedBytes is what a rank sends in an epoch, by purpose, when it
// sends sent rows of its own per layer and holds held halo rows: each
// layer that reads the graph sends the rows of its input that other
// ranks' halos hold (forward) and, from the second layer on, the
// gradients of its halo rows to their owners (backward), width × the
// dtype's size a row.
func (f *layerRank) predictedBytes(sent, held int64) map[string]int64 {
	out := map[string]int64{}
	for l := range f.layers {
		if len(f.used[l]) == 0 {
			continue
		}
		w := int64(f.widths[l]) * f.rowBytes(l)
		if sent > 0 {
			out[fmt.Sprintf("halo-forward L%d", l+1)] = sent * w
		}
		if l > 0 && held > 0 {
			out[fmt.Sprintf("halo-backward L%d", l+1)] = held * w
		}
	}
	return out
}

// encodeRows and decodeRows carry rows between ranks: float32 ones (the
// features) as float32, float64 ones (the later layers' rows and
// gradients, kept in float64 on the host) in the training dtype.
func encodeRows[T float32 | float64](dt tensor.DType, v []T) []byte {
	if s, ok := any(v).([]float64); ok && dt == tensor.Float32 {
		f := make([]float32, len(s))
		for i, x := range s {
			f[i] = float32(x)
		}
		return comm.Bytes(f)
	}
	return comm.Bytes(v)
}

func decodeRows[T float32 | float64](dt tensor.DType, b []byte) ([]T, error) {
	var z T
	if _, ok := any(z).(float64); ok && dt == tensor.Float32 {
		s, err := comm.View[float32](b)
		if err != nil {
			return nil, err
		}
		v := make([]float64, len(s))
		for i, x := range s {
			v[i] = float64(x)
		}
		return any(v).([]T), nil
	}
	return comm.Decode[T](b)
}

// rowBytes is the size of one value of layer l's input between ranks.
func (f *layerRank) rowBytes(l int) int64 {
	if l == 0 {
		return 4 // the features, float32
	}
	return int64(f.e.DT.Size())
}

// haloForward returns layer l's input rows (src order) from the rank's
// own rows: the halo rows come from their owners.
func haloForward[T float32 | float64](ctx context.Context, f *layerRank, l int, own []T) ([]T, error) {
	w := f.widths[l]
	if len(f.used[l]) == 0 {
		return own, nil
	}
	send := make([][]byte, f.c.Size())
	for j, rows := range f.serve {
		if j == f.c.Rank() {
			continue
		}
		send[j] = encodeRows(f.e.DT, steprun.GatherRows(own, w, rows))
	}
	got, err := f.exchange(ctx, fmt.Sprintf("halo-forward L%d", l+1), send)
	if err != nil {
		return nil, err
	}
	x := make([]T, len(f.src)*w)
	copy(x, own)
	for j, pos := range f.halo {
		if j == f.c.Rank() || len(pos) == 0 {
			continue
		}
		v, err := decodeRows[T](f.e.DT, got[j])
		if err != nil {
			return nil, err
		}
		if len(v) != len(pos)*w {
			return nil, fmt.Errorf("layer %d: rank %d sent %d values for %d halo rows of %d", l+1, j, len(v), len(pos), w)
		}
		for i, p := range pos {
			copy(x[int(p)*w:(int(p)+1)*w], v[i*w:(i+1)*w])
		}
	}
	return x, nil
}

// haloBackward turns the gradient of layer l's input rows (src order)
// into that of the rank's own rows: each halo row's gradient goes to its
// owner, which adds the contributions of the ranks in rank order (its
// own among them), so the sum does not depend on timing.
func (f *layerRank) haloBackward(ctx context.Context, l int, g []float64) ([]float64, error) {
	w, me := f.widths[l], f.c.Rank()
	n := len(f.owned[me])
	if len(f.used[l]) == 0 {
		return g[:n*w], nil
	}
	send := make([][]byte, f.c.Size())
	for j, pos := range f.halo {
		if j == me {
			continue
		}
		send[j] = encodeRows(f.e.DT, steprun.GatherRows(g, w, pos))
	}
	got, err := f.exchange(ctx, fmt.Sprintf("halo-backward L%d", l+1), send)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n*w)
	for j, rows := range f.serve {
		if j == me {
			for i, x := range g[:n*w] {
				out[i] += x
			}
			continue
		}
		if len(rows) == 0 {
			continue
		}
		v, err := decodeRows[float64](f.e.DT, got[j])
		if err != nil {
			return nil, err
		}
		if len(v) != len(rows)*w {
			return nil, fmt.Errorf("layer %d: rank %d sent %d gradient values for %d rows of %d", l+1, j, len(v), len(rows), w)
		}
		for i, r := range rows {
			dst := out[int(r)*w : (int(r)+1)*w]
			for c, x := range v[i*w : (i+1)*w] {
				dst[c] += x
			}
		}
	}
	return out, nil
}

// bind uploads layer l's graphs and input rows x ([]float32 or
// []float64) and binds the layer.
func (f *layerRank) bind(l int, x any, training bool) (*steprun.Bound, error) {
	e := f.e
	bb := &steprun.Bound{}
	fail := func(err error) (*steprun.Bound, error) {
		bb.Release(e)
		return nil, err
	}
	topo := backend.ForPurpose(e.Be, backend.PurposeTopology)
	env := engine.Env{Backend: e.Be, DType: e.DT, Tier: e.Tier, Blocks: []map[string]*engine.Graph{{}}, NodeIDs: [][]int32{f.src},
		Inference: !training, InputGrad: l > 0 && training}
	for name := range f.used[l] {
		cg := f.graphs[name]
		a, err := topo.UploadGraph(cg.Csr, e.Tier)
		if err != nil {
			return fail(fmt.Errorf("layer %d %s: %w", l+1, name, err))
		}
		eg := &engine.Graph{Adj: a, Host: cg.Csr}
		bb.Graphs = append(bb.Graphs, eg)
		if engine.UsesEdgeIndex(f.layers[l]) {
			if eg.Edges, err = engine.BindEdgeIndex(topo, cg.Csr, e.DT, e.Tier); err != nil {
				return fail(err)
			}
		}
		for _, w := range []struct {
			v   []float32
			dst **tensor.Tensor
		}{{cg.Gcn, &eg.GCNNorm}, {cg.Mean, &eg.MeanNorm}} {
			t, err := train.UploadFloat32s(topo, w.v, []int{len(w.v)}, e.DT, e.Tier)
			if err != nil {
				return fail(err)
			}
			bb.Tensors = append(bb.Tensors, t)
			*w.dst = t
		}
		env.Blocks[0][name] = eg
	}
	rows := len(f.src)
	if len(f.used[l]) == 0 {
		rows = len(f.owned[f.c.Rank()])
	}
	shape := []int{rows, f.widths[l]}
	feats := backend.ForPurpose(e.Be, backend.PurposeFeatures)
	var in *tensor.Tensor
	var err error
	switch x := x.(type) {
	case []float32:
		in, err = train.UploadFloat32s(feats, x, shape, e.DT, e.Tier)
	case []float64:
		if in, err = e.Be.Alloc(e.DT, shape, e.Tier); err == nil {
			if err = engine.UploadFloats(feats, in, x); err != nil {
				e.Be.Release(in)
			}
		}
	default:
		err = fmt.Errorf("layer %d: input rows of type %T", l+1, x)
	}
	if err != nil {
		return fail(err)
	}
	bb.Tensors = append(bb.Tensors, in)
	env.Input = in
	if bb.Prog, err = engine.Bind(f.layers[l], env, f.r.PS); err != nil {
		return fail(err)
	}
	return bb, nil
}

// forward runs the layers one after the other over the rank's own rows,
// each after its halo exchange. In training it returns every layer bound
// (for backward; the caller releases them); in evaluation only the last.
func (f *layerRank) forward(ctx context.Context, seed uint64, training bool) ([]*steprun.Bound, error) {
	var own []float64 // layer l's own input rows, l ≥ 1
	var bound []*steprun.Bound
	fail := func(err error) ([]*steprun.Bound, error) {
		for _, bb := range bound {
			bb.Release(f.e)
		}
		return nil, err
	}
	for l := range f.layers {
		var x any
		var err error
		if l == 0 {
			x, err = haloForward(ctx, f, l, f.feats)
		} else {
			x, err = haloForward(ctx, f, l, own)
		}
		if err != nil {
			return fail(err)
		}
		bb, err := f.bind(l, x, training)
		if err != nil {
			return fail(err)
		}
		if !training && len(bound) > 0 {
			bound[0].Release(f.e)
			bound = bound[:0]
		}
		bound = append(bound, bb)
		mode := engine.Mode{Train: training, Seed: seed, AccumulateGrads: training}
		if err := bb.Prog.Forward(ctx, mode); err != nil {
			return fail(fmt.Errorf("layer %d: %w", l+1, err))
		}
		if l < len(f.layers)-1 {
			if own, err = engine.DownloadFloats(f.e.Be, bb.Prog.Output()); err != nil {
				return fail(err)
			}
		}
	}
	return bound, nil
}

// Epoch implements train.Stepper: one step over every training node.
func (f *distFull) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	t0 := time.Now()
	f.startEpoch()
	me := f.c.Rank()
	loss, err := f.trainStep(ctx, seed)
	if err == nil {
		loss, err = f.reduceAndUpdate(ctx, loss, update)
	}
	if err != nil {
		return 0, fmt.Errorf("rank %d: %w", me, err)
	}
	f.endEpoch(t0)
	return loss, nil
}

// trainStep runs forward, this rank's share of the loss and backward,
// leaving the rank's parameter gradients; it returns the share of the
// loss.
func (f *layerRank) trainStep(ctx context.Context, seed uint64) (float64, error) {
	e := f.e
	if err := f.r.PS.ZeroGrads(); err != nil {
		return 0, err
	}
	bound, err := f.forward(ctx, seed, true)
	if err != nil {
		return 0, err
	}
	defer func() {
		for _, bb := range bound {
			bb.Release(e)
		}
	}()
	last := bound[len(bound)-1].Prog
	loss := 0.0
	if len(f.trainRows) > 0 {
		share := float64(len(f.trainRows)) / float64(len(e.DS.Train))
		if loss, err = steprun.WeighedLoss(e.Be, last, e.DS, f.nodes, f.trainRows, e.Tier, share); err != nil {
			return 0, err
		}
	} else if err := e.Be.Fill(last.OutputGrad(), 0); err != nil {
		return 0, err
	}
	var g []float64 // the gradient of layer l's output rows
	for l := len(bound) - 1; l >= 0; l-- {
		p := bound[l].Prog
		if g != nil {
			if err := engine.UploadFloats(backend.ForPurpose(e.Be, backend.PurposeGradients), p.OutputGrad(), g); err != nil {
				return 0, err
			}
		}
		if err := p.Backward(ctx); err != nil {
			return 0, fmt.Errorf("layer %d backward: %w", l+1, err)
		}
		if l == 0 {
			break
		}
		ig, err := p.InputGrad()
		if err != nil {
			return 0, err
		}
		in, err := engine.DownloadFloats(e.Be, ig)
		if err != nil {
			return 0, err
		}
		if g, err = f.haloBackward(ctx, l, in); err != nil {
			return 0, err
		}
	}
	return loss, nil
}

// Predict implements train.Stepper: the layers forward over the own rows
// (halo rows exchanged as in training), then every rank's predictions
// gathered.
func (f *layerRank) Predict(ctx context.Context, pred []int32) error {
	out := make([]int32, len(f.owned[f.c.Rank()]))
	if err := f.ownOutputs(ctx, func(t *tensor.Tensor) error { return train.ArgmaxInto(f.e.Be, t, out) }); err != nil {
		return err
	}
	return f.gatherPredictions(ctx, out, pred)
}

// ownOutputs runs the layers forward, dropout off, over the own rows
// (halo rows exchanged as in training) and hands use the model's output,
// one row per own node in owned order (a collective).
func (f *layerRank) ownOutputs(ctx context.Context, use func(*tensor.Tensor) error) error {
	f.phase = "eval-"
	defer func() { f.phase = "" }()
	bound, err := f.forward(ctx, 0, false)
	if err != nil {
		return err
	}
	defer bound[0].Release(f.e)
	return use(bound[0].Prog.Output())
}

func init() { registry.Register(new(DistFull)) }
