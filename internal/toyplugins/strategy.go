package toyplugins

import (
	"context"
	"fmt"

	"strata/core/engine"
	"strata/core/registry"
	"strata/core/tensor"
	"strata/core/train"
)

// Whole is strategy.toy-whole: full-graph training written against the
// contract alone (one program, the loss over the training nodes).
type Whole struct{}

var _ train.Strategy = (*Whole)(nil)

// StrataModule implements registry.Module.
func (*Whole) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.toy-whole", New: func() registry.Module { return new(Whole) },
		Doc: "toy: full-graph training in one small file"}
}

// Uses implements train.Strategy.
func (*Whole) Uses() train.Uses { return train.Uses{} }

// NewStepper implements train.Strategy.
func (*Whole) NewStepper(_ context.Context, e *train.Env) (train.Stepper, error) {
	graphs, err := train.BindGraphs(e.Model, e.Adjs, e.Backend, e.DType, e.Tier)
	if err != nil {
		return nil, err
	}
	x, err := train.UploadFloat32s(e.Backend, e.Features, []int{e.Dataset.NumNodes, e.Dim}, e.DType, e.Tier)
	if err != nil {
		return nil, err
	}
	prog, err := engine.Compile(e.Model, engine.Env{Backend: e.Backend, DType: e.DType, Tier: e.Tier, Graphs: graphs, Input: x}, e.Seed)
	if err != nil {
		return nil, err
	}
	w := &whole{e: e, prog: prog, x: x, graphs: graphs}
	if w.labels, err = train.UploadInt32s(e.Backend, e.Dataset.Labels, e.Tier); err == nil {
		w.rows, err = train.UploadInt32s(e.Backend, e.Dataset.Train, e.Tier)
	}
	if err != nil {
		prog.Release()
		return nil, err
	}
	return w, nil
}

type whole struct {
	e               *train.Env
	prog            *engine.Program
	x, labels, rows *tensor.Tensor
	graphs          map[string]*engine.Graph
}

func (w *whole) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	if err := w.prog.Forward(ctx, engine.Mode{Train: true, Seed: seed}); err != nil {
		return 0, err
	}
	loss, err := w.e.Backend.SoftmaxCrossEntropy(w.prog.Output(), w.labels, w.rows, w.prog.OutputGrad())
	if err != nil {
		return 0, fmt.Errorf("loss: %w", err)
	}
	if err := w.prog.Backward(ctx); err != nil {
		return 0, err
	}
	return loss, update()
}

func (w *whole) Predict(ctx context.Context, pred []int32) error {
	if err := w.prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	return train.ArgmaxInto(w.e.Backend, w.prog.Output(), pred)
}

func (w *whole) Params() *engine.Params { return w.prog.ParamSet() }

func (w *whole) Release() {
	w.prog.Release()
	w.e.Backend.Release(w.x)
	train.ReleaseGraphs(w.e.Backend, w.graphs)
	w.e.Backend.Release(w.labels)
	w.e.Backend.Release(w.rows)
}

func init() { registry.Register(new(Whole)) }
