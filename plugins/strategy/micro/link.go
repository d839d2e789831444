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
// the graph's nodes are partitioned once into K micro-batches (the
// [partition] plugin over the full-neighbour blocks of every node), and
// every epoch is one microsplit.LinkStep over them: each micro-batch
// computes its nodes' embeddings, the decoder scores every training edge
// and its negatives over all of them, and each micro-batch runs its
// backward from its nodes' gradients. The optimizer steps once: full-graph
// link training's step, to float rounding.
type microLink struct {
	*steprun.Runner
	task   *train.LinkTask
	dec    *linkrun.Decoder
	params *engine.Params // the model's and the decoder's
	micro  []microsplit.MicroBatch
	inputs int // the micro-batches' input rows, summed
	nodes  int
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
	mbs, _, err := s.Split(ctx, whole, k)
	if err != nil {
		return nil, err
	}
	inputs := 0
	for _, mb := range mbs {
		inputs += len(mb.Blocks[0].Src)
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
	return &microLink{Runner: r, task: e.Link, dec: dec, params: ps, micro: mbs, inputs: inputs, nodes: n}, nil
}

// Epoch implements train.Stepper: every training edge against its
// negatives, drawn afresh from seed, in one step over the micro-batches.
func (m *microLink) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	neg, err := m.task.TrainNegatives(ctx, seed)
	if err != nil {
		return 0, err
	}
	if err := m.params.ZeroGrads(); err != nil {
		return 0, err
	}
	e := m.Env
	step := microsplit.LinkStep{Micro: m.micro, Rows: m.nodes, Width: m.task.Embedding, Dec: m.dec, Be: e.Be, DT: e.DT, Tier: e.Tier,
		Bind: func(_ context.Context, j int) (*steprun.Bound, error) {
			return m.Bind(m.micro[j].Blocks, steprun.FeatRows{}, nil, false)
		},
		Release: func(bb *steprun.Bound) { bb.Release(e) }}
	loss, err := step.Run(ctx, m.task.Split.Train, neg, seed, 1)
	if err != nil {
		return 0, err
	}
	return loss, update()
}

// ScorePairs implements train.LinkScorer: every node's embedding over its
// full neighbourhood (the runner's evaluation chunks), then the decoder.
func (m *microLink) ScorePairs(ctx context.Context, pairs graph.Pairs, scores []float64) error {
	return m.dec.ScoreOver(ctx, m.Runner, pairs, scores)
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

// redundancy is Betty's redundancy: the micro-batches' input rows summed,
// over the graph's nodes (the whole batch's inputs).
func (m *microLink) redundancy() float64 { return float64(m.inputs) / float64(m.nodes) }

// ReportResult implements train.ResultReporter.
func (m *microLink) ReportResult(res *train.Result) {
	res.Partitioner = m.partitioner
	res.SetFigures("micro", &options.SplitFigures{MicroBatches: len(m.micro), Redundancy: m.redundancy()})
}
