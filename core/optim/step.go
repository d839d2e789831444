package optim

import (
	"math"

	"strata/core/registry"
)

func init() { registry.Register(&stepSchedule{}) }

// stepSchedule is torch.optim.lr_scheduler.StepLR: the rate is
// multiplied by gamma every step_size epochs, lr·gamma^⌊e/step_size⌋.
type stepSchedule struct {
	Warmup
	StepSize int     `toml:"step_size" range:"[1,10000000]" doc:"multiply the rate by gamma every this many epochs"`
	Gamma    float64 `toml:"gamma" range:"(0,)" doc:"the factor applied every step_size epochs"`
}

func (*stepSchedule) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: ScheduleNamespace + ".step",
		New: func() registry.Module { return &stepSchedule{Warmup: defaultWarmup(), StepSize: 30, Gamma: 0.1} },
		Doc: "step decay (torch StepLR): train.lr·gamma^⌊epoch/step_size⌋"}
}

func (s *stepSchedule) Rate(base float64, e, _ int) float64 {
	return base * math.Pow(s.Gamma, float64(e/s.StepSize))
}
