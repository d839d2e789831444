package microsplit

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/plugins/strategy/internal/linkrun"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
)

// CheckLinkAuto refuses micro_batches = "auto" for train.task = "link":
// Betty's memory estimate sizes micro-batches of output nodes and does not
// model a link step's pairs (their decoder and its pair graph).
func CheckLinkAuto(cfg *config.Config) error {
	if cfg.Train.Task != config.TaskLink || !options.SplitOf(cfg).AutoK() {
		return nil
	}
	return cfg.KeyError(fmt.Sprintf("%s = \"auto\" sizes micro-batches of output nodes by Betty's memory estimate, which does not model the pairs of train.task = \"link\"; give a number of micro-batches", options.SplitKeyName(cfg)), options.SplitKey(cfg)...)
}

// LinkStep is one link-prediction step split into micro-batches of its
// outputs (the endpoints of its pairs): the decoder needs both endpoints
// of a pair, whatever their micro-batches, so the step runs in three
// phases. Every micro-batch's forward writes its rows of the step's
// embeddings H (host); the decoder scores the pairs over H, giving the
// loss, the decoder's gradients and dL/dH; every micro-batch then runs its
// forward again and its backward from its rows of dL/dH, accumulating the
// model's gradients. Dropout follows the nodes, so both forwards draw the
// same masks and the step is the whole step's to float rounding; the
// peak is one micro-batch's (as Betty's for node batches) plus H and
// dL/dH, at the price of a second forward.
type LinkStep struct {
	Micro []MicroBatch // the step's micro-batches (Rows: their outputs' rows)
	Rows  int          // the step's outputs
	Width int          // the embedding width (the model's output)
	// Bind binds micro-batch j for training; Release frees it.
	Bind    func(ctx context.Context, j int) (*steprun.Bound, error)
	Release func(*steprun.Bound)
	Dec     *linkrun.Decoder
	Be      backend.Backend
	DT      tensor.DType
	Tier    tensor.Tier
}

// Run runs the step on pos and neg (rows of the step's outputs) with the
// dropout seed seed, its loss and gradients weighed by share (the step's
// share of a larger step; 1 otherwise) and accumulated into the
// gradients. It returns the weighed loss.
func (s *LinkStep) Run(ctx context.Context, pos, neg graph.Pairs, seed uint64, share float64) (float64, error) {
	h := make([]float64, s.Rows*s.Width)
	for j := range s.Micro {
		if err := s.pass(ctx, j, seed, h, nil); err != nil {
			return 0, fmt.Errorf("micro-batch %d, forward: %w", j, err)
		}
	}
	loss, dh, err := s.decode(ctx, h, pos, neg, seed, share)
	if err != nil {
		return 0, err
	}
	for j := range s.Micro {
		if err := s.pass(ctx, j, seed, nil, dh); err != nil {
			return 0, fmt.Errorf("micro-batch %d, backward: %w", j, err)
		}
	}
	return loss, nil
}

// pass runs micro-batch j's forward and either writes its output rows
// into h (first phase) or runs its backward from its rows of dh.
func (s *LinkStep) pass(ctx context.Context, j int, seed uint64, h, dh []float64) error {
	mb := &s.Micro[j]
	bb, err := s.Bind(ctx, j)
	if err != nil {
		return err
	}
	defer s.Release(bb)
	p, w := bb.Prog, s.Width
	if err := p.Forward(ctx, engine.Mode{Train: true, Seed: seed, AccumulateGrads: dh != nil}); err != nil {
		return err
	}
	if dh == nil {
		out, err := engine.DownloadFloats(s.Be, p.Output())
		if err != nil {
			return err
		}
		if len(out) != len(mb.Rows)*w {
			return fmt.Errorf("%d output values for %d rows of width %d", len(out), len(mb.Rows), w)
		}
		for i, r := range mb.Rows {
			copy(h[int(r)*w:int(r+1)*w], out[i*w:(i+1)*w])
		}
		return nil
	}
	g := make([]float64, len(mb.Rows)*w)
	for i, r := range mb.Rows {
		copy(g[i*w:(i+1)*w], dh[int(r)*w:int(r+1)*w])
	}
	if err := engine.UploadFloats(s.Be, p.OutputGrad(), g); err != nil {
		return err
	}
	return p.Backward(ctx)
}

// decode runs the decoder over the embeddings h: the weighed loss, the
// decoder's accumulated gradients and dL/dh.
func (s *LinkStep) decode(ctx context.Context, h []float64, pos, neg graph.Pairs, seed uint64, share float64) (float64, []float64, error) {
	be := backend.ForPurpose(s.Be, backend.PurposeActivations)
	shape := []int{s.Rows, s.Width}
	ht, err := be.Alloc(s.DT, shape, s.Tier)
	if err != nil {
		return 0, nil, err
	}
	defer be.Release(ht)
	dt, err := be.Alloc(s.DT, shape, s.Tier)
	if err != nil {
		return 0, nil, err
	}
	defer be.Release(dt)
	if err := engine.UploadFloats(be, ht, h); err != nil {
		return 0, nil, err
	}
	loss, err := s.Dec.StepShare(ctx, ht, dt, pos, neg, seed, linkrun.Share{Weight: share, Accumulate: true})
	if err != nil {
		return 0, nil, fmt.Errorf("decoder: %w", err)
	}
	dh, err := engine.DownloadFloats(be, dt)
	return loss, dh, err
}
