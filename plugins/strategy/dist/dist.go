// Package dist holds the distributed strategies over MPI ranks
// (docs/distributed.md): strategy.distfull, full-graph training with a
// 1-hop halo exchange per layer, and strategy.distmini, DistDGL's
// mini-batches sampled on the nodes' owners. They share the rank
// plumbing (partition, exchanges, all-reduce).
package dist

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"strata/core/comm"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/partition"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
)

// distRank is one rank of a distributed strategy (strategy.distmini,
// strategy.distfull), DistDGL's design: the graph is split into one
// partition per rank ([partition], METIS by default); the rank keeps its
// partition's in-edges and feature rows, and trains on the training nodes
// it owns. For a batch, the owner of every destination samples that
// node's neighbours (sampler.SampleRows: the same draw one process would
// make) and the owners of the input nodes send their feature rows, both by
// all-to-all-v; the ranks' gradients are summed by comm.AllReduce (fixed
// rank order) and every rank takes the same optimizer step. Every rank
// holds the whole topology (METIS partitions it, and the byte predictions
// read it), the partition vector and the degree of every node, but only
// its own nodes' feature rows: on several ranks NewEnv loads none, and the
// rank reads its rows from the dataset file (loadFeatures).
type distRank struct {
	c comm.Comm
	e steprun.Env
	r *steprun.Runner
	// params are the parameters the optimizer steps and the ranks'
	// gradients sum over: the model's (r.PS), with a link task joined
	// with the decoder's.
	params *engine.Params
	owner  []int32   // the rank of every node
	row    []int32   // the row of a node in topo and feats on its owner
	owned  [][]int32 // the nodes of every rank, ascending
	topo   *graph.CSR
	feats  []float32 // the owned nodes' rows
	train  int       // training nodes owned
	// trainEdges are the training edges owned (a link task's positives
	// by their source).
	trainEdges int
	rows       sampling.RowSampler // draws the owned rows' neighbours
	fanouts    []int               // per block, first layer first; -1: every neighbour
	replace    bool
	part       string // the partitioner's ID
	// phase prefixes the purposes of the bytes: "" while training,
	// "eval-" while predicting.
	phase string
	// Figures of the last epoch and every epoch's time.
	times  []float64
	commS  float64
	before map[string]int64 // counts when the last epoch started
	lastBy map[string]int64 // the last epoch's bytes by purpose
	// predicted are the bytes per epoch by purpose that the partition
	// predicts this rank sends (nil: no prediction).
	predicted map[string]int64
}

// newDistRank partitions the graph among the ranks of the context's
// communicator and keeps this rank's share.
func newDistRank(ctx context.Context, cfg *config.Config, e steprun.Env, rows sampling.RowSampler) (*distRank, error) {
	c := comm.From(ctx)
	fanouts, replace := rows.RowFanouts()
	d := &distRank{c: c, e: e, rows: rows, fanouts: fanouts, replace: replace}
	n := e.DS.NumNodes
	d.owner = make([]int32, n)
	if c.Size() > 1 {
		var err error
		if d.owner, d.part, err = rankPartition(ctx, cfg, e.Adjs.Adj, c.Size()); err != nil {
			return nil, err
		}
	}
	d.row = make([]int32, n)
	d.owned = make([][]int32, c.Size())
	for v, o := range d.owner {
		d.row[v] = int32(len(d.owned[o]))
		d.owned[o] = append(d.owned[o], int32(v))
	}
	mine := d.owned[c.Rank()]
	adj := e.Adjs.Adj
	d.topo = &graph.CSR{NumRows: len(mine), NumCols: adj.NumCols, Indptr: make([]int64, len(mine)+1)}
	for i, v := range mine {
		for k := adj.Indptr[v]; k < adj.Indptr[v+1]; k++ {
			d.topo.Idx32 = append(d.topo.Idx32, int32(adj.Col(k)))
		}
		d.topo.Indptr[i+1] = int64(len(d.topo.Idx32))
	}
	var err error
	if d.feats, err = d.loadFeatures(ctx, cfg, mine); err != nil {
		return nil, err
	}
	for _, v := range e.DS.Train {
		if d.owner[v] == int32(c.Rank()) {
			d.train++
		}
	}
	if d.r, err = steprun.NewRunner(e, 1); err != nil {
		return nil, err
	}
	d.params = d.r.PS
	if len(fanouts) != len(d.r.Layers) {
		d.r.Release()
		return nil, fmt.Errorf("%d fanouts for a %d-layer model", len(fanouts), len(d.r.Layers))
	}
	return d, nil
}

// loadFeatures returns the prepared feature rows of the rank's nodes
// mine: read from the dataset file alone (train.LoadFeatureRows: NewEnv
// left the environment without rows), with data.feature_norm = "auto"
// decided over every rank's rows (a collective), or copied from the
// environment's matrix where it holds one (one rank, relabelled nodes).
func (d *distRank) loadFeatures(ctx context.Context, cfg *config.Config, mine []int32) ([]float32, error) {
	e := d.e
	if e.Feats != nil {
		if d.c.Size() == 1 {
			return e.Feats, nil // alone: every row is the rank's own
		}
		return steprun.GatherRows(e.Feats, e.Dim, mine), nil
	}
	raw, err := train.LoadFeatureRows(ctx, cfg, e.DS, mine)
	if err != nil {
		return nil, err
	}
	other := []float64{0} // ranks whose rows are not all 0 or 1
	if !train.BinaryFeatures(raw) {
		other[0] = 1
	}
	if err := comm.AllReduce(ctx, d.c, "setup-features", other); err != nil {
		return nil, err
	}
	train.PrepareFeatureRows(cfg.Data.FeatureNorm, raw, e.Dim, other[0] == 0)
	return raw, nil
}

// rankPartition splits adj into size parts with [partition] (METIS by
// default) and returns every node's part and the partitioner's ID. Every
// rank computes the same partition (same graph, same seed).
func rankPartition(ctx context.Context, cfg *config.Config, adj *graph.CSR, size int) ([]int32, string, error) {
	id := "partitioner.metis"
	var mod registry.Module
	if cfg.Partition.Name != "" {
		id, mod = cfg.Partition.ID, cfg.Partition.Module
	} else {
		info, err := registry.Lookup(id)
		if err != nil {
			return nil, "", err
		}
		mod = info.New()
		if err := cfg.ProvisionModule(ctx, "partition", mod); err != nil {
			return nil, "", err
		}
	}
	p, ok := mod.(partition.Partitioner)
	if !ok {
		return nil, "", cfg.KeyError(fmt.Sprintf("partition.name = %q is not a partitioner", cfg.Partition.Name), "partition", "name")
	}
	if partition.IsSquareOnly(p) && adj.NumRows != adj.NumCols {
		return nil, "", fmt.Errorf("%s: the graph is not square", id)
	}
	owner, err := p.Partition(ctx, adj, size, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%s into %d ranks: %w", id, size, err)
	}
	if len(owner) != adj.NumRows {
		return nil, "", fmt.Errorf("%s: %d parts for %d nodes", id, len(owner), adj.NumRows)
	}
	for v, o := range owner {
		if o < 0 || int(o) >= size {
			return nil, "", fmt.Errorf("%s: node %d in part %d of %d", id, v, o, size)
		}
	}
	return owner, id, nil
}

// exchange is one all-to-all-v of the current phase, timed.
func (d *distRank) exchange(ctx context.Context, purpose string, send [][]byte) ([][]byte, error) {
	t0 := time.Now()
	defer func() { d.commS += time.Since(t0).Seconds() }()
	return d.c.AllToAllV(ctx, d.phase+purpose, send)
}

// byOwner splits ids (keeping their order) by the rank that owns them and
// returns, for every id, its position in its owner's list.
func (d *distRank) byOwner(ids []int32) (lists [][]int32, pos []int32) {
	lists = make([][]int32, d.c.Size())
	pos = make([]int32, len(ids))
	for i, v := range ids {
		o := d.owner[v]
		pos[i] = int32(len(lists[o]))
		lists[o] = append(lists[o], v)
	}
	return lists, pos
}

// sample builds the blocks of seeds (this rank's destinations; possibly
// none) for the sampling stream rng. It is a collective: every rank calls
// it for the same batch, and every block is one request and one reply
// round of all-to-all-v.
func (d *distRank) sample(ctx context.Context, seeds []int32, rng uint64) ([]sampling.Block, error) {
	L := len(d.fanouts)
	blocks := make([]sampling.Block, L)
	dst := slices.Clone(seeds)
	local := make(map[int32]int32, len(dst)*4)
	for i, v := range dst {
		local[v] = int32(i)
	}
	for l := L - 1; l >= 0; l-- {
		lists, pos := d.byOwner(dst)
		send := make([][]byte, len(lists))
		for j, ids := range lists {
			send[j] = comm.Bytes(ids)
		}
		reqs, err := d.exchange(ctx, "requests", send)
		if err != nil {
			return nil, err
		}
		// Serve: sample every requested row of this rank's partition.
		for j, b := range reqs {
			ids, err := comm.Decode[int32](b)
			if err != nil {
				return nil, err
			}
			rows := make([]int32, len(ids))
			for i, v := range ids {
				if d.owner[v] != int32(d.c.Rank()) {
					return nil, fmt.Errorf("rank %d asked rank %d for node %d, which rank %d owns", j, d.c.Rank(), v, d.owner[v])
				}
				rows[i] = d.row[v]
			}
			indptr, nbr, err := d.rows.SampleRows(d.topo, rows, ids, l, d.fanouts[l], d.replace, rng)
			if err != nil {
				return nil, err
			}
			// The reply: every row's length, then the neighbours.
			reply := make([]int32, 0, len(ids)+len(nbr))
			for i := range ids {
				reply = append(reply, int32(indptr[i+1]-indptr[i]))
			}
			send[j] = comm.Bytes(append(reply, nbr...))
		}
		replies, err := d.exchange(ctx, "topology", send)
		if err != nil {
			return nil, err
		}
		rowsOf := make([][][]int32, len(replies)) // owner -> its rows, in request order
		for j, b := range replies {
			v, err := comm.Decode[int32](b)
			if err != nil {
				return nil, err
			}
			k := len(lists[j])
			if len(v) < k {
				return nil, fmt.Errorf("rank %d replied %d values to %d requests", j, len(v), k)
			}
			off := k
			rowsOf[j] = make([][]int32, k)
			for i := 0; i < k; i++ {
				if v[i] < 0 || off+int(v[i]) > len(v) {
					return nil, fmt.Errorf("rank %d replied a row of %d neighbours past its reply", j, v[i])
				}
				rowsOf[j][i] = v[off : off+int(v[i])]
				off += int(v[i])
			}
		}
		// Relabel in destination order, as one process does.
		src := slices.Clone(dst)
		adj := &graph.CSR{NumRows: len(dst), Indptr: make([]int64, len(dst)+1)}
		for i, v := range dst {
			for _, u := range rowsOf[d.owner[v]][pos[i]] {
				li, ok := local[u]
				if !ok {
					li = int32(len(src))
					local[u] = li
					src = append(src, u)
				}
				adj.Idx32 = append(adj.Idx32, li)
			}
			adj.Indptr[i+1] = int64(len(adj.Idx32))
		}
		if adj.Idx32 == nil {
			adj.Idx32 = []int32{}
		}
		adj.NumCols = len(src)
		blocks[l] = sampling.Block{Dst: dst, Src: src, Adj: adj}
		dst = src
	}
	return blocks, nil
}

// features returns the feature rows of ids, fetched from their owners (a
// collective); this rank's own rows are copied in place, not sent.
func (d *distRank) features(ctx context.Context, ids []int32) ([]float32, error) {
	me := d.c.Rank()
	lists, pos := d.byOwner(ids)
	send := make([][]byte, len(lists))
	for j, l := range lists {
		if j != me {
			send[j] = comm.Bytes(l)
		}
	}
	reqs, err := d.exchange(ctx, "requests", send)
	if err != nil {
		return nil, err
	}
	dim := d.e.Dim
	for j, b := range reqs {
		want, err := comm.View[int32](b)
		if err != nil {
			return nil, err
		}
		rows := make([]float32, 0, len(want)*dim)
		for _, v := range want {
			if d.owner[v] != int32(me) {
				return nil, fmt.Errorf("rank %d asked rank %d for the features of node %d, which rank %d owns", j, me, v, d.owner[v])
			}
			r := int(d.row[v])
			rows = append(rows, d.feats[r*dim:(r+1)*dim]...)
		}
		send[j] = comm.Bytes(rows)
	}
	got, err := d.exchange(ctx, "features", send)
	if err != nil {
		return nil, err
	}
	rows := make([][]float32, len(got))
	for j, b := range got {
		if j == me {
			continue
		}
		if rows[j], err = comm.View[float32](b); err != nil {
			return nil, err
		}
		if len(rows[j]) != len(lists[j])*dim {
			return nil, fmt.Errorf("rank %d sent %d feature values for %d rows of %d", j, len(rows[j]), len(lists[j]), dim)
		}
	}
	x := make([]float32, 0, len(ids)*dim)
	for i, v := range ids {
		if o := int(d.owner[v]); o == me {
			r := int(d.row[v])
			x = append(x, d.feats[r*dim:(r+1)*dim]...)
		} else {
			p := int(pos[i])
			x = append(x, rows[o][p*dim:(p+1)*dim]...)
		}
	}
	return x, nil
}

// step trains one global batch: the blocks of this rank's seeds (perhaps
// none) sampled with the stream rng, through prepare when it is not nil,
// their input rows fetched, the rank's part trained by run on the bound
// model (its loss and gradients weighed by its share of the batch), the
// all-reduce of the gradients and of the loss, and the optimizer step (a
// collective). It returns the batch's loss.
func (d *distRank) step(ctx context.Context, seeds []int32, rng uint64, prepare func([]sampling.Block) []sampling.Block,
	run func(*steprun.Bound) (float64, error), update func() error) (float64, error) {
	blocks, err := d.sample(ctx, seeds, rng)
	if err != nil {
		return 0, err
	}
	if prepare != nil {
		blocks = prepare(blocks)
	}
	x, err := d.features(ctx, blocks[0].Src)
	if err != nil {
		return 0, err
	}
	loss := 0.0
	if len(seeds) > 0 {
		bb, err := d.r.Bind(blocks, steprun.FeatRows{F32: x}, nil, false)
		if err != nil {
			return 0, err
		}
		loss, err = run(bb)
		bb.Release(d.e)
		if err != nil {
			return 0, err
		}
	} else if err := d.params.ZeroGrads(); err != nil {
		return 0, err
	}
	return d.reduceAndUpdate(ctx, loss, update)
}

// reduceAndUpdate sums the ranks' parameter gradients and their shares of
// the loss (a collective), then takes the optimizer step; it returns the
// loss.
func (d *distRank) reduceAndUpdate(ctx context.Context, loss float64, update func() error) (float64, error) {
	if err := d.allReduceGrads(ctx); err != nil {
		return 0, err
	}
	l := []float64{loss}
	t0 := time.Now()
	if err := comm.AllReduce(ctx, d.c, d.phase+"loss", l); err != nil {
		return 0, err
	}
	d.commS += time.Since(t0).Seconds()
	return l[0], update()
}

// allReduceGrads sums every parameter's gradient over the ranks, in one
// buffer of the training dtype.
func (d *distRank) allReduceGrads(ctx context.Context) error {
	if d.c.Size() == 1 {
		return nil
	}
	ps := d.params.List()
	var flat []float64
	for _, p := range ps {
		g, err := engine.DownloadFloats(d.e.Be, p.Grad)
		if err != nil {
			return err
		}
		flat = append(flat, g...)
	}
	t0 := time.Now()
	if d.e.DT == tensor.Float32 {
		f32 := make([]float32, len(flat))
		for i, v := range flat {
			f32[i] = float32(v)
		}
		if err := comm.AllReduce(ctx, d.c, d.phase+"gradients", f32); err != nil {
			return err
		}
		for i, v := range f32 {
			flat[i] = float64(v)
		}
	} else if err := comm.AllReduce(ctx, d.c, d.phase+"gradients", flat); err != nil {
		return err
	}
	d.commS += time.Since(t0).Seconds()
	off := 0
	for _, p := range ps {
		n := p.Grad.Numel()
		if err := engine.UploadFloats(d.e.Be, p.Grad, flat[off:off+n]); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// predictAll predicts this rank's nodes over full neighbourhoods, all at
// once (ownOutputsAll), then every rank receives every other's
// predictions.
func (d *distRank) predictAll(ctx context.Context, pred []int32) error {
	out := make([]int32, len(d.owned[d.c.Rank()]))
	if err := d.ownOutputsAll(ctx, func(t *tensor.Tensor) error { return train.ArgmaxInto(d.e.Be, t, out) }); err != nil {
		return err
	}
	return d.gatherPredictions(ctx, out, pred)
}

// ownOutputsAll runs the model, dropout off, over the full neighbourhoods
// of this rank's nodes, all at once (as strategy.minibatch predicts every
// node in one piece: the neighbourhoods of chunks overlap, and each chunk
// would fetch the rows of its own), and hands use the output, one row per
// own node in owned order (a collective; use is not called on a rank
// that owns no node).
func (d *distRank) ownOutputsAll(ctx context.Context, use func(*tensor.Tensor) error) error {
	d.phase = "eval-"
	defer func() { d.phase = "" }()
	fanouts := d.fanouts
	d.fanouts = slices.Repeat([]int{-1}, len(fanouts))
	defer func() { d.fanouts = fanouts }()
	mine := d.owned[d.c.Rank()]
	blocks, err := d.sample(ctx, mine, 0)
	if err != nil {
		return err
	}
	x, err := d.features(ctx, blocks[0].Src)
	if err != nil || len(mine) == 0 {
		return err
	}
	bb, err := d.r.Bind(blocks, steprun.FeatRows{F32: x}, nil, true)
	if err != nil {
		return err
	}
	defer bb.Release(d.e)
	x = nil
	if err := bb.Prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	return use(bb.Prog.Output())
}

// gatherPredictions gives every rank every rank's predictions (out: this
// rank's, in owned order) in pred (a collective).
func (d *distRank) gatherPredictions(ctx context.Context, out, pred []int32) error {
	all, err := comm.AllGather(ctx, d.c, "eval-predictions", comm.Bytes(out))
	if err != nil {
		return err
	}
	for j, b := range all {
		p, err := comm.Decode[int32](b)
		if err != nil {
			return err
		}
		if len(p) != len(d.owned[j]) {
			return fmt.Errorf("rank %d sent %d predictions for its %d nodes", j, len(p), len(d.owned[j]))
		}
		for i, v := range d.owned[j] {
			pred[v] = p[i]
		}
	}
	return nil
}

// startEpoch and endEpoch bracket an epoch's figures.
func (d *distRank) startEpoch() {
	d.commS, d.before = 0, d.c.Sent()
}

func (d *distRank) endEpoch(t0 time.Time) {
	d.times = append(d.times, time.Since(t0).Seconds())
	d.lastBy = map[string]int64{}
	for k, v := range d.c.Sent() {
		if v -= d.before[k]; v > 0 {
			d.lastBy[k] = v
		}
	}
}

// report gathers every rank's figures into the result's figures under
// the strategy's name (a collective: every rank's loop calls ReportResult
// once, at the end).
func (d *distRank) report(res *train.Result) {
	if d.part != "" {
		res.Partitioner = d.part
	}
	st := RankStats{Rank: d.c.Rank(), CommS: d.commS, Nodes: len(d.owned[d.c.Rank()]), TrainNodes: d.train, TrainEdges: d.trainEdges,
		SentBytes: comm.Total(d.lastBy), SentBy: d.lastBy, PredictedBy: d.predicted}
	if len(d.times) > 0 {
		s := slices.Clone(d.times)
		slices.Sort(s)
		st.EpochTimeMedianS = s[len(s)/2]
	}
	fig := &DistFigures{}
	b, err := json.Marshal(st)
	if err == nil {
		var all [][]byte
		if all, err = comm.AllGather(context.Background(), d.c, "report", b); err == nil {
			fig.Ranks = make([]RankStats, len(all))
			for j, b := range all {
				if err = json.Unmarshal(b, &fig.Ranks[j]); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		fig.Ranks = []RankStats{st} // this rank's own, at least
	}
	res.SetFigures(res.Mode, fig)
}

// Stepper methods shared by both strategies.

// Params implements train.Stepper.
func (d *distRank) Params() *engine.Params { return d.params }

// Predict implements train.Stepper.
func (d *distRank) Predict(ctx context.Context, pred []int32) error { return d.predictAll(ctx, pred) }

// Release implements train.Stepper.
func (d *distRank) Release() { d.r.Release() }

// ReportResult implements train.ResultReporter.
func (d *distRank) ReportResult(res *train.Result) { d.report(res) }
