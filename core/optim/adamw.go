package optim

import (
	"strata/core/backend"
	"strata/core/registry"
)

func init() { registry.Register(adamwModule{}) }

// adamwModule is torch.optim.AdamW: Adam with decoupled weight decay,
// p ← p·(1 − lr·wd) before the Adam update of the same step, with
// PyTorch's defaults (betas 0.9, 0.999, eps 1e-8, weight_decay 0.01 when
// train.weight_decay is not set).
type adamwModule struct{}

func (adamwModule) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: Namespace + ".adamw", New: func() registry.Module { return adamwModule{} },
		Doc: "AdamW (torch.optim.AdamW: decoupled weight decay p ← p·(1 − lr·wd) before the Adam update; betas 0.9, 0.999, eps 1e-8; train.weight_decay defaults to 0.01 with it)"}
}

func (adamwModule) NewOptimizer(be backend.Backend, h Hyper) Optimizer {
	return newAdam("adamw", be, h, true)
}

func (adamwModule) Slots(Hyper) int { return 2 }

// DefaultWeightDecay is torch.optim.AdamW's weight_decay, which
// train.weight_decay takes when the config does not set it.
func (adamwModule) DefaultWeightDecay() float64 { return 0.01 }
