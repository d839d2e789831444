package minibatch

import (
	"context"
	"fmt"
	"slices"

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
	return &miniLink{task: e.Link, dec: dec, params: ps, nodes: e.DS.NumNodes}, nil
}

func (l *miniLink) release() { l.dec.Release() }

// epochBatches shuffles the training edges with the epoch's seed, cuts
// them into batches of size and draws each batch's negatives.
func (l *miniLink) epochBatches(ctx context.Context, seed uint64, size int) ([]linkBatch, error) {
	train := l.task.Split.Train
	all, err := l.task.TrainNegatives(ctx, seed)
	if err != nil {
		return nil, err
	}
	k := l.task.Negatives
	order := steprun.Shuffled(steprun.Iota32(train.Len()), seed)
	var out []linkBatch
	for lo := 0; lo < len(order); lo += size {
		idx := order[lo:min(lo+size, len(order))]
		pos := graph.Pairs{Src: make([]int32, len(idx)), Dst: make([]int32, len(idx))}
		neg := graph.Pairs{Src: make([]int32, 0, len(idx)*k), Dst: make([]int32, 0, len(idx)*k)}
		for i, j := range idx {
			pos.Src[i], pos.Dst[i] = train.Src[j], train.Dst[j]
			lo, hi := int(j)*k, int(j+1)*k
			neg.Src, neg.Dst = append(neg.Src, all.Src[lo:hi]...), append(neg.Dst, all.Dst[lo:hi]...)
		}
		out = append(out, l.localBatch(pos, neg))
	}
	return out, nil
}

// localBatch is the batch of pos and neg (global ids): its seed nodes,
// the pairs in their local ids, and the keys of pos.
func (l *miniLink) localBatch(pos, neg graph.Pairs) linkBatch {
	nodes := slices.Concat(pos.Src, pos.Dst, neg.Src, neg.Dst)
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	local := func(p graph.Pairs) graph.Pairs {
		q := graph.Pairs{Src: make([]int32, p.Len()), Dst: make([]int32, p.Len())}
		for i := range p.Src {
			s, _ := slices.BinarySearch(nodes, p.Src[i])
			d, _ := slices.BinarySearch(nodes, p.Dst[i])
			q.Src[i], q.Dst[i] = int32(s), int32(d)
		}
		return q
	}
	held := make(map[uint64]bool, pos.Len())
	for i := range pos.Src {
		held[undirectedKey(pos.Src[i], pos.Dst[i], l.nodes)] = true
	}
	return linkBatch{nodes: nodes, pos: local(pos), neg: local(neg), held: held}
}

// undirectedKey keys the pair {u, v} in either direction.
func undirectedKey(u, v int32, n int) uint64 {
	if v < u {
		u, v = v, u
	}
	return uint64(u)*uint64(n) + uint64(v)
}

// excludeHeld returns blocks without the entries whose endpoints are a
// pair of held (either direction); their node lists are shared.
func (l *miniLink) excludeHeld(blocks []sampling.Block, held map[uint64]bool) []sampling.Block {
	out := make([]sampling.Block, len(blocks))
	for k, b := range blocks {
		a := b.Adj
		indptr := make([]int64, a.NumRows+1)
		cols := make([]int64, 0, a.NNZ())
		var vals []float32
		for i := range a.NumRows {
			for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
				if held[undirectedKey(b.Src[a.Col(e)], b.Dst[i], l.nodes)] {
					continue
				}
				cols = append(cols, a.Col(e))
				if a.Values != nil {
					vals = append(vals, a.Values[e])
				}
			}
			indptr[i+1] = int64(len(cols))
		}
		adj := graph.MakeCSR(a.NumRows, a.NumCols, indptr, cols)
		adj.Values = vals
		out[k] = sampling.Block{Dst: b.Dst, Src: b.Src, Adj: adj}
	}
	return out
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

// score writes the scores of pairs: every node's embedding over its full
// neighbourhood (the runner's evaluation chunks), then the decoder.
func (l *miniLink) score(ctx context.Context, r *steprun.Runner, pairs graph.Pairs, scores []float64) error {
	emb, _, _, err := r.PredictOutputs(ctx)
	if err != nil {
		return err
	}
	if w := l.task.Embedding; len(emb) != l.nodes*w {
		return fmt.Errorf("minibatch: %d embedding values for %d nodes of width %d", len(emb), l.nodes, w)
	}
	return l.dec.ScoreEmbeddings(ctx, emb, l.task.Embedding, pairs, scores)
}
