package strategy

import (
	"context"
	"fmt"
	"math"
	"slices"

	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/train"
	"strata/plugins/sampler"
)

// Betty's memory estimate (Yang et al., ASPLOS 2023, §4.4): before a
// micro-batch runs, count what its training step will hold on the device
// (parameters, features, labels, blocks, hidden values, aggregator
// intermediates, gradients, optimizer state) and let the cost model
// costmodel.betty-memory turn the counts into bytes. The counts come from
// the model's op graph resolved against the micro-batch's block sizes, the
// way the engine will bind it; nothing is allocated or run.

// Op codes of costmodel.betty-memory.
const (
	memOpTrain = 0
	memOpInfer = 1
)

// lstmEdgeFactor is what the LSTM aggregator keeps per edge of its block
// and hidden unit in a training forward: the gate activations (4), the
// cell state and the previous hidden state (1 each), which the backward
// pass reads. This is the "aggregator intermediates" term, Betty's
// Σ L_i × B_i × H × 18 in PyTorch (whose LSTM keeps more per step). Per
// source it also keeps x·W_ih (4H, a value, reused for its gradient), and
// backward a dW_hh temporary.
const lstmEdgeFactor = 6

// memEstimate is the cost model's answer for one batch, in bytes.
type memEstimate struct {
	Peak        int64 // everything at once: the step's peak
	Resident    int64 // parameters, gradients, optimizer state (and a cache)
	Data        int64 // input features, labels, blocks
	Activations int64 // values, their gradients, masks, scratch, aggregators
}

// memEstimator estimates the device peak of a model's training steps (and
// evaluation forwards) on given blocks with costmodel.betty-memory. It is
// not safe for concurrent use.
type memEstimator struct {
	release    func() // closes cm and its runtime
	cm         modhost.CostModel
	sizer      *engine.Sizer
	model      *ir.Graph
	layers     []map[string]bool
	elt        float64
	params     float64 // learnable scalars
	state      float64 // non-learnable state (batch-norm running statistics)
	slots      float64 // optimizer state tensors per parameter
	dim        int     // input features per node
	resident   float64 // other bytes on the device (a feature cache)
	gathered   bool    // input rows come from a feature cache on the device
	accumulate bool    // backward adds into the parameter gradients
}

// optimizerSlots returns the state tensors per parameter of an optimizer:
// Adam's two moments, SGD's velocity when it has momentum.
func optimizerSlots(name string, momentum float64) float64 {
	switch {
	case name == "adam":
		return 2
	case momentum != 0:
		return 1
	}
	return 0
}

// newMemEstimator loads costmodel.betty-memory for the model of e.
// accumulate says whether backward accumulates into the parameter
// gradients (micro-batches do). Close it when done.
func newMemEstimator(ctx context.Context, e stepEnv, optimizer string, momentum float64, accumulate bool) (*memEstimator, error) {
	cm, release, err := train.LoadCostModel(ctx, e.host, train.CostModelBetty)
	if err != nil {
		return nil, fmt.Errorf("memory estimate: %w", err)
	}
	m := &memEstimator{
		cm: cm, release: release,
		model: e.model, elt: float64(e.dt.Size()), params: float64(e.model.NumParams()),
		slots: optimizerSlots(optimizer, momentum), dim: e.dim, accumulate: accumulate,
	}
	m.layers = graphsPerLayer(e.model)
	if m.sizer, err = engine.NewSizer(e.model, e.dt); err != nil {
		release()
		return nil, fmt.Errorf("memory estimate: %w", err)
	}
	m.params, m.state = float64(m.sizer.Learnable), float64(m.sizer.State)
	return m, nil
}

// Close releases the cost model and its runtime.
func (m *memEstimator) Close() {
	if m.cm != nil {
		m.release()
		m.cm = nil
	}
}

// graphsPerLayer returns the graph names each layer of g reads.
func graphsPerLayer(g *ir.Graph) []map[string]bool {
	var out []map[string]bool
	for _, op := range g.Ops {
		for int(op.Layer) >= len(out) {
			out = append(out, map[string]bool{})
		}
		if op.Kind == ir.OpGraph {
			out[op.Layer][op.Name] = true
		}
	}
	return out
}

// step estimates the training step of one micro-batch over blocks whose
// last block's destinations are its outputs.
func (m *memEstimator) step(blocks []sampler.Block) (memEstimate, error) {
	return m.estimate(blocks, false)
}

// infer estimates an evaluation forward over blocks.
func (m *memEstimator) infer(blocks []sampler.Block) (memEstimate, error) {
	return m.estimate(blocks, true)
}

func (m *memEstimator) estimate(blocks []sampler.Block, infer bool) (memEstimate, error) {
	in, err := m.inputs(blocks, infer)
	if err != nil {
		return memEstimate{}, err
	}
	op := int32(memOpTrain)
	if infer {
		op = memOpInfer
	}
	out, err := m.cm.Predict(op, in)
	if err != nil {
		return memEstimate{}, fmt.Errorf("memory estimate: %w", err)
	}
	return memEstimate{Peak: int64(math.Ceil(out[0])), Resident: int64(out[1]), Data: int64(out[2]), Activations: int64(out[3])}, nil
}

// inputs counts what a step over blocks holds, in the input layout of
// costmodel.betty-memory (see models/costmodels/betty-memory).
func (m *memEstimator) legacyInputs(blocks []sampler.Block, infer bool) ([]float64, error) {
	if len(blocks) != len(m.layers) {
		return nil, fmt.Errorf("memory estimate: %d blocks for a %d-layer model", len(blocks), len(m.layers))
	}
	dims := make([]blockDims, len(blocks))
	var edges, rowPtrs float64
	for l, b := range blocks {
		d := blockDims{dst: len(b.Dst), src: len(b.Src), edges: map[string]int64{}, degrees: map[string]degreeStats{}}
		for name := range m.layers[l] {
			ds := rowDegrees(b.Adj, name == "adj_self")
			d.edges[name], d.degrees[name] = ds.edges, ds
			edges += float64(ds.edges)
			rowPtrs += float64(d.dst + d.src + 2)
		}
		dims[l] = d
	}
	fp, err := programFootprint(m.model, dims, len(blocks[0].Src), infer, m.accumulate)
	if err != nil {
		return nil, fmt.Errorf("memory estimate: %w", err)
	}
	rowPtrs += fp.rowWords
	outputs := float64(len(blocks[len(blocks)-1].Dst))
	in := make([]float64, 16)
	in[0], in[1], in[2] = m.elt, m.params, m.slots
	in[3] = float64(len(blocks[0].Src)) * float64(m.dim)
	in[4] = outputs
	in[5], in[6] = edges, rowPtrs
	in[7], in[8], in[9], in[10], in[11] = fp.hidden, fp.grads, fp.masks, fp.scratch, fp.int32s
	in[12], in[13] = fp.seqAgg, lstmEdgeFactor
	in[14] = m.resident + m.state*m.elt
	if m.gathered {
		in[15] = float64(len(blocks[0].Src))
	}
	return in, nil
}

// inputs counts what a step over blocks holds, in the input layout of
// costmodel.betty-memory (see models/costmodels/betty-memory): the blocks
// and labels from the blocks, the program's buffers from the engine
// (engine.Sizer: the program bound as engine.Bind binds it, on a backend
// that allocates nothing).
func (m *memEstimator) inputs(blocks []sampler.Block, infer bool) ([]float64, error) {
	if len(blocks) != len(m.layers) {
		return nil, fmt.Errorf("memory estimate: %d blocks for a %d-layer model", len(blocks), len(m.layers))
	}
	shapes := make([]engine.BlockShape, len(blocks))
	var edges, rowPtrs float64
	for l, b := range blocks {
		s := engine.BlockShape{Dst: len(b.Dst), Src: len(b.Src), Edges: map[string]int64{}, Degrees: map[string]engine.Degrees{}}
		for name := range m.layers[l] {
			ds := rowDegrees(b.Adj, name == "adj_self")
			s.Edges[name] = ds.edges
			s.Degrees[name] = engine.Degrees{Rows1: ds.rows1, Rows2: ds.rows2, Max: ds.maxDegree}
			edges += float64(ds.edges)
			rowPtrs += float64(s.Dst + s.Src + 2)
		}
		shapes[l] = s
	}
	fp, err := m.sizer.Blocks(shapes, len(blocks[0].Src), engine.Usage{Inference: infer, AccumulateGrads: m.accumulate})
	if err != nil {
		return nil, fmt.Errorf("memory estimate: %w", err)
	}
	rowPtrs += float64(fp.GraphWords)
	outputs := float64(len(blocks[len(blocks)-1].Dst))
	in := make([]float64, 16)
	in[0], in[1], in[2] = m.elt, m.params, m.slots
	in[3] = float64(len(blocks[0].Src)) * float64(m.dim)
	in[4] = outputs
	in[5], in[6] = edges, rowPtrs
	in[7], in[8], in[9], in[10], in[11] = float64(fp.Values), float64(fp.Grads), float64(fp.Masks), float64(fp.Scratch), float64(fp.Index)
	// The aggregators' saved state as Betty counts it: S = Σ E × H over
	// the sequence aggregations, f values per element.
	in[12], in[13] = float64(fp.Saved/engine.LSTMSavedPerEdge), engine.LSTMSavedPerEdge
	in[14] = m.resident + m.state*m.elt
	if m.gathered {
		in[15] = float64(len(blocks[0].Src))
	}
	return in, nil
}

// degreeStats describes the rows of a block graph: its edges, the rows
// with at least one and at least two sources, and the largest row.
type degreeStats struct {
	edges     int64
	rows1     int
	rows2     int
	maxDegree int64
}

// rowDegrees returns the degree statistics of a block's adjacency, with
// selfLoops as withLocalSelfLoops makes it (a self loop added to every row
// without one).
func rowDegrees(a *graph.CSR, selfLoops bool) degreeStats {
	var st degreeStats
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
		st.edges += d
		st.maxDegree = max(st.maxDegree, d)
		if d >= 1 {
			st.rows1++
		}
		if d >= 2 {
			st.rows2++
		}
	}
	return st
}

// blockDims are the sizes of one layer's block.
type blockDims struct {
	src, dst int
	edges    map[string]int64       // per graph name
	degrees  map[string]degreeStats // per graph name
}

// footprint counts the elements of the buffers a program bound to blocks
// allocates (see core/engine: Bind, bindAux, Backward).
type footprint struct {
	hidden  float64 // forward values and per-op float state
	grads   float64 // activation gradients
	masks   float64 // dropout masks
	scratch float64 // backward temporaries
	int32s  float64 // int32 index buffers
	seqAgg  float64 // Σ E × H over LSTM aggregations
	// rowWords are int64 words per row the backend keeps with a graph
	// (the LSTM's step schedule).
	rowWords float64
}

// pop is one op of the planned graph (engine.PlanBlocks) with its
// resolved shape.
type pop struct {
	op    ir.Op
	rows  int   // planned row count (-1: none)
	shape []int // resolved shape (nil for graphs)
}

// programFootprint resolves g against blocks with the engine's planner
// and counts every buffer the bound program allocates, and with !infer
// those its backward pass adds.
func programFootprint(g *ir.Graph, dims []blockDims, inputRows int, infer, accumulate bool) (footprint, error) {
	var fp footprint
	shapes := make([]engine.BlockShape, len(dims))
	for l, d := range dims {
		shapes[l] = engine.BlockShape{Dst: d.dst, Src: d.src, Edges: d.edges}
	}
	pl, err := engine.PlanBlocks(g, shapes, inputRows)
	if err != nil {
		return fp, err
	}
	ops := make([]pop, len(pl.Ops))
	for i, op := range pl.Ops {
		ops[i] = pop{op: op, rows: pl.Rows[i]}
	}
	out := pl.Output

	// Scratch buffers are shared by shape and slot (engine.scratchFor).
	scratch := map[[3]int]bool{}
	tmpInto := func(into *float64, shape []int, slot int) {
		key := [3]int{slot, shape[0], -1}
		if len(shape) > 1 {
			key[2] = shape[1]
		}
		if !scratch[key] {
			scratch[key] = true
			*into += float64(numel(shape))
		}
	}

	// Bind: values, per-op state, gradient buffers.
	type graphKey struct {
		layer int32
		name  string
	}
	lstmScheduled := map[graphKey]bool{}
	var inferTemp float64
	need := make([]bool, len(ops))
	for i := range ops {
		p := &ops[i]
		for _, a := range p.op.Args {
			if need[a] && ops[a].op.Kind != ir.OpGraph {
				need[i] = true
			}
		}
		switch p.op.Kind {
		case ir.OpGraph:
			continue
		case ir.OpInput:
			p.shape = []int{inputRows, int(p.op.Shape[1])}
			continue
		case ir.OpParam:
			need[i] = !infer
			p.shape = concreteShape(p.op.Shape, -1)
			continue
		}
		p.shape = concreteShape(p.op.Shape, p.rows)
		n := float64(numel(p.shape))
		fp.hidden += n
		switch p.op.Kind {
		case ir.OpDropout:
			if !infer {
				fp.masks += n
			}
		case ir.OpAggregate:
			if p.op.Reducer == "max" {
				fp.int32s += n
			}
		case ir.OpBatchNorm:
			fp.hidden += 2 * float64(p.shape[1])
		case engine.OpNarrow:
			fp.int32s += float64(p.shape[0])
		case ir.OpHeadMean:
			c := p.shape[1]
			fp.hidden += float64(int(p.op.Heads) * c * c)
		case ir.OpLSTMAggregate:
			h := p.shape[1]
			tmpInto(&fp.hidden, []int{dims[p.op.Layer].src, 4 * h}, 7) // x·W_ih
			name := ops[p.op.Args[0]].op.Name
			ds := dims[p.op.Layer].degrees[name]
			if key := (graphKey{p.op.Layer, name}); !lstmScheduled[key] { // one step schedule per graph
				lstmScheduled[key] = true
				fp.rowWords += float64(2*dims[p.op.Layer].dst) + float64(ds.maxDegree) + 1
			}
			if infer {
				// The kernel's temporaries: gates, cell and hidden state
				// of the rows with sources.
				inferTemp = max(inferTemp, float64(ds.rows1*6*h))
			} else {
				fp.seqAgg += float64(ds.edges) * float64(h)
			}
		}
	}
	if infer {
		fp.hidden += inferTemp
		return fp, nil
	}
	for i, p := range ops {
		if need[i] && p.op.Kind != ir.OpParam {
			fp.grads += float64(numel(p.shape))
		}
	}

	// Backward: the scratch buffers it allocates (once per shape and slot).
	init := make([]bool, len(ops))
	for i, p := range ops {
		init[i] = accumulate && p.op.Kind == ir.OpParam
	}
	init[out] = true
	tmp := func(shape []int, slot int) { tmpInto(&fp.scratch, shape, slot) }
	accum := func(a int32) { // the first contribution writes the gradient, later ones go through a temporary
		if !need[a] {
			return
		}
		if init[a] {
			tmp(ops[a].shape, 0)
		}
		init[a] = true
	}
	beta := func(a int32) {
		if need[a] {
			init[a] = true
		}
	}
	zeroed := func(a int32) { init[a] = true }
	var peakScratch float64 // scratch at the peak of a kernel's temporaries
	for i := len(ops) - 1; i >= 0; i-- {
		if !need[i] || !init[i] {
			continue
		}
		p := ops[i]
		args := p.op.Args
		switch p.op.Kind {
		case ir.OpInput, ir.OpParam, ir.OpGraph:
		case ir.OpAggregate:
			if p.op.Reducer == "max" {
				zeroed(args[1])
			} else {
				beta(args[1])
			}
		case ir.OpSpMMEdge:
			accum(args[1])
			beta(args[2])
		case ir.OpMatMul:
			beta(args[0])
			beta(args[1])
		case ir.OpUDotV:
			beta(args[1])
			beta(args[2])
		case ir.OpHeadMean:
			beta(args[0])
		case ir.OpAdd, ir.OpSub, ir.OpMul:
			accum(args[0])
			if !need[args[1]] {
				break
			}
			a, b := ops[args[0]].shape, ops[args[1]].shape
			if p.op.Kind == ir.OpMul {
				tmp(p.shape, 5)
			}
			if !slices.Equal(a, b) && numel(b) == 1 && cols(a) != 1 {
				tmp([]int{cols(p.shape)}, 6)
			}
			accum(args[1])
		case ir.OpBatchNorm:
			x := ops[args[0]].shape
			tmp(x, 1)
			tmp([]int{x[1]}, 2)
			tmp([]int{x[1]}, 3)
			accum(args[0])
			accum(args[1])
			accum(args[2])
		case ir.OpHeadDot:
			for _, a := range args[:2] {
				if need[a] {
					zeroed(a)
				} else {
					tmp(ops[a].shape, 4)
				}
			}
		case engine.OpNarrow:
			if need[args[0]] {
				zeroed(args[0])
			}
		case ir.OpLSTMAggregate:
			h := p.shape[1]
			tmp([]int{h, 4 * h}, 8) // dW_hh
			// The kernel's temporaries, freed when it returns: the
			// gradients of the cell and hidden states.
			ds := dims[p.op.Layer].degrees[ops[args[0]].op.Name]
			peakScratch = max(peakScratch, fp.scratch+float64((ds.rows1+ds.rows2)*h))
			beta(args[1])
			beta(args[2])
			accum(args[3])
			accum(args[4])
		default: // bias, scale, activations, concat, dropout, u_add_v, edge_softmax, and ops this walk does not know
			for _, a := range args {
				if ops[a].op.Kind != ir.OpGraph {
					accum(a)
				}
			}
		}
	}
	fp.scratch = max(fp.scratch, peakScratch)
	return fp, nil
}

// cols is tensor.Cols of a shape: the product of the dimensions after
// the first.
func cols(s []int) int {
	c := 1
	for _, d := range s[min(1, len(s)):] {
		c *= d
	}
	return c
}

// concreteShape resolves a symbolic shape: symbolic dimensions take rows.
func concreteShape(s []int64, rows int) []int {
	out := make([]int, len(s))
	for k, d := range s {
		if d > 0 {
			out[k] = int(d)
		} else {
			out[k] = max(rows, 0)
		}
	}
	return out
}

func numel(s []int) int64 {
	n := int64(1)
	for _, d := range s {
		n *= int64(d)
	}
	return n
}
