package dist

import (
	"context"
	"fmt"
	"math"
	"time"

	"strata/core/comm"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/linkrun"
	"strata/plugins/strategy/internal/steprun"
)

// distLink is strategy.distmini's link prediction (train.task = "link"):
// every rank cuts the epoch into strategy.minibatch's batches of training
// edges (linkrun.EpochBatches: the same shuffle and negatives on every
// rank) and trains the positives of each batch whose source it owns, with
// their negatives; their endpoints are its seed nodes, sampled through
// their owners as node seeds are. Its loss and gradients are weighed by
// its share of the batch's positives (linkrun.StepShare), so the
// all-reduced sum is the batch's step. Pairs are scored on every rank
// alike from the model's outputs, each row computed by its node's owner.
type distLink struct {
	task *train.LinkTask
	dec  *linkrun.Decoder
}

// newDistLink sets d up for link training: the decoder (initialised as
// strategy.minibatch's) joins the model in the parameters the ranks
// reduce and the optimizer steps, and the rank counts the training edges
// it owns.
func newDistLink(d *distRank) (*distLink, error) {
	e := d.e
	dec, err := linkrun.New(e.Link, e.Be, e.DT, e.Tier, e.Seed)
	if err != nil {
		return nil, err
	}
	ps, err := dec.JoinParams(d.r.PS)
	if err != nil {
		dec.Release()
		return nil, err
	}
	d.params = ps
	me := int32(d.c.Rank())
	for _, u := range e.Link.Split.Train.Src {
		if d.owner[u] == me {
			d.trainEdges++
		}
	}
	return &distLink{task: e.Link, dec: dec}, nil
}

// linkEpoch trains one epoch of link prediction (see distLink): the
// batches and sampling streams of strategy.minibatch on one device.
func (m *distMini) linkEpoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	batches, err := linkrun.EpochBatches(ctx, m.link.task, seed, m.batch)
	if err != nil {
		return 0, err
	}
	parts := make([][]linkrun.EdgeBatch, len(batches)) // every rank's part of every batch
	for n, b := range batches {
		parts[n] = m.rankParts(b)
	}
	m.predictLinkFeatures(parts) // outside the epoch's time
	t0 := time.Now()
	m.startEpoch()
	me := m.c.Rank()
	loss := 0.0
	for n, b := range batches {
		var held map[uint64]bool
		if m.link.task.ExcludeBatch {
			held = b.Held(m.e.DS.NumNodes)
		}
		share := float64(parts[n][me].Pos.Len()) / float64(b.Pos.Len())
		l, err := m.linkStep(ctx, parts[n][me], held, share, seed*0x9e3779b97f4a7c15+uint64(n), steprun.BatchSeed(seed, n), update)
		if err != nil {
			return 0, fmt.Errorf("batch %d on rank %d: %w", n, me, err)
		}
		loss += l
	}
	m.endEpoch(t0)
	return loss / float64(max(len(batches), 1)), nil
}

// rankParts splits batch b among the ranks: every positive, with its
// negatives, goes to the owner of its source.
func (m *distMini) rankParts(b linkrun.EdgeBatch) []linkrun.EdgeBatch {
	parts := make([]linkrun.EdgeBatch, m.c.Size())
	for j := range parts {
		parts[j] = b.Part(func(i int) bool { return m.owner[b.Pos.Src[i]] == int32(j) })
	}
	return parts
}

// predictLinkFeatures is predictFeatures for the epoch's batches of
// edges: every rank's seeds of a batch are the endpoints of its part.
func (m *distMini) predictLinkFeatures(parts [][]linkrun.EdgeBatch) {
	if m.c.Size() == 1 {
		return
	}
	rows := 0.0
	for _, ranks := range parts {
		seeds := make([][]int32, len(ranks))
		for j, p := range ranks {
			seeds[j], _, _ = p.Local()
		}
		rows += expectedSampledRows(m.e.Adjs.Adj, m.owner, m.c.Rank(), seeds, m.fanouts, m.replace)
	}
	m.predicted = map[string]int64{"features": int64(math.Round(rows * float64(m.e.Dim) * 4))}
}

// linkStep trains this rank's part of one global batch of edges (perhaps
// none of its positives), with the entries of held (the whole batch's
// positives, either direction; nil: none) taken out of its blocks, then
// all-reduces the gradients and the loss and takes the optimizer step (a
// collective, distRank.step). It returns the batch's loss.
func (m *distMini) linkStep(ctx context.Context, part linkrun.EdgeBatch, held map[uint64]bool, share float64, rng, seed uint64, update func() error) (float64, error) {
	nodes, pos, neg := part.Local()
	var exclude func([]sampling.Block) []sampling.Block
	if held != nil {
		exclude = func(b []sampling.Block) []sampling.Block { return linkrun.ExcludeHeld(b, held, m.e.Adjs.Adj) }
	}
	return m.step(ctx, nodes, rng, exclude, func(bb *steprun.Bound) (float64, error) {
		return m.link.trainPart(ctx, bb.Prog, pos, neg, seed, share)
	}, update)
}

// trainPart runs the model p forward over a part's blocks, the decoder's
// loss of its pairs (local ids) weighed by share, and the backward of
// both; it returns the weighed loss.
func (l *distLink) trainPart(ctx context.Context, p *engine.Program, pos, neg graph.Pairs, seed uint64, share float64) (float64, error) {
	if err := p.Forward(ctx, engine.Mode{Train: true, Seed: seed}); err != nil {
		return 0, err
	}
	loss, err := l.dec.StepShare(ctx, p.Output(), p.OutputGrad(), pos, neg, seed, linkrun.Share{Weight: share})
	if err != nil {
		return 0, err
	}
	return loss, p.Backward(ctx)
}

// ScorePairs implements train.LinkScorer: the model's output rows of the
// pairs' endpoints, each computed by its node's owner and gathered on
// every rank (a collective), then the decoder on every rank alike.
func (m *distMini) ScorePairs(ctx context.Context, pairs graph.Pairs, scores []float64) error {
	if m.link == nil {
		return fmt.Errorf("distmini: pair scores of a run that does not train links (train.task = \"link\")")
	}
	if pairs.Len() == 0 {
		return nil // so on every rank: the pairs are every rank's
	}
	nodes, local, _ := linkrun.EdgeBatch{Pos: pairs}.Local()
	emb, err := m.outputRows(ctx, nodes)
	if err != nil {
		return err
	}
	return m.link.dec.ScoreEmbeddings(ctx, emb, m.link.task.Embedding, local, scores)
}

// PredictOutputs implements train.OutputPredictor: every node's output
// row on every rank (a collective); no hidden layer.
func (m *distMini) PredictOutputs(ctx context.Context) (logits, hidden []float64, width int, err error) {
	logits, err = m.outputRows(ctx, steprun.Iota32(m.e.DS.NumNodes))
	return logits, nil, 0, err
}

// ownOutputs hands use the model's output over this rank's own nodes
// (rows in owned order), dropout off: layer by layer with m.eval, else
// over full-neighbourhood blocks.
func (m *distMini) ownOutputs(ctx context.Context, use func(*tensor.Tensor) error) error {
	if m.eval != nil {
		return m.eval.ownOutputs(ctx, use)
	}
	return m.ownOutputsAll(ctx, use)
}

// outputRows returns the model's output rows of nodes (ascending global
// ids), dropout off, on every rank: each rank computes its own nodes'
// rows and sends those of nodes to every other (a collective).
func (m *distMini) outputRows(ctx context.Context, nodes []int32) ([]float64, error) {
	model := m.e.Model
	w := int(model.Ops[model.Outputs[0]].Shape[1])
	var own []float64
	err := m.ownOutputs(ctx, func(t *tensor.Tensor) error {
		var err error
		own, err = engine.DownloadFloats(m.e.Be, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	me := int32(m.c.Rank())
	counts := make([]int, m.c.Size())
	var send []float64
	for _, v := range nodes {
		o := m.owner[v]
		if counts[o]++; o == me {
			r := int(m.row[v])
			send = append(send, own[r*w:(r+1)*w]...)
		}
	}
	all, err := comm.AllGather(ctx, m.c, "eval-outputs", encodeRows(m.e.DT, send))
	if err != nil {
		return nil, err
	}
	rows := make([][]float64, len(all))
	for j, b := range all {
		if rows[j], err = decodeRows[float64](m.e.DT, b); err != nil {
			return nil, err
		}
		if len(rows[j]) != counts[j]*w {
			return nil, fmt.Errorf("rank %d sent %d output values for %d rows of %d", j, len(rows[j]), counts[j], w)
		}
	}
	out := make([]float64, 0, len(nodes)*w)
	next := make([]int, len(rows))
	for _, v := range nodes {
		o, k := m.owner[v], next[m.owner[v]]
		out = append(out, rows[o][k*w:(k+1)*w]...)
		next[o]++
	}
	return out, nil
}
