package optim

import (
	"fmt"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/registry"
	"strata/core/tensor"
)

func init() { registry.Register(sgdModule{}) }

// sgdModule is torch.optim.SGD: optional momentum (train.momentum) and L2
// weight decay added to the gradient.
type sgdModule struct{}

func (sgdModule) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: Namespace + ".sgd", New: func() registry.Module { return sgdModule{} },
		Doc: "SGD (torch.optim.SGD) with train.momentum and train.weight_decay as L2 added to the gradient"}
}

func (sgdModule) NewOptimizer(be backend.Backend, h Hyper) Optimizer {
	return &sgd{be: be, lr: h.LR, h: h, momentum: h.Momentum, vel: map[string]*tensor.Tensor{}}
}

func (sgdModule) Slots(h Hyper) int {
	if h.Momentum != 0 {
		return 1
	}
	return 0
}

// sgd is SGD with optional momentum and L2 weight decay.
type sgd struct {
	be           backend.Backend
	lr, momentum float64
	h            Hyper // the weight decay of each parameter (Hyper.Decay)
	vel          map[string]*tensor.Tensor
}

func (s *sgd) SetLR(lr float64) { s.lr = lr }

func (s *sgd) Step(params []*engine.Param) error {
	for _, p := range params {
		if wd := s.h.Decay(p.Name); wd != 0 {
			if err := s.be.Axpby(wd, p.Value, 1, p.Grad); err != nil {
				return err
			}
		}
		step := p.Grad
		if s.momentum != 0 {
			_, ok := s.vel[p.Name]
			v, err := s.buf(p)
			if err != nil {
				return err
			}
			beta := s.momentum
			if !ok {
				beta = 0 // the first step's velocity is the gradient
			}
			if err := s.be.Axpby(1, p.Grad, beta, v); err != nil {
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

// buf returns the momentum buffer of p, allocated at its first use.
func (s *sgd) buf(p *engine.Param) (*tensor.Tensor, error) {
	if v, ok := s.vel[p.Name]; ok {
		return v, nil
	}
	v, err := s.be.Alloc(p.Value.DType(), p.Value.Shape(), p.Value.Tier())
	if err != nil {
		return nil, fmt.Errorf("sgd momentum for %s: %w", p.Name, err)
	}
	s.vel[p.Name] = v
	return v, nil
}

func (s *sgd) State() (State, error) {
	st := State{Name: "sgd", Bufs: map[string][]float64{}}
	for name, t := range s.vel {
		v, err := engine.DownloadFloats(s.be, t)
		if err != nil {
			return st, err
		}
		st.Bufs["vel/"+name] = v
	}
	return st, nil
}

func (s *sgd) SetState(params []*engine.Param, st State) error {
	if err := checkName(st, "sgd"); err != nil {
		return err
	}
	for _, p := range params {
		vals, ok := st.Bufs["vel/"+p.Name]
		if !ok {
			continue
		}
		if len(vals) != p.Value.Numel() {
			return fmt.Errorf("sgd momentum for %s: %d values, the parameter has %d", p.Name, len(vals), p.Value.Numel())
		}
		buf, err := s.buf(p)
		if err != nil {
			return err
		}
		if err := engine.UploadFloats(s.be, buf, vals); err != nil {
			return err
		}
	}
	return nil
}
