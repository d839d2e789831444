package optim

import (
	"math"

	"strata/core/registry"
)

func init() { registry.Register(&cosineSchedule{}) }

// cosineSchedule is torch.optim.lr_scheduler.CosineAnnealingLR's closed
// form: eta_min + (lr − eta_min)·(1 + cos(π·e/T_max))/2.
type cosineSchedule struct {
	Warmup
	TMax   int     `toml:"t_max" range:"[0,10000000]" doc:"epochs of the half cosine period (0 = train.epochs less warmup_epochs, so the rate reaches eta_min at the end)"`
	EtaMin float64 `toml:"eta_min" range:"[0,)" doc:"the lowest rate"`
}

func (*cosineSchedule) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: ScheduleNamespace + ".cosine",
		New: func() registry.Module { return &cosineSchedule{Warmup: defaultWarmup()} },
		Doc: "cosine annealing (torch CosineAnnealingLR) from train.lr to eta_min over t_max epochs"}
}

func (s *cosineSchedule) Rate(base float64, e, epochs int) float64 {
	tmax := s.TMax
	if tmax == 0 {
		tmax = epochs
	}
	return s.EtaMin + (base-s.EtaMin)*(1+math.Cos(math.Pi*float64(e)/float64(tmax)))/2
}
