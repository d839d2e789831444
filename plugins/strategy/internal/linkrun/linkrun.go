// Package linkrun is the link-prediction step the strategies share (part
// of the internal kit of plugins/strategy): the decoder of a link task
// run over the embeddings a strategy's model computed, the loss of its
// positive and negative pairs, and the gradient it sends back into the
// embeddings.
package linkrun

import (
	"context"
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/core/train"
)

// decoderSeed separates the decoder's parameter initialisation and
// dropout from the model's, which use the run's seed.
const decoderSeed = 0xdec0de5eed

// Decoder runs a link task's decoder on one backend. Its parameters are
// its own (Params); the strategy joins them with the model's for the
// optimizer (engine.JoinParams).
type Decoder struct {
	task   *train.LinkTask
	be     backend.Backend
	dt     tensor.DType
	tier   tensor.Tier
	params *engine.Params
}

// New allocates and initialises the decoder's parameters from seed.
func New(task *train.LinkTask, be backend.Backend, dt tensor.DType, tier tensor.Tier, seed uint64) (*Decoder, error) {
	ps, err := engine.NewParams(task.Decoder, backend.ForPurpose(be, backend.PurposeParameters), dt, tier, seed^decoderSeed)
	if err != nil {
		return nil, fmt.Errorf("decoder %q: %w", task.DecoderName, err)
	}
	return &Decoder{task: task, be: be, dt: dt, tier: tier, params: ps}, nil
}

// Params are the decoder's parameters.
func (d *Decoder) Params() *engine.Params { return d.params }

// Release frees the parameters.
func (d *Decoder) Release() { d.params.Release() }

// JoinParams returns the model's parameters and the decoder's as one set.
func (d *Decoder) JoinParams(model *engine.Params) (*engine.Params, error) {
	return engine.JoinParams(model, d.params)
}

// PairGraph is the graph of pairs the decoder reads: n rows, one entry per
// pair (row Dst[i] lists Src[i]), grouped by destination and in pair
// order within a row; Order[e] is the pair of entry e.
func PairGraph(n int, p graph.Pairs) (*graph.CSR, []int32) {
	indptr := make([]int64, n+1)
	for _, v := range p.Dst {
		indptr[v+1]++
	}
	for i := range n {
		indptr[i+1] += indptr[i]
	}
	next := make([]int64, n)
	copy(next, indptr[:n])
	cols := make([]int32, len(p.Src))
	order := make([]int32, len(p.Src))
	for i, v := range p.Dst {
		e := next[v]
		next[v]++
		cols[e], order[e] = p.Src[i], int32(i)
	}
	return graph.MakeCSR(n, n, indptr, cols), order
}

// bound is the decoder bound to one set of pairs over embeddings h.
type bound struct {
	prog   *engine.Program
	graphs map[string]*engine.Graph
	order  []int32
	be     backend.Backend
}

func (b *bound) release() {
	b.prog.Release()
	train.ReleaseGraphs(b.be, b.graphs)
}

// bind binds the decoder to pairs (row ids of h) over the embeddings h:
// for training (the input's gradient), or for inference.
func (d *Decoder) bind(h *tensor.Tensor, pairs graph.Pairs, training bool) (*bound, error) {
	if err := checkPairs(pairs, h.Rows()); err != nil {
		return nil, err
	}
	csr, order := PairGraph(h.Rows(), pairs)
	topo := backend.ForPurpose(d.be, backend.PurposeTopology)
	graphs, err := train.BindGraphs(d.task.Decoder, &train.Adjacencies{Adj: csr, AdjSelf: csr}, topo, d.dt, d.tier)
	if err != nil {
		return nil, fmt.Errorf("decoder %q: %w", d.task.DecoderName, err)
	}
	env := engine.Env{Backend: backend.ForPurpose(d.be, backend.PurposeActivations), DType: d.dt, Tier: d.tier, Graphs: graphs, Input: h,
		InputGrad: training, Inference: !training}
	prog, err := engine.Bind(d.task.Decoder, env, d.params)
	if err != nil {
		train.ReleaseGraphs(topo, graphs)
		return nil, fmt.Errorf("decoder %q: %w", d.task.DecoderName, err)
	}
	return &bound{prog: prog, graphs: graphs, order: order, be: topo}, nil
}

// checkPairs refuses pairs whose ids are not rows of the embeddings.
func checkPairs(p graph.Pairs, rows int) error {
	if len(p.Src) != len(p.Dst) {
		return fmt.Errorf("linkrun: %d sources and %d destinations", len(p.Src), len(p.Dst))
	}
	for i := range p.Src {
		if uint(p.Src[i]) >= uint(rows) || uint(p.Dst[i]) >= uint(rows) {
			return fmt.Errorf("linkrun: pair %d (%d, %d) is outside the %d embeddings", i, p.Src[i], p.Dst[i], rows)
		}
	}
	return nil
}

// Step scores the positive pairs pos and the negatives neg (row ids of h;
// neg holds len(neg)/len(pos) negatives per positive, positive i's at
// [i*k, (i+1)*k)), computes the task's loss and writes its gradient with
// respect to h into dh. It returns the loss.
func (d *Decoder) Step(ctx context.Context, h, dh *tensor.Tensor, pos, neg graph.Pairs, seed uint64) (float64, error) {
	return d.StepShare(ctx, h, dh, pos, neg, seed, Share{Weight: 1})
}

// Share is how one part of a step's pairs (a micro-batch's, a rank's)
// counts in the step: its loss and every gradient are weighed by Weight
// (its share of the step's positives), and with Accumulate the decoder's
// parameter gradients add to those of the parts before it.
type Share struct {
	Weight     float64
	Accumulate bool
}

// StepShare is Step for one part of a step: the loss and the gradients
// (into dh and the decoder's parameters) weighed by sh.Weight, the
// parameter gradients accumulated when sh.Accumulate is set. It returns
// the weighed loss.
func (d *Decoder) StepShare(ctx context.Context, h, dh *tensor.Tensor, pos, neg graph.Pairs, seed uint64, sh Share) (float64, error) {
	b, err := d.bind(h, pos.Append(neg), true)
	if err != nil {
		return 0, err
	}
	defer b.release()
	if err := b.prog.Forward(ctx, engine.Mode{Train: true, Seed: seed ^ decoderSeed, AccumulateGrads: sh.Accumulate}); err != nil {
		return 0, err
	}
	var loss float64
	if d.task.Loss == "margin" {
		loss, err = d.marginLoss(b, pos.Len(), neg.Len())
	} else {
		loss, err = d.bceLoss(b, pos.Len())
	}
	if err != nil {
		return 0, err
	}
	if sh.Weight != 1 {
		if err := d.be.Axpby(0, b.prog.OutputGrad(), sh.Weight, b.prog.OutputGrad()); err != nil {
			return 0, err
		}
	}
	if err := b.prog.Backward(ctx); err != nil {
		return 0, err
	}
	g, err := b.prog.InputGrad()
	if err != nil {
		return 0, err
	}
	return loss * sh.Weight, d.be.Copy(dh, g)
}

// bceLoss is the mean binary cross-entropy of the bound pairs' logits,
// the first nPos of them positives (target 1), the others 0; its
// gradient goes to the program's output gradient.
func (d *Decoder) bceLoss(b *bound, nPos int) (float64, error) {
	targets := make([]float32, len(b.order))
	idx := make([]int32, len(b.order))
	for e, i := range b.order {
		if int(i) < nPos {
			targets[e] = 1
		}
		idx[e] = int32(e)
	}
	be := backend.ForPurpose(d.be, backend.PurposeLabels)
	t, err := train.UploadFloat32s(be, targets, []int{len(targets), 1}, d.dt, d.tier)
	if err != nil {
		return 0, err
	}
	defer be.Release(t)
	it, err := train.UploadInt32s(be, idx, d.tier)
	if err != nil {
		return 0, err
	}
	defer be.Release(it)
	return d.be.TargetLoss(backend.LossBCE, b.prog.Output(), t, it, b.prog.OutputGrad())
}

// marginLoss is the mean of max(0, margin - s(p) + s(n)) over each
// positive p and its negatives n (MarginRankingLoss with target 1),
// computed on the host from the downloaded scores.
func (d *Decoder) marginLoss(b *bound, nPos, nNeg int) (float64, error) {
	if nPos == 0 || nNeg%nPos != 0 {
		return 0, fmt.Errorf("linkrun: margin loss needs the same number of negatives per positive (%d negatives, %d positives)", nNeg, nPos)
	}
	out, err := engine.DownloadFloats(d.be, b.prog.Output())
	if err != nil {
		return 0, err
	}
	s := make([]float64, len(out)) // by pair
	at := make([]int32, len(out))  // the entry of each pair
	for e, i := range b.order {
		s[i], at[i] = out[e], int32(e)
	}
	k, m := nNeg/nPos, d.task.Margin
	n := float64(nNeg)
	grad := make([]float64, len(out))
	var loss float64
	for j := range nNeg {
		p, q := j/k, nPos+j
		if v := m - s[p] + s[q]; v > 0 {
			loss += v
			grad[at[p]] -= 1 / n
			grad[at[q]] += 1 / n
		}
	}
	if math.IsNaN(loss) {
		return math.NaN(), nil
	}
	return loss / n, engine.UploadFloats(d.be, b.prog.OutputGrad(), grad)
}

// Score writes the decoder's score of every pair (row ids of h) into
// scores, with dropout off.
func (d *Decoder) Score(ctx context.Context, h *tensor.Tensor, pairs graph.Pairs, scores []float64) error {
	if len(scores) != pairs.Len() {
		return fmt.Errorf("linkrun: %d scores for %d pairs", len(scores), pairs.Len())
	}
	if pairs.Len() == 0 {
		return nil
	}
	b, err := d.bind(h, pairs, false)
	if err != nil {
		return err
	}
	defer b.release()
	if err := b.prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	out, err := engine.PeekFloats(d.be, b.prog.Output())
	if err != nil {
		return err
	}
	for e, i := range b.order {
		scores[i] = out[e]
	}
	return nil
}

// ScoreEmbeddings writes the scores of pairs (node ids) from emb, every
// node's embedding as a row of width values on the host (a strategy's
// chunked evaluation): uploaded once, then Score.
func (d *Decoder) ScoreEmbeddings(ctx context.Context, emb []float64, width int, pairs graph.Pairs, scores []float64) error {
	if width <= 0 || len(emb)%width != 0 {
		return fmt.Errorf("linkrun: %d embedding values are no rows of width %d", len(emb), width)
	}
	be := backend.ForPurpose(d.be, backend.PurposeActivations)
	h, err := be.Alloc(d.dt, []int{len(emb) / width, width}, d.tier)
	if err != nil {
		return err
	}
	defer be.Release(h)
	if err := engine.UploadFloats(be, h, emb); err != nil {
		return err
	}
	return d.Score(ctx, h, pairs, scores)
}
