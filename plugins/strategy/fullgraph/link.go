package fullgraph

import (
	"context"
	"errors"

	"strata/core/engine"
	"strata/core/graph"
	"strata/core/train"
	"strata/plugins/strategy/internal/linkrun"
	"strata/plugins/strategy/internal/steprun"
)

// fullGraphLink trains link prediction over the whole graph: one forward
// of the model gives every node's embedding, the decoder scores every
// training edge and its fresh negatives, and one backward follows.
type fullGraphLink struct {
	*fullGraph
	task   *train.LinkTask
	dec    *linkrun.Decoder
	params *engine.Params // the model's and the decoder's
}

var _ train.LinkScorer = (*fullGraphLink)(nil)

func newFullGraphLink(e steprun.Env, sparse bool) (*fullGraphLink, error) {
	f, err := newFullGraph(e, sparse)
	if err != nil {
		return nil, err
	}
	dec, err := linkrun.New(e.Link, e.Be, e.DT, e.Tier, e.Seed)
	if err != nil {
		f.Release()
		return nil, err
	}
	ps, err := dec.JoinParams(f.prog.ParamSet())
	if err != nil {
		dec.Release()
		f.Release()
		return nil, err
	}
	return &fullGraphLink{fullGraph: f, task: e.Link, dec: dec, params: ps}, nil
}

// Epoch implements train.Stepper: every training edge against its
// negatives, drawn afresh from seed.
func (f *fullGraphLink) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	pos := f.task.Split.Train
	neg, err := f.task.TrainNegatives(ctx, seed)
	if err != nil {
		return 0, err
	}
	if err := f.prog.Forward(ctx, engine.Mode{Train: true, Seed: seed}); err != nil {
		return 0, err
	}
	loss, err := f.dec.Step(ctx, f.prog.Output(), f.prog.OutputGrad(), pos, neg, seed)
	if err != nil {
		return 0, err
	}
	if err := f.prog.Backward(ctx); err != nil {
		return 0, err
	}
	return loss, update()
}

// ScorePairs implements train.LinkScorer.
func (f *fullGraphLink) ScorePairs(ctx context.Context, pairs graph.Pairs, scores []float64) error {
	if err := f.prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	return f.dec.Score(ctx, f.prog.Output(), pairs, scores)
}

// Predict implements train.Stepper: a link task predicts no classes.
func (*fullGraphLink) Predict(context.Context, []int32) error {
	return errors.New("fullgraph: a link-prediction model predicts pair scores, not node classes")
}

// Params implements train.Stepper: the model's and the decoder's.
func (f *fullGraphLink) Params() *engine.Params { return f.params }

// Release implements train.Stepper.
func (f *fullGraphLink) Release() {
	f.dec.Release()
	f.fullGraph.Release()
}
