package optim

import (
	"fmt"

	"strata/core/registry"
)

// ScheduleNamespace is the registry namespace of the learning-rate
// schedules ([train.lr_schedule] name = ...).
const ScheduleNamespace = "lrschedule"

// Schedule is a learning-rate schedule: a module of the namespace
// "lrschedule". Its granularity is the epoch, as a PyTorch scheduler
// stepped once per epoch: every optimizer step of epoch e (0-based)
// uses the same rate.
type Schedule interface {
	registry.Module
	// Rate returns the rate of epoch e for the base rate base
	// (train.lr), e counted from the end of the warm-up, in a run whose
	// schedule lasts epochs epochs after the warm-up.
	Rate(base float64, e, epochs int) float64
	// Warm returns the schedule's linear warm-up.
	Warm() Warmup
}

// Warmup is the linear warm-up every schedule may start with (the
// schedules embed it): during the first Epochs epochs the rate rises
// linearly from StartFactor·lr, as torch.optim.lr_scheduler.LinearLR
// (end_factor 1, total_iters warmup_epochs), then the schedule runs from
// its start, as SequentialLR(LinearLR, schedule, milestones=[warmup]).
type Warmup struct {
	Epochs      int     `toml:"warmup_epochs" range:"[0,10000000]" doc:"linear warm-up over this many epochs before the schedule starts (0 = none)"`
	StartFactor float64 `toml:"warmup_start_factor" range:"(0,1]" doc:"the warm-up's first rate over train.lr; it rises linearly to 1 at epoch warmup_epochs"`
}

// Warm returns w (the method the schedules embedding it inherit).
func (w Warmup) Warm() Warmup { return w }

// defaultWarmup is the warm-up a schedule starts with: none, and a start
// factor of 1/3 (LinearLR's) when warmup_epochs is set.
func defaultWarmup() Warmup { return Warmup{StartFactor: 1.0 / 3} }

// LR returns the learning rate of epoch e (0-based) of a run of epochs
// epochs with base rate base under s: the warm-up's, then s's, started
// at the warm-up's end. A nil s is the constant schedule.
func LR(s Schedule, base float64, e, epochs int) float64 {
	if s == nil {
		return base
	}
	w := s.Warm()
	if e < w.Epochs {
		return base * (w.StartFactor + (1-w.StartFactor)*float64(e)/float64(w.Epochs))
	}
	return s.Rate(base, e-w.Epochs, epochs-w.Epochs)
}

// CheckEpochs refuses a warm-up that does not end before the last
// epoch (the config loader calls it with train.epochs).
func (w Warmup) CheckEpochs(epochs int) error {
	if w.Epochs >= epochs {
		return fmt.Errorf("warmup_epochs = %d is not below train.epochs = %d, so the schedule would never start; lower warmup_epochs or raise train.epochs", w.Epochs, epochs)
	}
	return nil
}
