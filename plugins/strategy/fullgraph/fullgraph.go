// Package fullgraph is strategy.fullgraph: every step over the whole
// graph with one program.
package fullgraph

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/registry"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
)

// FullGraph is strategy.fullgraph: every step runs over the whole graph
// with one program, everything resident on the compute tier. Its section,
// [fullgraph], holds micro_batches: split into K > 1 micro-batches, the
// run is Betty's strategy.micro.
type FullGraph struct {
	options.Split
	SparseInput bool `toml:"sparse_input" hash:"omitempty" doc:"multiply sparse input features (under 10% non-zero, e.g. bag-of-words) by the first layer as SpMM over their non-zeros instead of a dense GEMM: about 10x faster on Cora and CiteSeer, the same results to float rounding (another summation order); off by default, as the published results were made dense (docs/decisions.md)"`
}

var (
	_ train.Strategy      = (*FullGraph)(nil)
	_ train.Resolver      = (*FullGraph)(nil)
	_ train.ConfigChecker = (*FullGraph)(nil)
)

// CheckConfig implements train.ConfigChecker: a [partition] without
// micro-batches is read by nothing.
func (*FullGraph) CheckConfig(cfg *config.Config) error {
	return options.CheckPartitionUsed(cfg)
}

// StrataModule implements registry.Module.
func (*FullGraph) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.fullgraph", New: func() registry.Module { return &FullGraph{Split: options.DefaultSplit()} },
		Doc: "full-graph training: one program over the whole graph, one optimizer step per epoch (the default train.mode)", Default: true}
}

// Uses implements train.Strategy: nothing beyond the model.
func (*FullGraph) Uses() train.Uses {
	return train.Uses{HalfFeatures: true, Float64: true, Checkpoints: true, EdgeWeights: true, Link: true}
}

// Resolve implements train.Resolver: a full-graph run split into
// micro-batches (micro_batches > 1 or "auto") is Betty's strategy.micro,
// which reads K from this section (microsplit.OptionsOf).
func (f *FullGraph) Resolve(*config.Config) string {
	if f.Micro() {
		return "strategy.micro"
	}
	return ""
}

// NewStepper implements train.Strategy.
func (f *FullGraph) NewStepper(_ context.Context, env *train.Env) (train.Stepper, error) {
	if env.Link != nil {
		return newFullGraphLink(steprun.EnvOf(env), f.SparseInput)
	}
	return newFullGraph(steprun.EnvOf(env), f.SparseInput)
}

// fullGraph runs every step over the whole graph with one program.
type fullGraph struct {
	be                  backend.Backend
	prog                *engine.Program
	x, labels, trainIdx *tensor.Tensor // labels: the targets (train.UploadTargets)
	kind                graph.TargetKind
	graphs              map[string]*engine.Graph
	model               *ir.Graph
}

// newFullGraph binds the model over the whole graph; sparse lets the
// program multiply sparse input features as SpMM (engine.Env.SparseInput).
func newFullGraph(e steprun.Env, sparse bool) (*fullGraph, error) {
	graphs, err := train.BindGraphs(e.Model, e.Adjs, backend.ForPurpose(e.Be, backend.PurposeTopology), e.DT, e.Tier)
	if err != nil {
		return nil, err
	}
	x, err := steprun.PlaceRows(backend.ForPurpose(e.Be, backend.PurposeFeatures), e.AllRows(), e.Half, []int{e.DS.NumNodes, e.Dim}, e.DT, e.Tier)
	if err != nil {
		return nil, fmt.Errorf("upload features: %w", err)
	}
	// The program's own transfers are its parameters' upload (and
	// snapshots); activations never leave the device.
	prog, err := engine.Compile(e.Model, engine.Env{Backend: backend.ForPurpose(e.Be, backend.PurposeParameters), DType: e.DT, Tier: e.Tier, Graphs: graphs, Input: x, SparseInput: sparse}, e.Seed)
	if err != nil {
		return nil, err
	}
	f := &fullGraph{be: e.Be, prog: prog, x: x, graphs: graphs, model: e.Model, kind: e.DS.Kind}
	labels := backend.ForPurpose(e.Be, backend.PurposeLabels)
	if f.labels, err = train.UploadTargets(labels, e.DS, nil, e.DT, e.Tier); err != nil {
		prog.Release()
		return nil, err
	}
	if f.trainIdx, err = train.UploadInt32s(labels, e.DS.Train, e.Tier); err != nil {
		prog.Release()
		return nil, err
	}
	return f, nil
}

// Epoch implements train.Stepper.
func (f *fullGraph) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	if err := f.prog.Forward(ctx, engine.Mode{Train: true, Seed: seed}); err != nil {
		return 0, err
	}
	loss, err := train.Loss(f.be, f.kind, f.prog.Output(), f.labels, f.trainIdx, f.prog.OutputGrad())
	if err != nil {
		return 0, err
	}
	if err := f.prog.Backward(ctx); err != nil {
		return 0, err
	}
	return loss, update()
}

// Predict implements train.Stepper.
func (f *fullGraph) Predict(ctx context.Context, pred []int32) error {
	if err := f.prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	return train.ArgmaxInto(f.be, f.prog.Output(), pred)
}

// PredictScores implements train.Scorer: the logits of rows come from
// the forward pass that predicts the classes.
func (f *fullGraph) PredictScores(ctx context.Context, pred, rows []int32, logits []float64) error {
	if err := f.Predict(ctx, pred); err != nil {
		return err
	}
	out, err := engine.PeekFloats(f.be, f.prog.Output()) // an observation: uncounted
	if err != nil {
		return err
	}
	train.CopyScoreRows(out, 0, len(pred), f.prog.Output().Cols(), rows, logits)
	return nil
}

// PredictOutputs implements train.OutputPredictor.
func (f *fullGraph) PredictOutputs(ctx context.Context) (logits, hidden []float64, width int, err error) {
	if err := f.prog.Forward(ctx, engine.Mode{}); err != nil {
		return nil, nil, 0, err
	}
	if logits, err = engine.DownloadFloats(f.be, f.prog.Output()); err != nil {
		return nil, nil, 0, err
	}
	if h, ok := f.model.LastHidden(); ok {
		t := f.prog.Value(h)
		if hidden, err = engine.DownloadFloats(f.be, t); err != nil {
			return nil, nil, 0, err
		}
		width = t.Shape()[len(t.Shape())-1]
	}
	return logits, hidden, width, nil
}

// ReportResult implements train.ResultReporter: the bytes the program
// holds by the engine's own accounting.
func (f *fullGraph) ReportResult(res *train.Result) { res.ProgramBytes = f.prog.Allocated().Bytes() }

// Params implements train.Stepper.
func (f *fullGraph) Params() *engine.Params { return f.prog.ParamSet() }

// Release implements train.Stepper.
func (f *fullGraph) Release() {
	f.prog.Release()
	f.be.Release(f.x)
	train.ReleaseGraphs(f.be, f.graphs)
	f.be.Release(f.labels)
	f.be.Release(f.trainIdx)
}

func init() { registry.Register(new(FullGraph)) }
