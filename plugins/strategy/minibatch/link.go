package minibatch

import (
	"context"

	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/strategy/internal/linkrun"
	"strata/plugins/strategy/internal/microsplit"
	"strata/plugins/strategy/internal/steprun"
)

// miniLink trains link prediction on mini-batches of edges: a batch is
// train.batch_size training edges and their negatives, whose endpoints
// are the seed nodes the sampler builds blocks for; the batch's own
// training edges (and their reverses) are taken out of its blocks, so
// that no positive is predicted from a message along itself.
type miniLink struct {
	task   *train.LinkTask
	dec    *linkrun.Decoder
	params *engine.Params // the model's and the decoder's
	nodes  int
	graph  *graph.CSR // the graph message passing reads
}

// linkBatch is one batch of edges: its positive and negative pairs in
// local ids (indices into nodes, the batch's sorted seed nodes) and the
// keys of its positives (graph.EdgeSplit's pair keys, either direction),
// which its blocks must not hold.
type linkBatch struct {
	nodes    []int32
	pos, neg graph.Pairs
	held     map[uint64]bool
}

// checkLinkConfig refuses what link training on mini-batches does not do
// yet: several devices, and micro-batches sized by the memory estimate.
func checkLinkConfig(cfg *config.Config) error {
	if cfg.Train.Task != config.TaskLink {
		return nil
	}
	if err := microsplit.CheckLinkAuto(cfg); err != nil {
		return err
	}
	if cfg.Devices.Count > 1 {
		return cfg.KeyError("devices.count: link prediction on mini-batches trains on one device yet; set devices.count = 1", "devices", "count")
	}
	return nil
}

func newMiniLink(e steprun.Env, r *steprun.Runner) (*miniLink, error) {
	dec, err := linkrun.New(e.Link, e.Be, e.DT, e.Tier, e.Seed)
	if err != nil {
		return nil, err
	}
	ps, err := dec.JoinParams(r.PS)
	if err != nil {
		dec.Release()
		return nil, err
	}
	return &miniLink{task: e.Link, dec: dec, params: ps, nodes: e.DS.NumNodes, graph: e.Adjs.Adj}, nil
}

func (l *miniLink) release() { l.dec.Release() }

// epochBatches is the epoch's batches of training edges
// (linkrun.EpochBatches), each in local ids with the keys of its
// positives.
func (l *miniLink) epochBatches(ctx context.Context, seed uint64, size int) ([]linkBatch, error) {
	bs, err := linkrun.EpochBatches(ctx, l.task, seed, size)
	if err != nil {
		return nil, err
	}
	out := make([]linkBatch, len(bs))
	for i, b := range bs {
		out[i] = l.localBatch(b.Pos, b.Neg)
	}
	return out, nil
}

// localBatch is the batch of pos and neg (global ids): its seed nodes,
// the pairs in their local ids, and the keys of pos.
func (l *miniLink) localBatch(pos, neg graph.Pairs) linkBatch {
	b := linkrun.EdgeBatch{Pos: pos, Neg: neg}
	nodes, lpos, lneg := b.Local()
	return linkBatch{nodes: nodes, pos: lpos, neg: lneg, held: b.Held(l.nodes)}
}

// excludeHeld returns blocks without the entries whose endpoints are a
// pair of held (either direction); their node lists are shared.
func (l *miniLink) excludeHeld(blocks []sampling.Block, held map[uint64]bool) []sampling.Block {
	return linkrun.ExcludeHeld(blocks, held, l.graph)
}

// trainBatch runs one batch bound in bb: the model's forward over its
// blocks, the decoder's loss of its pairs and the backward of both.
func (l *miniLink) trainBatch(ctx context.Context, bb *steprun.Bound, b *linkBatch, seed uint64) (float64, error) {
	p := bb.Prog
	if err := p.Forward(ctx, engine.Mode{Train: true, Seed: seed}); err != nil {
		return 0, err
	}
	loss, err := l.dec.Step(ctx, p.Output(), p.OutputGrad(), b.pos, b.neg, seed)
	if err != nil {
		return 0, err
	}
	return loss, p.Backward(ctx)
}
