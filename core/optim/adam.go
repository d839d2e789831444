package optim

import (
	"fmt"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/registry"
	"strata/core/tensor"
)

func init() { registry.Register(adamModule{}) }

// adamModule is torch.optim.Adam with its defaults (betas 0.9, 0.999, eps
// 1e-8), weight decay as L2 added to the gradient.
type adamModule struct{}

func (adamModule) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: Namespace + ".adam", New: func() registry.Module { return adamModule{} },
		Doc: "Adam (torch.optim.Adam: betas 0.9, 0.999, eps 1e-8), train.weight_decay as L2 added to the gradient"}
}

func (adamModule) NewOptimizer(be backend.Backend, h Hyper) Optimizer {
	return newAdam("adam", be, h, false)
}

func (adamModule) Slots(Hyper) int { return 2 }

// adam is Adam, or AdamW when decoupled: its weight decay then scales
// the parameters before the update (p ← p·(1 − lr·wd)) instead of adding
// wd·p to the gradient.
type adam struct {
	name                  string
	be                    backend.Backend
	lr, beta1, beta2, eps float64
	h                     Hyper // the weight decay of each parameter (Hyper.Decay)
	decoupled             bool
	t                     int
	state                 map[string][2]*tensor.Tensor
}

func newAdam(name string, be backend.Backend, h Hyper, decoupled bool) *adam {
	return &adam{name: name, be: be, lr: h.LR, h: h, beta1: 0.9, beta2: 0.999, eps: 1e-8,
		decoupled: decoupled, state: map[string][2]*tensor.Tensor{}}
}

func (a *adam) SetLR(lr float64) { a.lr = lr }

func (a *adam) Step(params []*engine.Param) error {
	a.t++
	for _, p := range params {
		wd, l2 := a.h.Decay(p.Name), 0.0
		if !a.decoupled {
			l2 = wd
		}
		st, ok := a.state[p.Name]
		if !ok {
			var err error
			if st, err = a.alloc(p); err != nil {
				return err
			}
			a.state[p.Name] = st
		}
		if a.decoupled && wd != 0 {
			// torch.optim.AdamW: param.mul_(1 - lr * weight_decay) first.
			if err := a.be.Axpby(1-a.lr*wd, p.Value, 0, p.Value); err != nil {
				return fmt.Errorf("%s weight decay for %s: %w", a.name, p.Name, err)
			}
		}
		if err := a.be.AdamStep(p.Value, p.Grad, st[0], st[1], a.lr, a.beta1, a.beta2, a.eps, l2, a.t); err != nil {
			return fmt.Errorf("%s step for %s: %w", a.name, p.Name, err)
		}
	}
	return nil
}

// alloc allocates the moments of p (zero, as a fresh backend buffer is).
func (a *adam) alloc(p *engine.Param) ([2]*tensor.Tensor, error) {
	var st [2]*tensor.Tensor
	for i := range st {
		t, err := a.be.Alloc(p.Value.DType(), p.Value.Shape(), p.Value.Tier())
		if err != nil {
			return st, fmt.Errorf("%s state for %s: %w", a.name, p.Name, err)
		}
		st[i] = t
	}
	return st, nil
}

func (a *adam) State() (State, error) {
	st := State{Name: a.name, Step: a.t, Bufs: map[string][]float64{}}
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

func (a *adam) SetState(params []*engine.Param, st State) error {
	if err := checkName(st, a.name); err != nil {
		return err
	}
	a.t = st.Step
	for _, p := range params {
		m, okm := st.Bufs["m/"+p.Name]
		v, okv := st.Bufs["v/"+p.Name]
		if !okm && !okv {
			continue // not stepped yet
		}
		pair, ok := a.state[p.Name]
		if !ok {
			var err error
			if pair, err = a.alloc(p); err != nil {
				return err
			}
		}
		for i, vals := range [][]float64{m, v} {
			if len(vals) != p.Value.Numel() {
				return fmt.Errorf("%s state for %s: %d values, the parameter has %d", a.name, p.Name, len(vals), p.Value.Numel())
			}
			if err := engine.UploadFloats(a.be, pair[i], vals); err != nil {
				return err
			}
		}
		a.state[p.Name] = pair
	}
	return nil
}
