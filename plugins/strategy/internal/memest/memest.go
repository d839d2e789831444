// Package memest is Betty's memory estimate of a training step or an
// evaluation forward on given blocks (costmodel.betty-memory), part of
// the internal kit of plugins/strategy.
package memest

import (
	"context"
	"fmt"
	"math"
	"strata/core/optim"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/modhost"
	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
)

// Betty's memory estimate (Yang et al., ASPLOS 2023, §4.4): before a
// micro-batch runs, count what its training step will hold on the device
// (parameters, features, labels, blocks, hidden values, aggregator
// intermediates, gradients, optimizer state) and let the cost model
// costmodel.betty-memory turn the counts into bytes. The program's buffers
// are counted by the engine (engine.Sizer: the model bound to the
// micro-batch's block shapes by the code of engine.Bind, and its step run,
// on a backend that allocates and computes nothing); the features, labels
// and blocks are counted from the blocks.

// Op codes of costmodel.betty-memory.
const (
	memOpTrain = 0
	memOpInfer = 1
)

// Estimate is the cost model's answer for one batch, in bytes.
type Estimate struct {
	Peak        int64 // everything at once: the step's peak
	Resident    int64 // parameters, gradients, optimizer state (and a cache)
	Data        int64 // input features, labels, blocks
	Activations int64 // values, their gradients, masks, scratch, aggregators
	// Allocations, on a device whose allocator rounds requests up
	// (Estimator.OnDevice), bounds the allocations live at the peak; Peak
	// then includes the allocator's RoundingSlack for them.
	Allocations int64
}

// Estimator estimates the device peak of a model's training steps (and
// evaluation forwards) on given blocks with costmodel.betty-memory. It is
// not safe for concurrent use.
type Estimator struct {
	release    func() // closes cm and its runtime
	Cm         modhost.CostModel
	sizer      *engine.Sizer     // the model's programs, sized by the engine
	layers     []map[string]bool // the graphs each layer reads
	Elt        float64
	inElt      float64 // bytes of an input feature value (2 for 16-bit rows)
	Params     float64 // learnable scalars (engine.Sizer)
	State      float64 // non-learnable state (batch-norm running statistics)
	slots      float64 // optimizer state tensors per parameter
	dim        int     // input features per node
	Resident   float64 // other bytes on the device (a feature cache)
	Gathered   bool    // input rows come from a feature cache on the device
	accumulate bool    // backward adds into the parameter gradients
	edgeIndex  bool    // every bound graph has an edge index (engine.UsesEdgeIndex)
	// dev and mem: the device allocator whose rounding every estimate
	// adds (OnDevice), and its memory when the estimator was set on it.
	dev backend.MemoryCapacity
	mem backend.DeviceMemory
}

// OptimizerSlots returns the state tensors per parameter of an optimizer
// (its module's optim.Module.Slots): Adam's two moments, SGD's velocity
// when it has momentum; 0 for a name no module has (the config refuses it).
func OptimizerSlots(name string, momentum float64) float64 {
	n, _ := optim.Slots(name, optim.Hyper{Momentum: momentum})
	return float64(n)
}

// New loads costmodel.betty-memory for the model of e.
// accumulate says whether backward accumulates into the parameter
// gradients (micro-batches do). Close it when done.
func New(ctx context.Context, e steprun.Env, optimizer string, momentum float64, accumulate bool) (*Estimator, error) {
	cm, release, err := train.LoadCostModel(ctx, e.Host, CostModel)
	if err != nil {
		return nil, fmt.Errorf("memory estimate: %w", err)
	}
	m := &Estimator{
		Cm: cm, release: release,
		Elt:   float64(e.DT.Size()),
		slots: OptimizerSlots(optimizer, momentum), dim: e.Dim, accumulate: accumulate,
	}
	m.layers = steprun.GraphsPerLayer(e.Model)
	if m.sizer, err = engine.NewSizer(e.Model, e.DT); err != nil {
		release()
		return nil, fmt.Errorf("memory estimate: %w", err)
	}
	// 16-bit feature rows (data.feature_dtype): the program reads them as
	// bound, and they take their own bytes per value.
	m.sizer.Input, m.inElt = e.Half, m.Elt
	if e.Half != 0 {
		m.inElt = float64(e.Half.Size())
	}
	m.Params, m.State = float64(m.sizer.Learnable), float64(m.sizer.State)
	m.edgeIndex = engine.UsesEdgeIndex(e.Model)
	return m, nil
}

// OnDevice makes every estimate a bound on what dev's allocator holds at
// the step's peak: the bytes the cost model counts plus what rounding
// each allocation up can add (RoundingSlack) to all the allocations then
// live, counted by Allocations. mem is dev's memory now: its Live
// allocations stay beside every step.
func (m *Estimator) OnDevice(dev backend.MemoryCapacity, mem backend.DeviceMemory) {
	m.dev, m.mem = dev, mem
}

// Device returns the device set by OnDevice, or nil.
func (m *Estimator) Device() backend.MemoryCapacity { return m.dev }

// allocations bounds the allocations live at the peak of a step whose
// program holds buffers and which binds graphs block graphs: what was
// live when the estimator was set on the device, the model's tensors
// (parameters, their gradients, the optimizer's slots, the state; counted
// again should they be among the live ones), the input rows and the two
// label arrays, each graph's arrays with its GCN and mean weights (and
// its edge index: an incidence graph and four tensors), the program's
// buffers and one op's temporaries.
func (m *Estimator) allocations(buffers int64, graphs int) int64 {
	model := int64(2+m.slots)*m.sizer.LearnableTensors + m.sizer.StateTensors
	perGraph := m.mem.GraphAllocations + 2
	if m.edgeIndex {
		perGraph += m.mem.GraphAllocations + 4
	}
	return m.mem.Live + model + 3 + int64(graphs)*perGraph + buffers + m.mem.CallAllocations
}

// Close releases the cost model and its runtime.
func (m *Estimator) Close() {
	if m.Cm != nil {
		m.release()
		m.Cm = nil
	}
}

// Step estimates the training step of one micro-batch over blocks whose
// last block's destinations are its outputs.
func (m *Estimator) Step(blocks []sampling.Block) (Estimate, error) {
	return m.estimate(blocks, false)
}

// Infer estimates an evaluation forward over blocks.
func (m *Estimator) Infer(blocks []sampling.Block) (Estimate, error) {
	return m.estimate(blocks, true)
}

func (m *Estimator) estimate(blocks []sampling.Block, infer bool) (Estimate, error) {
	in, allocs, err := m.inputs(blocks, infer)
	if err != nil {
		return Estimate{}, err
	}
	op := int32(memOpTrain)
	if infer {
		op = memOpInfer
	}
	out, err := m.Cm.Predict(op, in)
	if err != nil {
		return Estimate{}, fmt.Errorf("memory estimate: %w", err)
	}
	est := Estimate{Peak: int64(math.Ceil(out[0])), Resident: int64(out[1]), Data: int64(out[2]), Activations: int64(out[3])}
	if m.dev != nil {
		est.Allocations = allocs
		est.Peak += m.dev.RoundingSlack(est.Peak, allocs)
	}
	return est, nil
}

// inputs counts what a step over blocks holds, in the input layout of
// costmodel.betty-memory (see models/costmodels/betty-memory): the blocks
// and labels from the blocks, the program's buffers from the engine
// (engine.Sizer: the program bound as engine.Bind binds it, on a backend
// that allocates nothing). It also returns the allocations the step
// holds at its peak, when the estimator is on a device (allocations).
func (m *Estimator) inputs(blocks []sampling.Block, infer bool) ([]float64, int64, error) {
	if len(blocks) != len(m.layers) {
		return nil, 0, fmt.Errorf("memory estimate: %d blocks for a %d-layer model", len(blocks), len(m.layers))
	}
	graphs := 0
	shapes := make([]engine.BlockShape, len(blocks))
	var edges, rowPtrs float64
	for l, b := range blocks {
		s := engine.BlockShape{Dst: len(b.Dst), Src: len(b.Src), Edges: map[string]int64{}, Degrees: map[string]engine.Degrees{}}
		graphs += len(m.layers[l])
		for name := range m.layers[l] {
			e, ds := rowDegrees(b.Adj, name == "adj_self")
			s.Edges[name], s.Degrees[name] = e, ds
			edges += float64(e)
			rowPtrs += float64(s.Dst + s.Src + 2)
		}
		shapes[l] = s
	}
	fp, err := m.sizer.Blocks(shapes, len(blocks[0].Src), engine.Usage{Inference: infer, AccumulateGrads: m.accumulate})
	if err != nil {
		return nil, 0, fmt.Errorf("memory estimate: %w", err)
	}
	rowPtrs += float64(fp.GraphWords)
	outputs := float64(len(blocks[len(blocks)-1].Dst))
	in := make([]float64, 16)
	in[0], in[1], in[2] = m.Elt, m.Params, m.slots
	in[3] = float64(len(blocks[0].Src)) * float64(m.dim) * m.inElt / m.Elt // the model counts elt bytes a value
	in[4] = outputs
	in[5], in[6] = edges, rowPtrs
	in[7], in[8], in[9], in[10], in[11] = float64(fp.Values), float64(fp.Grads), float64(fp.Masks), float64(fp.Scratch), float64(fp.Index)
	// The aggregators' saved state as Betty counts it: S = Σ E × H over
	// the sequence aggregations, f values per element.
	in[12], in[13] = float64(fp.Saved/engine.LSTMSavedPerEdge), engine.LSTMSavedPerEdge
	in[14] = m.Resident + m.State*m.Elt
	if m.Gathered {
		in[15] = float64(len(blocks[0].Src))
	}
	return in, m.allocations(fp.Buffers, graphs), nil
}

// rowDegrees returns the edges and the degrees of a block's adjacency,
// with selfLoops as withLocalSelfLoops makes it (a self loop added to
// every row without one).
func rowDegrees(a *graph.CSR, selfLoops bool) (edges int64, st engine.Degrees) {
	for r := 0; r < a.NumRows; r++ {
		d := a.Indptr[r+1] - a.Indptr[r]
		if selfLoops {
			self := false
			for k := a.Indptr[r]; k < a.Indptr[r+1] && !self; k++ {
				self = a.Col(k) == int64(r)
			}
			if !self {
				d++
			}
		}
		edges += d
		st.Max = max(st.Max, d)
		if d >= 1 {
			st.Rows1++
		}
		if d >= 2 {
			st.Rows2++
		}
	}
	return edges, st
}

// CostModel is the registry ID of Betty's memory model, which estimates a
// batch's memory rather than a kernel's time.
const CostModel = "costmodel.betty-memory"
