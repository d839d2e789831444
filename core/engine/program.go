// Package engine compiles a layer IR graph onto a backend and runs it forward
// and backward. It owns parameters, activations and gradients as backend
// tensors; it never touches raw numbers except for parameter initialisation
// and snapshots, which go through Upload and Download.
package engine

import (
	"context"
	"fmt"
	"runtime"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
)

// Graph is an adjacency bound for execution, with its derived edge weights.
type Graph struct {
	Adj      backend.Adj
	GCNNorm  *tensor.Tensor // [E] 1/sqrt(d_i d_j), or nil if unused
	MeanNorm *tensor.Tensor // [E] 1/deg_i, or nil if unused
	Edges    *EdgeIndex     // for the op table's gather, segment and degree ops, or nil if unused
	// Host is Adj's structure on the host, in the binding's local ids
	// (entries in Adj's order): it keys the masks of a dropout over the
	// graph's edges (EdgeKey of each edge's global endpoints, see
	// Env.NodeIDs). Needed only by a training program whose model drops
	// edge values (GAT's attention dropout).
	Host *graph.CSR
}

// Env binds the symbolic parts of a graph: node counts, adjacencies and the
// input.
//
// Full-graph training sets Graphs: every layer uses the same adjacencies.
// Mini-batch and micro-batch training set Blocks instead: Blocks[l] holds
// layer l's graphs (each "adj" and "adj_self" a destinations × sources
// CSR whose destinations are the first rows of its sources), and Input has
// one row per source of block 0.
type Env struct {
	Backend backend.Backend
	DType   tensor.DType
	Tier    tensor.Tier
	Graphs  map[string]*Graph
	Blocks  []map[string]*Graph
	Input   *tensor.Tensor // [sources, in_dim]
	// NodeIDs are the global node ids of the bound rows, which key the
	// dropout masks so that a row draws its mask wherever it is computed
	// (backend.DropoutMask, docs/decisions.md): with Blocks, NodeIDs[l]
	// holds the global id of every source of block l (its destinations
	// are the first); with Graphs, nil means row r is node r (the whole
	// graph), or NodeIDs[0] names the rows. A training program over
	// blocks whose model has a dropout needs them.
	NodeIDs [][]int32
	// Inference binds a program for evaluation only: no gradient buffers
	// and no dropout masks, so it needs about half the memory. Forward
	// with Mode.Train and Backward are errors on it.
	Inference bool
	// SparseInput lets a program whose constant input is sparse enough
	// multiply it as SpMM over its non-zeros (planSparseInput; the
	// backend's SparseInputs decides the density); off, every product
	// with the input is dense. It changes float rounding only.
	SparseInput bool
	// InputEntries, given instead of Input, is the input held only by its
	// non-zeros (as backend.SparseInputs returns them: an edge c → r per
	// entry (r, c)), which the caller built and keeps (a mini-batch's
	// rows of a sparse feature matrix, never formed densely). Every
	// matmul with the input (or a dropout of it) then runs as SpMM over
	// them (planSparseInput), and a binding that would read the input
	// any other way fails with ErrDenseInput. Not with InputGrad,
	// Resumable or Split.
	InputEntries *backend.SparseMatrix
	// InputGrad makes Backward compute the gradient of the input too
	// (see Program.InputGrad): layer-by-layer training propagates it to
	// the layer below.
	InputGrad bool
	// Resumable binds a program whose forward state is carried to a later
	// Backward by Saved and Resume, on a binding whose input rows may not
	// be loaded (chunked training over cached intermediates): no op's
	// backward reads the input, so the input's dropout is formed, not
	// multiplied in (see fuseInputDropouts).
	Resumable bool
	// Split binds a training program whose backward may restore its
	// aggregations' outputs and rerun the rest (SplitSaved, ResumeSplit):
	// the aggregations' outputs live to the end of the forward (no later
	// value takes their buffer) and are never fused into an epilogue.
	Split bool
	// DstFirst, on an inference program over one block, places the
	// block's destinations at its sources DstFirst onward instead of
	// first (the sampler's convention): a caller that binds every node's
	// rows in place as the sources of a range of destinations (layer-wise
	// inference on the host). Its narrows read those rows, in place on a
	// backend.RowViewer, which it needs.
	DstFirst int
	// keepAsWritten plans the narrows where the model meets them, not
	// pushed below row-wise ops (pushNarrows): the reference tests
	// compare with.
	keepAsWritten bool
}

// Param is a learnable tensor with its gradient.
type Param struct {
	Name  string
	Op    int32
	Value *tensor.Tensor
	Grad  *tensor.Tensor
}

// Program is a model graph bound to one set of graphs and one input: every
// activation and gradient buffer is allocated once, so an epoch allocates
// nothing. Parameters live in a Params that programs may share.
type Program struct {
	g         *ir.Graph // the planned graph (narrow ops inserted)
	model     *ir.Graph // the graph as bound
	plan      *plan
	env       Env
	be        backend.Backend
	vals      []*tensor.Tensor // forward buffers
	cur       []*tensor.Tensor // values of the last forward (aliases in eval)
	mode      Mode
	grads     []*tensor.Tensor // gradient buffers for values that need them
	needGrad  []bool
	gradInit  []bool
	aux       []opAux
	params    *Params
	ownParams bool
	scratch   map[string]*tensor.Tensor
	keys      map[keySpace]*tensor.Tensor // the dropouts' row keys, one per row space
	owned     *ownedBuffers
	// meter counts every buffer the program allocates by kind (and, in a
	// dry binding that sizes the program, what the dry kernels allocate;
	// see Sizer).
	meter *meter
	// saved: a training Forward ran since the last Backward. consumes: an
	// op's backward consumes its saved state (LSTM gates), so a second
	// Backward after one Forward is an error.
	saved, consumes bool
	// noShare gives every planned tensor a buffer of its own and every
	// ReLU's backward its input (the reference that tests compare the
	// buffer plan with).
	noShare bool
	// xFor[i] is the value a ReLU's backward reads for its sign in place
	// of its input (its dropout's output, see planBuffers), or -1.
	xFor []int32
	// wideIn: the 16-bit input is widened into a float32 value of the
	// buffer plan (see planHalfInput).
	wideIn bool
	// sparse: the input held by its non-zeros, or nil (planSparseInput).
	sparse *sparseIn
}

// opAux holds per-op state: dropout masks, argmax indices, batch statistics.
type opAux struct {
	mask, argmax, mean, invStd *tensor.Tensor
	runMean, runVar            *tensor.Tensor
	headMean                   *tensor.Tensor
	rows                       *tensor.Tensor // narrow: the row ids 0..n-1
	xw                         *tensor.Tensor // lstm_aggregate: x·W_ih, then its gradient (scratch)
	gates, cells, hprev        *tensor.Tensor // lstm_aggregate: saved state (training)
	ones                       *tensor.Tensor // degree: a row of ones [1,C]; layernorm: a column [C,1]
	normed                     *tensor.Tensor // layernorm: x̂, saved for the backward
	// fused: a segment sum or mean of a gather_src that nothing else
	// reads runs as one SpMM over the adjacency; fusedInto marks that
	// gather, which then holds no buffer (see fuseGathers).
	fused, fusedInto bool
	// dropInto: a dropout of the input computed inside the matmuls that
	// read it, which then hold its op index in maskedBy (0: none) and
	// their scratch in dropScratch (see fuseInputDropouts).
	dropInto    bool
	maskedBy    int32
	dropScratch *tensor.Tensor
	dropKeep    *tensor.Tensor // a fused dropout's mask as bits (float32)
	// dropRows: a dropout's row keys (nil: row r is node r), see
	// bindDropoutKeys.
	dropRows *tensor.Tensor
	// dropLead: the matmul that runs this one's products with its own
	// (the first of the readers of one fused dropout that share its
	// masking, see groupDropReaders; 0: none); dropGroup, on the lead,
	// the group in op order.
	dropLead  int32
	dropGroup []int32
	// epilogue: an aggregation that runs with the bias (and ReLU) after
	// it as one SpMMBiasAct, the chain's last op (0: none); inEpilogue
	// marks the chain's ops, epilogueOf the aggregation that writes the
	// last one's value (-1 for the others, which are never formed). See
	// fuseEpilogues.
	epilogue   int32
	inEpilogue bool
	epilogueOf int32
	// halfX: a matmul whose left operand is the 16-bit input (or its
	// dropout), widened inside DropoutGEMM (see planHalfInput).
	halfX bool
	// sparseX: a matmul whose left operand is the input held sparse (or
	// a dropout of it), run as SpMM (see planSparseInput).
	sparseX bool
}

// Compile binds g to env with fresh parameters initialised from seed; the
// program owns them. The graph must come from ir.Builder or ir.Link.
func Compile(g *ir.Graph, env Env, seed uint64) (*Program, error) {
	ps, err := NewParams(g, env.Backend, env.DType, env.Tier, seed)
	if err != nil {
		return nil, err
	}
	p, err := Bind(g, env, ps)
	if err != nil {
		ps.Release()
		return nil, err
	}
	p.ownParams = true
	return p, nil
}

// Bind binds g to env with the given parameters (from NewParams on the same
// graph). Release the program when the batch is done; ps stays.
func Bind(g *ir.Graph, env Env, ps *Params) (*Program, error) {
	return bind(g, env, ps, nil)
}

// bind is Bind, counting the program's buffers in m (a new meter when m
// is nil).
func bind(g *ir.Graph, env Env, ps *Params, m *meter) (*Program, error) {
	return bindShare(g, env, ps, m, true)
}

// bindShare is bind; share=false gives every value, gradient and mask a
// buffer of its own.
func bindShare(g *ir.Graph, env Env, ps *Params, m *meter, share bool) (*Program, error) {
	if m == nil {
		m = &meter{}
	}
	if err := checkInput(env); err != nil {
		return nil, err
	}
	if err := checkDstFirst(env); err != nil {
		return nil, err
	}
	if env.Graphs == nil && env.Blocks == nil {
		return nil, fmt.Errorf("engine: no graphs bound")
	}
	pl, err := makePlan(g, env)
	if err != nil {
		return nil, err
	}
	n := len(pl.g.Ops)
	p := &Program{
		g: pl.g, model: g, plan: pl, env: env, be: env.Backend, params: ps,
		vals:     make([]*tensor.Tensor, n),
		cur:      make([]*tensor.Tensor, n),
		grads:    make([]*tensor.Tensor, n),
		needGrad: make([]bool, n),
		gradInit: make([]bool, n),
		aux:      make([]opAux, n),
		scratch:  map[string]*tensor.Tensor{},
		meter:    m,
		owned:    &ownedBuffers{be: env.Backend},
		// Layer programs of chunked training (Env.InputGrad) keep a
		// buffer per tensor: their saved state is copied out and back
		// between chunks (Saved, Resume), and chunking is what bounds
		// their memory.
		noShare: !share || env.InputGrad,
	}
	if _, ok := p.be.(backend.Recycler); ok {
		// Recycled buffers are not Go memory: a program dropped without
		// Release gives them back when it is collected.
		runtime.AddCleanup(p, (*ownedBuffers).release, p.owned)
	}
	if err := p.bind(); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// ownedBuffers are the buffers (and adjacencies) a program allocated,
// released together.
type ownedBuffers struct {
	be   backend.Backend
	ts   []*tensor.Tensor
	adjs []backend.Adj
}

// release releases the buffers once.
func (o *ownedBuffers) release() {
	for _, t := range o.ts {
		o.be.Release(t)
	}
	for _, a := range o.adjs {
		o.be.ReleaseGraph(a)
	}
	o.ts, o.adjs = nil, nil
}

// dims resolves a symbolic shape: the first dimension of a node or edge
// value is its planned row count.
func (p *Program) dims(i int, op *ir.Op, s []int64) ([]int, error) {
	out := make([]int, len(s))
	for k, d := range s {
		switch {
		case d > 0:
			out[k] = int(d)
		case k == 0 && p.plan.rows[i] >= 0:
			out[k] = p.plan.rows[i]
		default:
			return nil, fmt.Errorf("engine: op #%d %s: cannot resolve dimension %s", i, op.Kind, ir.DimString(d))
		}
	}
	return out, nil
}

// alloc allocates a buffer of the program's float type. Every buffer a
// program owns comes from alloc, allocT or scratchFor, which say what it
// holds: a dry binding (Sizer) counts it under that kind.
func (p *Program) alloc(k Kind, shape []int) (*tensor.Tensor, error) {
	return p.allocT(k, p.env.DType, shape)
}

func (p *Program) allocT(k Kind, dt tensor.DType, shape []int) (*tensor.Tensor, error) {
	var t *tensor.Tensor
	var err error
	if r, ok := p.be.(backend.Recycler); ok {
		t, err = r.AllocRecycled(dt, shape, p.env.Tier)
	} else {
		t, err = p.be.Alloc(dt, shape, p.env.Tier)
	}
	if err != nil {
		return nil, err
	}
	p.owned.ts = append(p.owned.ts, t)
	n := int64(t.Numel())
	if k == KindIndex {
		n = n * int64(dt.Size()) / 4 // int32 words: an Int64 key is two
	}
	p.meter.add(k, n)
	p.meter.buffer(1)
	return t, nil
}

// dry reports whether the program is bound to the dry backend, whose
// buffers hold nothing: what would only fill them is skipped.
func (p *Program) dry() bool {
	_, ok := p.be.(dryBackend)
	return ok
}

// bind allocates values, gradients and per-op state.
func (p *Program) bind() error {
	p.fuseGathers()
	p.fuseInputDropouts()
	if err := p.planSparseInput(); err != nil {
		return fmt.Errorf("engine: sparse input: %w", err)
	}
	if err := p.planHalfInput(); err != nil {
		return err
	}
	shapes := make([][]int, len(p.g.Ops))
	for i := range p.g.Ops {
		op := &p.g.Ops[i]
		for _, a := range op.Args {
			if p.needGrad[a] && p.g.Ops[a].Kind != ir.OpGraph {
				p.needGrad[i] = true
			}
		}
		switch {
		case op.Kind == ir.OpGraph:
			continue
		case p.aux[i].fusedInto:
			continue // computed by the segment reduction that reads it
		case p.aux[i].dropInto:
			continue // computed inside the matmuls that read it
		}
		switch op.Kind {
		case ir.OpGraph:
			continue
		case ir.OpInput:
			if _, cols := p.inputDims(); cols != int(op.Shape[1]) {
				return fmt.Errorf("engine: model expects %d input features, dataset has %d", op.Shape[1], cols)
			}
			p.needGrad[i] = p.env.InputGrad && !p.env.Inference
			if p.wideIn { // a float32 value of the plan, which the forward widens into
				shapes[i] = p.env.Input.Shape()
				continue
			}
			p.vals[i] = p.env.Input
			continue
		case ir.OpParam:
			if op.Buffer {
				v := p.params.state[op.Name]
				if v == nil || !sameDims(v.Shape(), op.Shape) {
					return fmt.Errorf("engine: buffer %q is not in the parameter set (or has another shape)", op.Name)
				}
				p.vals[i] = v
				continue
			}
			pr, ok := p.params.named[op.Name]
			if !ok || !sameDims(pr.Value.Shape(), op.Shape) {
				return fmt.Errorf("engine: parameter %q is not in the parameter set (or has another shape)", op.Name)
			}
			p.needGrad[i] = !p.env.Inference
			p.vals[i], p.grads[i] = pr.Value, pr.Grad
			continue
		}
		shape, err := p.dims(i, op, op.Shape)
		if err != nil {
			return err
		}
		shapes[i] = shape
		if err := p.bindAux(i, op, shape); err != nil {
			return fmt.Errorf("engine: op #%d %s: %w", i, op.Kind, err)
		}
	}
	if err := p.bindDropoutKeys(); err != nil {
		return err
	}
	if err := p.bindSparseMasks(); err != nil {
		return err
	}
	// Values, gradients and dropout masks share buffers by lifetime.
	if err := p.planBuffers(shapes, p.model); err != nil {
		return err
	}
	// The input's gradient (Env.InputGrad, chunked training) is read
	// after Backward, so it shares with nothing.
	for i, op := range p.g.Ops {
		if op.Kind == ir.OpInput && p.needGrad[i] && p.grads[i] == nil {
			var err error
			if p.grads[i], err = p.alloc(KindGrad, p.env.Input.Shape()); err != nil {
				return fmt.Errorf("engine: gradient of the input: %w", err)
			}
		}
	}
	return p.checkAggregates()
}

func sameDims(a []int, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if int64(a[i]) != b[i] {
			return false
		}
	}
	return true
}

func (p *Program) bindAux(i int, op *ir.Op, shape []int) error {
	if op.Kind == opNarrow {
		a := &p.aux[i]
		var err error
		if a.rows, err = p.allocT(KindIndex, tensor.Int32, []int{shape[0]}); err != nil || p.dry() {
			return err
		}
		ids := make([]int32, shape[0])
		for r := range ids {
			ids[r] = int32(p.env.DstFirst + r)
		}
		return p.be.Upload(a.rows, ids)
	}
	switch s := ir.Spec(op.Kind); {
	case s == nil || s.Class == ir.ClassLeaf:
		return nil
	case s.Class == ir.ClassStructural:
		return p.bindStructural(i, op, shape)
	default:
		return p.bindTableAux(i, op, s, shape)
	}
}

// headMeanMatrix stacks H identity blocks scaled by 1/H: x·M averages heads.
func headMeanMatrix(heads, c int) []float64 {
	m := make([]float64, heads*c*c)
	for h := 0; h < heads; h++ {
		for j := 0; j < c; j++ {
			m[(h*c+j)*c+j] = 1 / float64(heads)
		}
	}
	return m
}

// checkAggregates makes sure every normalised aggregation has its weights.
func (p *Program) checkAggregates() error {
	for i, op := range p.g.Ops {
		if op.Kind != ir.OpAggregate {
			continue
		}
		gr := p.adj(op.Args[0])
		if op.Reducer == "gcn" && gr.GCNNorm == nil || op.Reducer == "mean" && gr.MeanNorm == nil {
			return fmt.Errorf("engine: op #%d aggregate %s: graph %q has no %s weights bound", i, op.Reducer, p.g.Ops[op.Args[0]].Name, op.Reducer)
		}
	}
	return nil
}

// Params returns the learnable parameters in graph order.
func (p *Program) Params() []*Param { return p.params.list }

// ParamSet returns the parameter set the program runs with.
func (p *Program) ParamSet() *Params { return p.params }

// Snapshot copies every parameter to host memory.
func (p *Program) Snapshot() (map[string][]float64, error) { return p.params.Snapshot() }

// Restore loads parameters from a snapshot taken by Snapshot.
func (p *Program) Restore(s map[string][]float64) error { return p.params.Restore(s) }

// Output returns the model output tensor of the last Forward.
func (p *Program) Output() *tensor.Tensor { return p.vals[p.g.Outputs[0]] }

// Value returns the value of op i of the bound model after Forward (e.g.
// an intermediate layer's output, see ir.Graph.LastHidden), or nil if the
// model has no op i.
func (p *Program) Value(i int32) *tensor.Tensor {
	if j := p.plan.planned(i); j >= 0 {
		return p.cur[j]
	}
	return nil
}

// InputRows returns the number of input rows (block 0's sources in a
// mini-batch, every node in full-graph training).
func (p *Program) InputRows() int {
	rows, _ := p.inputDims()
	return rows
}

// inputDims returns the rows and columns of the input (of its entries
// with Env.InputEntries).
func (p *Program) inputDims() (rows, cols int) {
	if m := p.env.InputEntries; m != nil {
		return m.Host.NumRows, m.Host.NumCols
	}
	return p.env.Input.Rows(), p.env.Input.Cols()
}

// checkInput checks that env gives the input one way: a tensor, or its
// entries on a binding that never needs it dense.
func checkInput(env Env) error {
	switch {
	case env.Input == nil && env.InputEntries == nil:
		return fmt.Errorf("engine: no input tensor")
	case env.InputEntries == nil:
		return nil
	case env.Input != nil:
		return fmt.Errorf("engine: both an input tensor and its entries (Env.InputEntries) given")
	case env.InputGrad || env.Resumable || env.Split:
		return fmt.Errorf("engine: an input given by its entries (Env.InputEntries) takes no gradient and cannot be resumed or split: %w", ErrDenseInput)
	}
	return nil
}

// checkDstFirst checks that destinations placed past the first sources
// (Env.DstFirst) are in an inference program over one block, on a
// backend that views rows in place.
func checkDstFirst(env Env) error {
	if env.DstFirst == 0 {
		return nil
	}
	if _, ok := env.Backend.(backend.RowViewer); !ok || !env.Inference || len(env.Blocks) != 1 || env.DstFirst < 0 {
		return fmt.Errorf("engine: destinations from source %d on (Env.DstFirst) need an inference program over one block on a backend that views rows in place", env.DstFirst)
	}
	return nil
}

// dstRows returns the destination rows of a source-row value t, its
// rows rows from Env.DstFirst on, in place.
func (p *Program) dstRows(t *tensor.Tensor, rows int) (*tensor.Tensor, error) {
	if p.env.DstFirst == 0 {
		return tensor.Prefix(t, rows)
	}
	return p.be.(backend.RowViewer).RowView(t, p.env.DstFirst, p.env.DstFirst+rows)
}

// OutputGrad returns the gradient buffer of the output, which the loss fills.
func (p *Program) OutputGrad() *tensor.Tensor { return p.grads[p.g.Outputs[0]] }

// Allocated returns what the program holds, by kind: every buffer it has
// allocated (at Bind, and the scratch of its backward passes). What a
// backend keeps for itself (graph state, a kernel's temporaries) is not
// the program's; a Sizer adds the reference backend's.
func (p *Program) Allocated() Footprint {
	f := p.meter.current(p.env.DType)
	f.GraphWords = 0
	return f
}

// Release frees every buffer the program allocated, and its parameters if
// Compile made them.
func (p *Program) Release() {
	p.owned.release()
	if p.ownParams {
		p.params.Release()
	}
}

// scratchFor returns a reusable temporary of the given shape and dtype,
// one per shape and slot (a slot is a call site), of kind k.
func (p *Program) scratchFor(k Kind, dt tensor.DType, shape []int, slot int) (*tensor.Tensor, error) {
	key := fmt.Sprint(dt, shape, slot)
	if t, ok := p.scratch[key]; ok {
		return t, nil
	}
	t, err := p.allocT(k, dt, shape)
	if err != nil {
		return nil, err
	}
	p.scratch[key] = t
	return t, nil
}

func uploadFloats(be backend.Backend, t *tensor.Tensor, v []float64) error {
	if t.DType() == tensor.Float64 {
		return be.Upload(t, v)
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return be.Upload(t, f)
}

func downloadFloats(be backend.Backend, t *tensor.Tensor) ([]float64, error) {
	return readFloats(t, be.Download)
}

// readFloats copies t to host memory with read (a Download or a Peek) as
// float64.
func readFloats(t *tensor.Tensor, read func(*tensor.Tensor, any) error) ([]float64, error) {
	if t.DType() == tensor.Float64 {
		v := make([]float64, t.Numel())
		return v, read(t, v)
	}
	f := make([]float32, t.Numel())
	if err := read(t, f); err != nil {
		return nil, err
	}
	v := make([]float64, len(f))
	for i, x := range f {
		v[i] = float64(x)
	}
	return v, nil
}

func (p *Program) uploadFloats(t *tensor.Tensor, v []float64) error { return uploadFloats(p.be, t, v) }

func (p *Program) downloadFloats(t *tensor.Tensor) ([]float64, error) { return downloadFloats(p.be, t) }

// ctxErr is a helper for long loops.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}
