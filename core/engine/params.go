package engine

import (
	"fmt"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// Params holds a model's learnable tensors with their gradients, and its
// non-learnable state (batch-norm running statistics, buffers). It outlives any one
// Program: the programs bound for different mini-batches or micro-batches
// of one model share it, so an optimizer step sees every batch's gradient.
type Params struct {
	be    backend.Backend
	list  []*Param
	named map[string]*Param
	state map[string]*tensor.Tensor
	owned []*tensor.Tensor
}

// NewParams allocates and initialises the parameters of g from seed (in
// graph order, so the same seed gives the same values). On the dry backend
// (Sizer) it allocates the same buffers and skips their initial values.
func NewParams(g *ir.Graph, be backend.Backend, dt tensor.DType, tier tensor.Tier, seed uint64) (*Params, error) {
	_, dry := be.(dryBackend)
	ps := &Params{be: be, named: map[string]*Param{}, state: map[string]*tensor.Tensor{}}
	alloc := func(shape []int) (*tensor.Tensor, error) {
		t, err := be.Alloc(dt, shape, tier)
		if err == nil {
			ps.owned = append(ps.owned, t)
		}
		return t, err
	}
	rng := newSplitMix(seed)
	for i := range g.Ops {
		op := &g.Ops[i]
		switch op.Kind {
		case ir.OpParam:
			if _, dup := ps.named[op.Name]; dup {
				ps.Release()
				return nil, fmt.Errorf("engine: parameter %q is declared twice", op.Name)
			}
			shape := make([]int, len(op.Shape))
			for k, d := range op.Shape {
				shape[k] = int(d)
			}
			v, err := alloc(shape)
			if err != nil {
				ps.Release()
				return nil, fmt.Errorf("engine: parameter %q: %w", op.Name, err)
			}
			if op.Buffer { // non-learnable: model state, no gradient
				if !dry {
					err = initParam(be, op, v, rng)
				}
				if err != nil {
					ps.Release()
					return nil, fmt.Errorf("engine: buffer %q: %w", op.Name, err)
				}
				ps.state[op.Name] = v
				continue
			}
			gr, err := alloc(shape)
			if err != nil {
				ps.Release()
				return nil, fmt.Errorf("engine: gradient of %q: %w", op.Name, err)
			}
			if !dry {
				if err := initParam(be, op, v, rng); err != nil {
					ps.Release()
					return nil, err
				}
			}
			p := &Param{Name: op.Name, Op: int32(i), Value: v, Grad: gr}
			ps.list = append(ps.list, p)
			ps.named[op.Name] = p
		case ir.OpBatchNorm:
			key := g.Ops[op.Args[1]].Name // the gamma parameter names the layer
			c := []int{int(op.Shape[1])}
			mean, err := alloc(c)
			if err != nil {
				ps.Release()
				return nil, err
			}
			variance, err := alloc(c)
			if err == nil {
				err = be.Fill(variance, 1)
			}
			if err != nil {
				ps.Release()
				return nil, err
			}
			ps.state[key+":running_mean"], ps.state[key+":running_var"] = mean, variance
		}
	}
	return ps, nil
}

// Buffer returns the value of a non-learnable parameter (ir.Op.Buffer),
// or nil when the model has none of that name.
func (ps *Params) Buffer(name string) *tensor.Tensor { return ps.state[name] }

// List returns the learnable parameters in graph order.
func (ps *Params) List() []*Param { return ps.list }

// ZeroGrads clears every gradient (before accumulating micro-batches).
func (ps *Params) ZeroGrads() error {
	for _, p := range ps.list {
		if err := ps.be.Fill(p.Grad, 0); err != nil {
			return err
		}
	}
	return nil
}

// ScaleGrads multiplies every gradient by s.
func (ps *Params) ScaleGrads(s float64) error {
	for _, p := range ps.list {
		if err := ps.be.Axpby(0, p.Grad, s, p.Grad); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot copies every parameter to host memory.
func (ps *Params) Snapshot() (map[string][]float64, error) {
	out := make(map[string][]float64, len(ps.list))
	for _, p := range ps.list {
		v, err := downloadFloats(ps.be, p.Value)
		if err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	return out, nil
}

// Restore loads parameters from a snapshot taken by Snapshot.
func (ps *Params) Restore(s map[string][]float64) error {
	for _, p := range ps.list {
		v, ok := s[p.Name]
		if !ok || len(v) != p.Value.Numel() {
			return fmt.Errorf("engine: snapshot lacks parameter %q or has the wrong size", p.Name)
		}
		if err := uploadFloats(ps.be, p.Value, v); err != nil {
			return err
		}
	}
	return nil
}

// Release frees the parameters, their gradients and the state.
func (ps *Params) Release() {
	for _, t := range ps.owned {
		ps.be.Release(t)
	}
	ps.owned = nil
}

// SnapshotState copies the non-learnable state (batch-norm running
// statistics) to host memory, keyed like the state map.
func (ps *Params) SnapshotState() (map[string][]float64, error) {
	out := make(map[string][]float64, len(ps.state))
	for k, t := range ps.state {
		v, err := downloadFloats(ps.be, t)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// RestoreState loads the state from a snapshot taken by SnapshotState.
func (ps *Params) RestoreState(s map[string][]float64) error {
	for k, t := range ps.state {
		v, ok := s[k]
		if !ok || len(v) != t.Numel() {
			return fmt.Errorf("engine: state snapshot lacks %q or has the wrong size", k)
		}
		if err := uploadFloats(ps.be, t, v); err != nil {
			return err
		}
	}
	return nil
}

// DownloadFloats copies a tensor to host memory as float64.
func DownloadFloats(be backend.Backend, t *tensor.Tensor) ([]float64, error) {
	return downloadFloats(be, t)
}

// PeekFloats is DownloadFloats for an observation of the run (a figure it
// reports but does not need): on a backend that counts link traffic
// (backend.Peeker) the copy is not counted.
func PeekFloats(be backend.Backend, t *tensor.Tensor) ([]float64, error) {
	if p, ok := be.(backend.Peeker); ok {
		return readFloats(t, p.Peek)
	}
	return downloadFloats(be, t)
}

// UploadFloats fills a tensor from float64 values (converted to its type).
func UploadFloats(be backend.Backend, t *tensor.Tensor, v []float64) error {
	return uploadFloats(be, t, v)
}

// JoinParams returns the parameters of several sets as one (in argument
// order), for an optimizer, a checkpoint or a snapshot that covers them
// all: a link-prediction model's encoder and its decoder. The joined set
// shares the sets' tensors and owns none: Release on it frees nothing,
// so release the sets themselves. Two sets naming one parameter or
// state are an error.
func JoinParams(sets ...*Params) (*Params, error) {
	if len(sets) == 0 {
		return nil, fmt.Errorf("engine: no parameter sets to join")
	}
	out := &Params{be: sets[0].be, named: map[string]*Param{}, state: map[string]*tensor.Tensor{}}
	for _, ps := range sets {
		for _, p := range ps.list {
			if _, dup := out.named[p.Name]; dup {
				return nil, fmt.Errorf("engine: parameter %q is in two of the joined sets", p.Name)
			}
			out.list = append(out.list, p)
			out.named[p.Name] = p
		}
		for k, t := range ps.state {
			if _, dup := out.state[k]; dup {
				return nil, fmt.Errorf("engine: state %q is in two of the joined sets", k)
			}
			out.state[k] = t
		}
	}
	return out, nil
}
