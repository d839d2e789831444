package train

import (
	"fmt"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/optim"
)

// Optimizer updates parameters from their gradients (core/optim; the
// optimizer modules are registered there).
type Optimizer = optim.Optimizer

// OptimizerState is an optimizer's state, as a checkpoint holds it.
type OptimizerState = optim.State

// lrClock is the learning rate of the running epoch: the loop sets it
// once per epoch from [train.lr_schedule]; every optimizer of the run
// (the loop's and those a strategy makes for its replicas) reads it at
// each step, so all of them follow the schedule.
type lrClock struct {
	sched  optim.Schedule // nil: constant
	base   float64
	epochs int
	lr     float64
}

func newLRClock(cfg *config.Config) *lrClock {
	s, _ := cfg.Train.LRSchedule.Module.(optim.Schedule)
	return &lrClock{sched: s, base: cfg.Train.LR, epochs: cfg.Train.Epochs, lr: cfg.Train.LR}
}

// at sets the rate of epoch e (0-based).
func (c *lrClock) at(e int) { c.lr = optim.LR(c.sched, c.base, e, c.epochs) }

// NewOptimizer returns an optimizer over be for a stepper's replica: the
// train.optimizer module built from [train], stepping at the run's
// scheduled learning rate and clipping the gradient (train.grad_clip).
func (e *Env) NewOptimizer(be backend.Backend) (Optimizer, error) {
	if e.lr == nil {
		e.lr = newLRClock(e.Config)
	}
	return newRunOptimizer(e.Config, be, e.lr)
}

// SetEpoch sets the learning rate of every optimizer e.NewOptimizer made
// to the schedule's rate of epoch (0-based), for a caller that steps
// without the loop (the loop does it before each epoch).
func (e *Env) SetEpoch(epoch int) {
	if e.lr == nil {
		e.lr = newLRClock(e.Config)
	}
	e.lr.at(epoch)
}

func newRunOptimizer(cfg *config.Config, be backend.Backend, c *lrClock) (Optimizer, error) {
	t := cfg.Train
	inner, err := optim.New(t.Optimizer, be, optim.Hyper{LR: t.LR, WeightDecay: t.WeightDecay, Momentum: t.Momentum, DecayBy: t.WeightDecayBy})
	if err != nil {
		return nil, err
	}
	return &runOptimizer{Optimizer: inner, be: be, clip: t.GradClip, lr: c, decayBy: t.WeightDecayBy}, nil
}

// runOptimizer is the one place every optimizer step of a run passes
// through, whatever the strategy: the gradient is whole there (the
// strategy accumulated its micro-batches or chunks and all-reduced it),
// so the clipping norm is the full step's.
type runOptimizer struct {
	Optimizer
	be   backend.Backend
	clip float64
	lr   *lrClock
	// decayBy is train.weight_decay_by, checked against the parameter
	// names at the first step (checked then set).
	decayBy map[string]float64
	checked bool
}

func (o *runOptimizer) Step(params []*engine.Param) error {
	if !o.checked && len(o.decayBy) > 0 {
		names := make([]string, len(params))
		for i, p := range params {
			names[i] = p.Name
		}
		if err := optim.CheckDecayBy(o.decayBy, names); err != nil {
			return err
		}
	}
	o.checked = true
	o.Optimizer.SetLR(o.lr.lr)
	if o.clip > 0 {
		if _, err := optim.ClipGradNorm(o.be, params, o.clip); err != nil {
			return fmt.Errorf("train.grad_clip = %g: %w", o.clip, err)
		}
	}
	return o.Optimizer.Step(params)
}
