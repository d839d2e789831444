// Package engine compiles a layer IR graph onto a backend and runs it forward
// and backward. It owns parameters, activations and gradients as backend
// tensors; it never touches raw numbers except for parameter initialisation
// and snapshots, which go through Upload and Download.
package engine

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// Graph is an adjacency bound for execution, with its derived edge weights.
type Graph struct {
	Adj      backend.Adj
	GCNNorm  *tensor.Tensor // [E] 1/sqrt(d_i d_j), or nil if unused
	MeanNorm *tensor.Tensor // [E] 1/deg_i, or nil if unused
}

// Env binds the symbolic parts of a graph: node count, adjacencies and the input.
type Env struct {
	Backend backend.Backend
	DType   tensor.DType
	Tier    tensor.Tier
	Graphs  map[string]*Graph
	Input   *tensor.Tensor // [N, in_dim]
}

// Param is a learnable tensor with its gradient.
type Param struct {
	Name  string
	Op    int32
	Value *tensor.Tensor
	Grad  *tensor.Tensor
}

// Program is a compiled graph: every activation and gradient buffer is
// allocated once, so an epoch allocates nothing.
type Program struct {
	g        *ir.Graph
	env      Env
	be       backend.Backend
	vals     []*tensor.Tensor // forward buffers
	cur      []*tensor.Tensor // values of the last forward (aliases in eval)
	mode     Mode
	grads    []*tensor.Tensor // gradient buffers for values that need them
	needGrad []bool
	gradInit []bool
	aux      []opAux
	params   []*Param
	scratch  map[string]*tensor.Tensor
	owned    []*tensor.Tensor
	numNodes int
}

// opAux holds per-op state: dropout masks, argmax indices, batch statistics.
type opAux struct {
	mask, argmax, mean, invStd *tensor.Tensor
	runMean, runVar            *tensor.Tensor
	headMean                   *tensor.Tensor
	seeded                     bool
}

// Compile binds g to env, allocating buffers and initialising parameters
// from seed. The graph must come from ir.Builder or ir.Link.
func Compile(g *ir.Graph, env Env, seed uint64) (*Program, error) {
	if env.Input == nil {
		return nil, fmt.Errorf("engine: no input tensor")
	}
	p := &Program{
		g: g, env: env, be: env.Backend,
		vals:     make([]*tensor.Tensor, len(g.Ops)),
		cur:      make([]*tensor.Tensor, len(g.Ops)),
		grads:    make([]*tensor.Tensor, len(g.Ops)),
		needGrad: make([]bool, len(g.Ops)),
		gradInit: make([]bool, len(g.Ops)),
		aux:      make([]opAux, len(g.Ops)),
		scratch:  map[string]*tensor.Tensor{},
		numNodes: env.Input.Rows(),
	}
	if err := p.bind(seed); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// dims resolves a symbolic shape.
func (p *Program) dims(op *ir.Op, s []int64) ([]int, error) {
	out := make([]int, len(s))
	for i, d := range s {
		switch {
		case d > 0:
			out[i] = int(d)
		case d == ir.N:
			out[i] = p.numNodes
		default:
			name := map[int64]string{ir.EAdj: "adj", ir.EAdjSelf: "adj_self"}[d]
			gr, ok := p.env.Graphs[name]
			if !ok {
				return nil, fmt.Errorf("engine: %s needs graph %q, which is not bound", op.Kind, name)
			}
			out[i] = int(gr.Adj.NNZ())
		}
	}
	return out, nil
}

func (p *Program) alloc(shape []int) (*tensor.Tensor, error) {
	return p.allocT(p.env.DType, shape)
}

func (p *Program) allocT(dt tensor.DType, shape []int) (*tensor.Tensor, error) {
	t, err := p.be.Alloc(dt, shape, p.env.Tier)
	if err != nil {
		return nil, err
	}
	p.owned = append(p.owned, t)
	return t, nil
}

// bind allocates values, gradients and per-op state.
func (p *Program) bind(seed uint64) error {
	rng := newSplitMix(seed)
	for i := range p.g.Ops {
		op := &p.g.Ops[i]
		for _, a := range op.Args {
			if p.needGrad[a] && p.g.Ops[a].Kind != ir.OpGraph {
				p.needGrad[i] = true
			}
		}
		switch op.Kind {
		case ir.OpGraph:
			if _, ok := p.env.Graphs[op.Name]; !ok {
				return fmt.Errorf("engine: graph %q is not bound", op.Name)
			}
			continue
		case ir.OpInput:
			if p.env.Input.Cols() != int(op.Shape[1]) {
				return fmt.Errorf("engine: model expects %d input features, dataset has %d", op.Shape[1], p.env.Input.Cols())
			}
			p.vals[i] = p.env.Input
			continue
		case ir.OpParam:
			p.needGrad[i] = true
		}
		shape, err := p.dims(op, op.Shape)
		if err != nil {
			return err
		}
		if p.vals[i], err = p.alloc(shape); err != nil {
			return fmt.Errorf("engine: op #%d %s: %w", i, op.Kind, err)
		}
		if err := p.bindAux(i, op, shape); err != nil {
			return fmt.Errorf("engine: op #%d %s: %w", i, op.Kind, err)
		}
		if op.Kind == ir.OpParam {
			if err := p.initParam(op, p.vals[i], rng); err != nil {
				return err
			}
		}
	}
	for i, op := range p.g.Ops {
		if !p.needGrad[i] {
			continue
		}
		shape, err := p.dims(&op, op.Shape)
		if err != nil {
			return err
		}
		if p.grads[i], err = p.alloc(shape); err != nil {
			return fmt.Errorf("engine: gradient of op #%d %s: %w", i, op.Kind, err)
		}
		if op.Kind == ir.OpParam {
			p.params = append(p.params, &Param{Name: op.Name, Op: int32(i), Value: p.vals[i], Grad: p.grads[i]})
		}
	}
	if err := p.checkAggregates(); err != nil {
		return err
	}
	return nil
}

func (p *Program) bindAux(i int, op *ir.Op, shape []int) error {
	a := &p.aux[i]
	var err error
	switch op.Kind {
	case ir.OpDropout:
		a.mask, err = p.alloc(shape)
	case ir.OpAggregate:
		if op.Reducer == "max" {
			a.argmax, err = p.allocT(tensor.Int32, shape)
		}
	case ir.OpBatchNorm:
		c := []int{shape[1]}
		for _, t := range []**tensor.Tensor{&a.mean, &a.invStd, &a.runMean, &a.runVar} {
			if *t, err = p.alloc(c); err != nil {
				return err
			}
		}
		err = p.be.Fill(a.runVar, 1)
	case ir.OpHeadMean:
		heads := int(op.Heads)
		c := shape[1]
		if a.headMean, err = p.alloc([]int{heads * c, c}); err != nil {
			return err
		}
		err = p.uploadFloats(a.headMean, headMeanMatrix(heads, c))
	}
	return err
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
		gr := p.env.Graphs[p.g.Ops[op.Args[0]].Name]
		if op.Reducer == "gcn" && gr.GCNNorm == nil || op.Reducer == "mean" && gr.MeanNorm == nil {
			return fmt.Errorf("engine: op #%d aggregate %s: graph %q has no %s weights bound", i, op.Reducer, p.g.Ops[op.Args[0]].Name, op.Reducer)
		}
	}
	return nil
}

// Params returns the learnable parameters in graph order.
func (p *Program) Params() []*Param { return p.params }

// Output returns the model output tensor of the last Forward.
func (p *Program) Output() *tensor.Tensor { return p.vals[p.g.Outputs[0]] }

// OutputGrad returns the gradient buffer of the output, which the loss fills.
func (p *Program) OutputGrad() *tensor.Tensor { return p.grads[p.g.Outputs[0]] }

// Release frees every buffer the program allocated.
func (p *Program) Release() {
	for _, t := range p.owned {
		p.be.Release(t)
	}
	p.owned = nil
}

// scratchFor returns a reusable temporary of the given shape and dtype.
func (p *Program) scratchFor(dt tensor.DType, shape []int, slot int) (*tensor.Tensor, error) {
	key := fmt.Sprint(dt, shape, slot)
	if t, ok := p.scratch[key]; ok {
		return t, nil
	}
	t, err := p.allocT(dt, shape)
	if err != nil {
		return nil, err
	}
	p.scratch[key] = t
	return t, nil
}

func (p *Program) uploadFloats(t *tensor.Tensor, v []float64) error {
	if t.DType() == tensor.Float64 {
		return p.be.Upload(t, v)
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return p.be.Upload(t, f)
}

func (p *Program) downloadFloats(t *tensor.Tensor) ([]float64, error) {
	if t.DType() == tensor.Float64 {
		v := make([]float64, t.Numel())
		return v, p.be.Download(t, v)
	}
	f := make([]float32, t.Numel())
	if err := p.be.Download(t, f); err != nil {
		return nil, err
	}
	v := make([]float64, len(f))
	for i, x := range f {
		v[i] = float64(x)
	}
	return v, nil
}

// ctxErr is a helper for long loops.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}
