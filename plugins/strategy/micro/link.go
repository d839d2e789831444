package micro

import (
	"context"
	"errors"
	"fmt"

	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/strategy/internal/linkrun"
	"strata/plugins/strategy/internal/microsplit"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
)

// microLink trains link prediction as Betty splits full-graph training:
// the graph's nodes are partitioned once into K parts (the [partition]
// plugin over the full-neighbour blocks of every node); every epoch each
// training edge and its negatives go to the part of the edge's source,
// and each part's micro-batch computes the embeddings of its pairs'
// endpoints over their full neighbourhoods. Every micro-batch's loss is
// weighed by its share of the training edges and the gradients
// accumulate into one optimizer step: full-graph link training's step,
// to float rounding (without dropout).
type microLink struct {
	*steprun.Runner
	task   *train.LinkTask
	dec    *linkrun.Decoder
	params *engine.Params // the model's and the decoder's
	whole  []sampling.Block
	part   []int32 // every node's part
	k      int
	inputs []int // input rows per micro-batch, last epoch
	// partitioner is partition.name's module ID, for the result.
	partitioner string
}

var _ train.LinkScorer = (*microLink)(nil)

func newMicroLink(ctx context.Context, cfg *config.Config, e steprun.Env) (*microLink, error) {
	k, n := options.SplitOf(cfg).MicroBatches, e.DS.NumNodes
	if k > n {
		return nil, cfg.KeyError(fmt.Sprintf("%s = %d is more than the graph's %d nodes", options.SplitKeyName(cfg), k, n), options.SplitKey(cfg)...)
	}
	s, err := microsplit.NewSplitter(ctx, cfg, "nodes whose embeddings the training edges read")
	if err != nil {
		return nil, err
	}
	full := sampling.Full{Hops: len(steprun.GraphsPerLayer(e.Model))}
	whole, err := full.Sample(ctx, e.Adjs.Adj, steprun.Iota32(n), 0)
	if err != nil {
		return nil, err
	}
	part, err := s.Parts(ctx, whole, k)
	if err != nil {
		return nil, err
	}
	evalChunks := 1
	if cfg.Devices.MemoryBytes > 0 {
		evalChunks = 2 * k
	}
	r, err := steprun.NewRunner(e, evalChunks)
	if err != nil {
		return nil, err
	}
	dec, err := linkrun.New(e.Link, e.Be, e.DT, e.Tier, e.Seed)
	if err != nil {
		r.Release()
		return nil, err
	}
	ps, err := dec.JoinParams(r.PS)
	if err != nil {
		dec.Release()
		r.Release()
		return nil, err
	}
	return &microLink{Runner: r, task: e.Link, dec: dec, params: ps, whole: whole, part: part, k: k}, nil
}

// Epoch implements train.Stepper: every training edge against its
// negatives, drawn afresh from seed, micro-batch by micro-batch, and one
// optimizer step.
func (m *microLink) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	pos := m.task.Split.Train
	neg, err := m.task.TrainNegatives(ctx, seed)
	if err != nil {
		return 0, err
	}
	pbs, err := microsplit.SplitPairs(m.whole, m.part, m.k, pos, neg)
	if err != nil {
		return 0, err
	}
	if err := m.params.ZeroGrads(); err != nil {
		return 0, err
	}
	m.inputs = m.inputs[:0]
	var loss float64
	for i := range pbs {
		l, err := m.trainMicro(ctx, &pbs[i], seed, float64(pbs[i].Positives)/float64(pos.Len()))
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		m.inputs = append(m.inputs, len(pbs[i].Blocks[0].Src))
		loss += l
	}
	return loss, update()
}

// trainMicro runs one micro-batch: the model's forward over its blocks,
// the decoder's loss of its pairs weighed by share, and the backward of
// both, accumulating into the gradients.
func (m *microLink) trainMicro(ctx context.Context, pb *microsplit.PairBatch, seed uint64, share float64) (float64, error) {
	bb, err := m.Bind(pb.Blocks, steprun.FeatRows{}, nil, false)
	if err != nil {
		return 0, err
	}
	defer bb.Release(m.Env)
	p := bb.Prog
	if err := p.Forward(ctx, engine.Mode{Train: true, Seed: seed, AccumulateGrads: true}); err != nil {
		return 0, err
	}
	loss, err := m.dec.StepShare(ctx, p.Output(), p.OutputGrad(), pb.Pos, pb.Neg, seed, linkrun.Share{Weight: share, Accumulate: true})
	if err != nil {
		return 0, err
	}
	return loss, p.Backward(ctx)
}

// ScorePairs implements train.LinkScorer: every node's embedding over its
// full neighbourhood (the runner's evaluation chunks), then the decoder.
func (m *microLink) ScorePairs(ctx context.Context, pairs graph.Pairs, scores []float64) error {
	emb, _, _, err := m.PredictOutputs(ctx)
	if err != nil {
		return err
	}
	return m.dec.ScoreEmbeddings(ctx, emb, m.task.Embedding, pairs, scores)
}

// Predict implements train.Stepper: a link task predicts no classes.
func (*microLink) Predict(context.Context, []int32) error {
	return errors.New("micro: a link-prediction model predicts pair scores, not node classes")
}

// Params implements train.Stepper: the model's and the decoder's.
func (m *microLink) Params() *engine.Params { return m.params }

// Release implements train.Stepper.
func (m *microLink) Release() {
	m.dec.Release()
	m.Runner.Release()
}

// redundancy is Betty's redundancy of the last epoch: the micro-batches'
// input rows summed, over the graph's nodes (the whole batch's inputs).
func (m *microLink) redundancy() float64 {
	s := 0
	for _, n := range m.inputs {
		s += n
	}
	return float64(s) / float64(len(m.whole[0].Src))
}

// ReportResult implements train.ResultReporter.
func (m *microLink) ReportResult(res *train.Result) {
	res.Partitioner = m.partitioner
	res.SetFigures("micro", &options.SplitFigures{MicroBatches: len(m.inputs), Redundancy: m.redundancy()})
}
