package train

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/backend/sim"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/plugins/wasm"
)

// stepper computes the gradients of one optimizer step and the predictions
// of every node; the loop owns the optimizer, evaluation and bookkeeping.
type stepper interface {
	// epoch runs one epoch: for every batch it leaves the batch's
	// gradients in params() and calls update (the optimizer step). It
	// returns the epoch's loss (the mean over its batches).
	epoch(ctx context.Context, seed uint64, update func() error) (float64, error)
	// predict writes the predicted class of every node (dropout off).
	predict(ctx context.Context, pred []int32) error
	params() *engine.Params
	release()
}

// stepEnv is what every stepper is built from.
type stepEnv struct {
	be    backend.Backend
	dt    tensor.DType
	tier  tensor.Tier
	model *ir.Graph
	ds    *graph.Dataset
	feats []float32
	dim   int
	adjs  *adjacencies
	seed  uint64
	wasm  wasm.Options // for the cost models (memory estimate)
}

// fullGraph runs every step over the whole graph with one program.
type fullGraph struct {
	be               backend.Backend
	prog             *engine.Program
	labels, trainIdx *tensor.Tensor
	predT            *tensor.Tensor
}

func newFullGraph(e stepEnv) (*fullGraph, error) {
	graphs, err := bindGraphs(e.model, e.adjs, forPurpose(e.be, backend.PurposeTopology), e.dt, e.tier)
	if err != nil {
		return nil, err
	}
	x, err := uploadFloat32s(forPurpose(e.be, backend.PurposeFeatures), e.feats, []int{e.ds.NumNodes, e.dim}, e.dt, e.tier)
	if err != nil {
		return nil, fmt.Errorf("upload features: %w", err)
	}
	// The program's own transfers are its parameters' upload (and
	// snapshots); activations never leave the device.
	prog, err := engine.Compile(e.model, engine.Env{Backend: forPurpose(e.be, backend.PurposeParameters), DType: e.dt, Tier: e.tier, Graphs: graphs, Input: x}, e.seed)
	if err != nil {
		return nil, err
	}
	f := &fullGraph{be: e.be, prog: prog}
	labels := forPurpose(e.be, backend.PurposeLabels)
	if f.labels, err = uploadInt32s(labels, e.ds.Labels, e.tier); err != nil {
		prog.Release()
		return nil, err
	}
	if f.trainIdx, err = uploadInt32s(labels, e.ds.Train, e.tier); err != nil {
		prog.Release()
		return nil, err
	}
	return f, nil
}

func (f *fullGraph) epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	if err := f.prog.Forward(ctx, engine.Mode{Train: true, Seed: seed}); err != nil {
		return 0, err
	}
	loss, err := f.be.SoftmaxCrossEntropy(f.prog.Output(), f.labels, f.trainIdx, f.prog.OutputGrad())
	if err != nil {
		return 0, fmt.Errorf("loss: %w", err)
	}
	if err := f.prog.Backward(ctx); err != nil {
		return 0, err
	}
	return loss, update()
}

func (f *fullGraph) predict(ctx context.Context, pred []int32) error {
	if err := f.prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	return argmaxInto(f.be, f.prog.Output(), pred)
}

func (f *fullGraph) params() *engine.Params { return f.prog.ParamSet() }

func (f *fullGraph) release() { f.prog.Release() }

// forPurpose returns a view of be whose transfers a simulated backend
// counts under purpose p; other backends are returned as they are.
func forPurpose(be backend.Backend, p string) backend.Backend {
	if sb, ok := be.(*sim.Backend); ok {
		return sb.ForPurpose(p)
	}
	return be
}

// argmaxInto writes the argmax of every row of out into pred.
func argmaxInto(be backend.Backend, out *tensor.Tensor, pred []int32) error {
	if len(pred) != out.Rows() {
		return fmt.Errorf("predictions for %d rows, want %d", out.Rows(), len(pred))
	}
	t, err := be.Alloc(tensor.Int32, []int{out.Rows()}, out.Tier())
	if err != nil {
		return err
	}
	defer be.Release(t)
	if err := be.ArgmaxRows(out, t); err != nil {
		return err
	}
	return forPurpose(be, backend.PurposeActivations).Download(t, pred)
}

func uploadInt32s(be backend.Backend, v []int32, tier tensor.Tier) (*tensor.Tensor, error) {
	t, err := be.Alloc(tensor.Int32, []int{len(v)}, tier)
	if err != nil {
		return nil, err
	}
	return t, be.Upload(t, v)
}

// phasePeaks measures peak memory per phase of the loop (training steps,
// evaluations) on a backend that can reset its peak, and the peak of the
// whole run so far.
type phasePeaks struct {
	be               backend.Backend
	resettable       interface{ ResetPeak() }
	all, train, eval map[tensor.Tier]int64
}

func newPhasePeaks(be backend.Backend) *phasePeaks {
	p := &phasePeaks{be: be, all: be.Stats().Peak, train: map[tensor.Tier]int64{}, eval: map[tensor.Tier]int64{}}
	p.resettable, _ = be.(interface{ ResetPeak() })
	return p
}

// start begins a phase.
func (p *phasePeaks) start() {
	if p.resettable != nil {
		p.resettable.ResetPeak()
	}
}

// end closes a phase, folding its peak into into and into the run's.
func (p *phasePeaks) end(into map[tensor.Tier]int64) {
	for t, v := range p.be.Stats().Peak {
		if p.resettable != nil {
			into[t] = max(into[t], v)
		}
		p.all[t] = max(p.all[t], v)
	}
}
