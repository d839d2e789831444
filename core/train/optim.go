package train

import (
	"fmt"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/tensor"
)

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	Step(params []*engine.Param) error
	// State copies the optimizer's state to host memory (for a
	// checkpoint); SetState restores it over params, allocating the
	// buffers a fresh optimizer would allocate at its first step.
	State() (OptimizerState, error)
	SetState(params []*engine.Param, st OptimizerState) error
}

// OptimizerState is an optimizer's state: its step count and its
// per-parameter buffers, keyed "<buffer>/<parameter>" (adam: m and v;
// sgd: vel, the momentum buffer).
type OptimizerState struct {
	Name string
	Step int
	Bufs map[string][]float64
}

// NewOptimizer returns "adam" or "sgd" over the given backend.
func NewOptimizer(name string, be backend.Backend, lr, weightDecay, momentum float64) (Optimizer, error) {
	switch name {
	case "adam":
		return &adam{be: be, lr: lr, wd: weightDecay, beta1: 0.9, beta2: 0.999, eps: 1e-8, state: map[string][2]*tensor.Tensor{}}, nil
	case "sgd":
		return &sgd{be: be, lr: lr, wd: weightDecay, momentum: momentum, vel: map[string]*tensor.Tensor{}}, nil
	}
	return nil, fmt.Errorf("train.optimizer: unknown optimizer %q (allowed: adam, sgd)", name)
}

// adam is Adam with L2 weight decay added to the gradient (torch.optim.Adam).
type adam struct {
	be                        backend.Backend
	lr, wd, beta1, beta2, eps float64
	t                         int
	state                     map[string][2]*tensor.Tensor
}

func (a *adam) Step(params []*engine.Param) error {
	a.t++
	for _, p := range params {
		st, ok := a.state[p.Name]
		if !ok {
			m, err := a.be.Alloc(p.Value.DType(), p.Value.Shape(), p.Value.Tier())
			if err != nil {
				return fmt.Errorf("adam state for %s: %w", p.Name, err)
			}
			v, err := a.be.Alloc(p.Value.DType(), p.Value.Shape(), p.Value.Tier())
			if err != nil {
				return fmt.Errorf("adam state for %s: %w", p.Name, err)
			}
			st = [2]*tensor.Tensor{m, v}
			a.state[p.Name] = st
		}
		if err := a.be.AdamStep(p.Value, p.Grad, st[0], st[1], a.lr, a.beta1, a.beta2, a.eps, a.wd, a.t); err != nil {
			return fmt.Errorf("adam step for %s: %w", p.Name, err)
		}
	}
	return nil
}

// sgd is SGD with optional momentum and L2 weight decay (torch.optim.SGD).
type sgd struct {
	be               backend.Backend
	lr, wd, momentum float64
	vel              map[string]*tensor.Tensor
}

func (s *sgd) Step(params []*engine.Param) error {
	for _, p := range params {
		if s.wd != 0 {
			if err := s.be.Axpby(s.wd, p.Value, 1, p.Grad); err != nil {
				return err
			}
		}
		step := p.Grad
		if s.momentum != 0 {
			v, ok := s.vel[p.Name]
			if !ok {
				var err error
				if v, err = s.be.Alloc(p.Value.DType(), p.Value.Shape(), p.Value.Tier()); err != nil {
					return fmt.Errorf("sgd momentum for %s: %w", p.Name, err)
				}
				s.vel[p.Name] = v
				if err := s.be.Axpby(1, p.Grad, 0, v); err != nil {
					return err
				}
			} else if err := s.be.Axpby(1, p.Grad, s.momentum, v); err != nil {
				return err
			}
			step = v
		}
		if err := s.be.Axpby(-s.lr, step, 1, p.Value); err != nil {
			return err
		}
	}
	return nil
}

func (a *adam) State() (OptimizerState, error) {
	st := OptimizerState{Name: "adam", Step: a.t, Bufs: map[string][]float64{}}
	for name, mv := range a.state {
		for i, b := range []string{"m", "v"} {
			v, err := engine.DownloadFloats(a.be, mv[i])
			if err != nil {
				return st, err
			}
			st.Bufs[b+"/"+name] = v
		}
	}
	return st, nil
}

func (a *adam) SetState(params []*engine.Param, st OptimizerState) error {
	if st.Name != "adam" {
		return fmt.Errorf("the checkpoint holds %s optimizer state, the config trains with adam", st.Name)
	}
	a.t = st.Step
	for _, p := range params {
		m, okm := st.Bufs["m/"+p.Name]
		v, okv := st.Bufs["v/"+p.Name]
		if !okm && !okv {
			continue // not stepped yet
		}
		var pair [2]*tensor.Tensor
		for i, vals := range [][]float64{m, v} {
			if len(vals) != p.Value.Numel() {
				return fmt.Errorf("adam state for %s: %d values, the parameter has %d", p.Name, len(vals), p.Value.Numel())
			}
			t, ok := a.state[p.Name]
			var buf *tensor.Tensor
			if ok {
				buf = t[i]
			} else {
				var err error
				if buf, err = a.be.Alloc(p.Value.DType(), p.Value.Shape(), p.Value.Tier()); err != nil {
					return fmt.Errorf("adam state for %s: %w", p.Name, err)
				}
			}
			if err := engine.UploadFloats(a.be, buf, vals); err != nil {
				return err
			}
			pair[i] = buf
		}
		a.state[p.Name] = pair
	}
	return nil
}

func (s *sgd) State() (OptimizerState, error) {
	st := OptimizerState{Name: "sgd", Bufs: map[string][]float64{}}
	for name, t := range s.vel {
		v, err := engine.DownloadFloats(s.be, t)
		if err != nil {
			return st, err
		}
		st.Bufs["vel/"+name] = v
	}
	return st, nil
}

func (s *sgd) SetState(params []*engine.Param, st OptimizerState) error {
	if st.Name != "sgd" {
		return fmt.Errorf("the checkpoint holds %s optimizer state, the config trains with sgd", st.Name)
	}
	for _, p := range params {
		vals, ok := st.Bufs["vel/"+p.Name]
		if !ok {
			continue
		}
		if len(vals) != p.Value.Numel() {
			return fmt.Errorf("sgd momentum for %s: %d values, the parameter has %d", p.Name, len(vals), p.Value.Numel())
		}
		buf, ok := s.vel[p.Name]
		if !ok {
			var err error
			if buf, err = s.be.Alloc(p.Value.DType(), p.Value.Shape(), p.Value.Tier()); err != nil {
				return fmt.Errorf("sgd momentum for %s: %w", p.Name, err)
			}
			s.vel[p.Name] = buf
		}
		if err := engine.UploadFloats(s.be, buf, vals); err != nil {
			return err
		}
	}
	return nil
}
