package minibatch

import (
	"context"
	"errors"
	"fmt"

	"strata/core/config"
	"strata/core/sampling"
	"strata/core/tensor"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/microsplit"
	"strata/plugins/strategy/internal/steprun"
)

// miniMicro splits sampled mini-batches into micro-batches (Betty on a
// sampled batch): each shard's output nodes are split by the [partition]
// plugin, each micro-batch runs over its share of the shard's sampled
// blocks (the same neighbours, so the gradient is the shard's), and their
// gradients accumulate into the batch's one step. With "auto" every shard
// gets the smallest K whose largest micro-batch fits the device by the
// memory estimate. Micro-batches are bound one at a time by the training
// goroutine (the transfer stage does not stage them: two at once would
// double the peak the split bounds).
type miniMicro struct {
	split *microsplit.Splitter
	k     int
	auto  bool
	// layerwise: evaluation runs layer by layer (its chunks are not fitted).
	layerwise bool
	// microK and estPeak are the largest K and estimated micro-batch peak
	// of the last epoch (written by the producer, read after it is done).
	microK, curK     int
	estPeak, curPeak int64
	// Feature-store gathers made while training micro-batches.
	hits, rows, peer int64
}

// newMiniMicro returns the micro-batching of a minibatch config, or nil
// when train.micro_batches is 1.
func newMiniMicro(ctx context.Context, cfg *config.Config, e steprun.Env) (*miniMicro, error) {
	opts := optionsOf(cfg)
	if !opts.Micro() {
		return nil, nil
	}
	train, item := len(e.DS.Train), "node"
	if e.Link != nil {
		train, item = e.Link.Split.Train.Len(), "edge"
	}
	if err := checkMiniMicro(cfg, train, item); err != nil {
		return nil, err
	}
	s, err := microsplit.NewSplitter(ctx, cfg, "output nodes of each mini-batch")
	if err != nil {
		return nil, err
	}
	s.Lazy = true // each micro-batch's blocks and input rows are made when it trains (bind)
	mm := &miniMicro{split: s, k: opts.MicroBatches, auto: opts.AutoK(), layerwise: opts.Layerwise()}
	if s.Est, s.Capacity, err = microsplit.NewEstimator(ctx, cfg, e, mm.auto); err != nil {
		return nil, err
	}
	return mm, nil
}

// checkMiniMicro checks micro_batches against mini-batches of batch_size
// of the train training items (item: "node", or "edge" when a batch's
// outputs are the endpoints of its edges).
func checkMiniMicro(cfg *config.Config, train int, item string) error {
	opts := optionsOf(cfg)
	if opts.AutoK() {
		return microsplit.CheckAutoMicro(cfg)
	}
	k, n := opts.MicroBatches, min(opts.BatchSize, train)
	if k > n {
		one := item
		if item == "node" {
			one = "output node"
		}
		size := fmt.Sprintf("minibatch.batch_size = %d %ss of a mini-batch", opts.BatchSize, one)
		if train < opts.BatchSize {
			size = fmt.Sprintf("%d training %ss", train, item)
		}
		return cfg.KeyError(fmt.Sprintf("minibatch.micro_batches = %d is more than the %s; a micro-batch needs at least one %s", k, size, one), "minibatch", "micro_batches")
	}
	return nil
}

// capacity returns the device capacity the micro-batches fit (0: none).
func (mm *miniMicro) capacity() int64 {
	if mm == nil {
		return 0
	}
	return mm.split.Capacity
}

// evalChunks returns the evaluation chunks to use on a device with a
// capacity: start, or with "auto" as many as the memory estimate of L-hop
// inference needs (layer-wise inference needs less and keeps start).
func (mm *miniMicro) evalChunks(ctx context.Context, e steprun.Env, start int) (int, error) {
	if mm == nil || !mm.auto || mm.layerwise {
		return start, nil
	}
	return microsplit.FitEvalChunks(ctx, e, mm.split.Est, mm.split.Capacity, start)
}

// settle records what else lives on the training device once the stepper
// is set up (a feature cache), for the estimate: what is in use beyond the
// model's parameters, gradients and state. With "auto" and such bytes the
// evaluation chunks of the replicas are sized again, around them.
func (mm *miniMicro) settle(ctx context.Context, e steprun.Env, m *miniBatches) error {
	if mm == nil || mm.split.Est == nil {
		return nil
	}
	est := mm.split.Est
	model := int64((2*est.Params + est.State) * est.Elt)
	est.Resident = float64(max(0, e.Be.Stats().InUse[e.Tier]-model))
	if dev := est.Device(); dev != nil { // the allocations now live too
		mem, err := dev.DeviceMemory(e.Tier)
		if err != nil {
			return err
		}
		est.OnDevice(dev, mem)
	}
	est.Gathered = m.store != nil
	if !mm.auto || mm.layerwise || est.Resident == 0 || len(m.replicas) == 0 {
		return nil
	}
	chunks, err := microsplit.FitEvalChunks(ctx, e, est, mm.split.Capacity, len(m.replicas[0].Eval))
	if err != nil {
		return err
	}
	for _, r := range m.replicas {
		r.Eval = steprun.EvalChunkList(e.DS.NumNodes, chunks)
	}
	return nil
}

// splitShard splits a sampled shard into its micro-batches, each with its
// output rows and estimate; their blocks and input rows are made when each
// trains (bind). It runs on the producer goroutine.
func (mm *miniMicro) splitShard(ctx context.Context, sh *shard) error {
	var worst memest.Estimate
	var err error
	if mm.auto {
		sh.micro, worst, err = mm.split.Auto(ctx, sh.blocks)
	} else {
		sh.micro, worst, err = mm.split.Split(ctx, sh.blocks, min(mm.k, len(sh.nodes)))
	}
	if err != nil {
		var inf *microsplit.InfeasibleError
		if errors.As(err, &inf) {
			inf.Sampled = true
		}
		return fmt.Errorf("splitting into micro-batches: %w", err)
	}
	mm.curK, mm.curPeak = max(mm.curK, len(sh.micro)), max(mm.curPeak, worst.Peak)
	return nil
}

// endEpoch publishes the epoch's largest K and estimate and adds the
// micro-batches' feature-store gathers to the epoch's.
func (mm *miniMicro) endEpoch(m *miniBatches) {
	if mm == nil {
		return
	}
	mm.microK, mm.estPeak, mm.curK, mm.curPeak = mm.curK, mm.curPeak, 0, 0
	m.hits, m.rows, m.peer = m.hits+mm.hits, m.rows+mm.rows, m.peer+mm.peer
	mm.hits, mm.rows, mm.peer = 0, 0, 0
}

// train runs one shard's micro-batches on replica r, accumulating their
// gradients; each micro-batch's loss is weighed by its share of the
// batch's total output nodes. A shard of edges runs as one
// microsplit.LinkStep over its micro-batches. It returns the weighed loss.
func (mm *miniMicro) train(ctx context.Context, m *miniBatches, r *steprun.Runner, sh shard, total int, seed uint64) (float64, error) {
	if sh.link != nil {
		return mm.trainLink(ctx, m, r, sh, seed)
	}
	if err := r.PS.ZeroGrads(); err != nil {
		return 0, err
	}
	var loss float64
	for j := range sh.micro {
		mb := &sh.micro[j]
		blocks := mb.SplitFrom(sh.blocks)
		x, err := mm.hostRows(m, r, blocks)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", j, err)
		}
		bb, err := mm.bind(ctx, m, r, blocks, x)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", j, err)
		}
		l, err := r.TrainBatch(ctx, bb, mb.Nodes, seed, float64(len(mb.Nodes))/float64(total), true)
		bb.Release(r.Env)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", j, err)
		}
		loss += l
	}
	return loss, nil
}

// trainLink runs a shard of edges as one microsplit.LinkStep. The step
// binds every micro-batch twice (forward, then backward from the pairs'
// gradients), so their blocks and host rows are made once, before it.
func (mm *miniMicro) trainLink(ctx context.Context, m *miniBatches, r *steprun.Runner, sh shard, seed uint64) (float64, error) {
	if err := m.link.params.ZeroGrads(); err != nil {
		return 0, err
	}
	blocks := make([][]sampling.Block, len(sh.micro))
	xs := make([]steprun.FeatRows, len(sh.micro))
	for j := range sh.micro {
		blocks[j] = sh.micro[j].SplitFrom(sh.blocks)
		var err error
		if xs[j], err = mm.hostRows(m, r, blocks[j]); err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", j, err)
		}
	}
	e := r.Env
	step := microsplit.LinkStep{Micro: sh.micro, Rows: len(sh.nodes), Width: m.link.task.Embedding, Dec: m.link.dec, Be: e.Be, DT: e.DT, Tier: e.Tier,
		Bind:    func(ctx context.Context, j int) (*steprun.Bound, error) { return mm.bind(ctx, m, r, blocks[j], xs[j]) },
		Release: func(bb *steprun.Bound) { bb.Release(e) }}
	return step.Run(ctx, sh.link.pos, sh.link.neg, seed, 1)
}

// hostRows gathers the input rows of a micro-batch's blocks on the host,
// unless the feature store gathers them when it is bound (none then).
func (mm *miniMicro) hostRows(m *miniBatches, r *steprun.Runner, blocks []sampling.Block) (steprun.FeatRows, error) {
	if m.store != nil {
		return steprun.FeatRows{}, nil
	}
	return r.Env.GatherInput(blocks[0].Src)
}

// bind binds a micro-batch's blocks on replica r for training, with its
// host rows x or, when there is a feature store, its input rows gathered
// through the store (and counted).
func (mm *miniMicro) bind(ctx context.Context, m *miniBatches, r *steprun.Runner, blocks []sampling.Block, x steprun.FeatRows) (*steprun.Bound, error) {
	var input *tensor.Tensor
	if m.store != nil {
		in, gs, err := m.store.Gather(ctx, blocks[0].Src, r.Env.Tier)
		if err != nil {
			return nil, fmt.Errorf("gathering features: %w", err)
		}
		input = in
		mm.hits, mm.rows, mm.peer = mm.hits+int64(gs.Local), mm.rows+int64(gs.Rows), mm.peer+int64(gs.Peer)
	}
	return r.Bind(blocks, x, input, false)
}

// close releases the memory estimator.
func (mm *miniMicro) close() {
	if mm != nil && mm.split.Est != nil {
		mm.split.Est.Close()
	}
}
