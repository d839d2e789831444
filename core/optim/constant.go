package optim

import "strata/core/registry"

func init() { registry.Register(&constantSchedule{}) }

// constantSchedule keeps train.lr (after the optional warm-up).
type constantSchedule struct {
	Warmup
}

func (*constantSchedule) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: ScheduleNamespace + ".constant", Default: true,
		New: func() registry.Module { return &constantSchedule{Warmup: defaultWarmup()} },
		Doc: "train.lr every epoch (the default), after the optional linear warm-up"}
}

func (*constantSchedule) Rate(base float64, _, _ int) float64 { return base }
