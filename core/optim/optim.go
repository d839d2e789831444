// Package optim holds the optimizers (registry namespace "optimizer",
// picked by train.optimizer) and the learning-rate schedules (namespace
// "lrschedule", picked by [train.lr_schedule]) of the training loop, and
// global gradient-norm clipping (train.grad_clip). Each optimizer and
// each schedule is one file that registers a module; the loop finds them
// through the registry by name.
package optim

import (
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/registry"
)

// Namespace is the registry namespace of the optimizers.
const Namespace = "optimizer"

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	Step(params []*engine.Param) error
	// SetLR sets the learning rate of the next steps (a schedule's).
	SetLR(lr float64)
	// State copies the optimizer's state to host memory (for a
	// checkpoint); SetState restores it over params, allocating the
	// buffers a fresh optimizer would allocate at its first step.
	State() (State, error)
	SetState(params []*engine.Param, st State) error
}

// State is an optimizer's state: its name, its step count and its
// per-parameter buffers, keyed "<buffer>/<parameter>" (adam and adamw: m
// and v; sgd: vel, the momentum buffer).
type State struct {
	Name string
	Step int
	Bufs map[string][]float64
}

// Hyper are the [train] hyperparameters every optimizer is built from.
type Hyper struct {
	LR, WeightDecay, Momentum float64
	// DecayBy is train.weight_decay_by: parameter-name patterns with
	// their own weight decay (Decay, MatchParam; nil = none).
	DecayBy map[string]float64
}

// Module is an optimizer module of the registry namespace "optimizer".
type Module interface {
	registry.Module
	// NewOptimizer returns a fresh optimizer over be.
	NewOptimizer(be backend.Backend, h Hyper) Optimizer
	// Slots is the number of state tensors it keeps per parameter (for
	// memory estimates).
	Slots(h Hyper) int
}

// lookup returns the optimizer module name picks.
func lookup(name string) (Module, error) {
	info, err := registry.Lookup(Namespace + "." + name)
	if err != nil {
		return nil, fmt.Errorf("train.optimizer: %w", err)
	}
	m, ok := info.New().(Module)
	if !ok {
		return nil, fmt.Errorf("train.optimizer: module %s is not an optimizer", info.ID)
	}
	return m, nil
}

// New returns the optimizer train.optimizer names, over be.
func New(name string, be backend.Backend, h Hyper) (Optimizer, error) {
	m, err := lookup(name)
	if err != nil {
		return nil, err
	}
	return m.NewOptimizer(be, h), nil
}

// Slots returns the state tensors per parameter of the named optimizer.
func Slots(name string, h Hyper) (int, error) {
	m, err := lookup(name)
	if err != nil {
		return 0, err
	}
	return m.Slots(h), nil
}

// clipEps is torch.nn.utils.clip_grad_norm_'s guard against a zero norm:
// the gradients are scaled by maxNorm / (norm + clipEps).
const clipEps = 1e-6

// ClipGradNorm scales the gradients of params in place so that their
// global L2 norm (over all parameters together, summed in float64) is at
// most maxNorm, as torch.nn.utils.clip_grad_norm_ does: a norm above
// maxNorm multiplies every gradient by maxNorm / (norm + 1e-6). It
// returns the norm before clipping. A non-finite norm is an error.
func ClipGradNorm(be backend.Backend, params []*engine.Param, maxNorm float64) (float64, error) {
	var sum float64
	for _, p := range params {
		g, err := engine.DownloadFloats(be, p.Grad)
		if err != nil {
			return 0, fmt.Errorf("clipping %s: %w", p.Name, err)
		}
		for _, v := range g {
			sum += v * v
		}
	}
	norm := math.Sqrt(sum)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, fmt.Errorf("the gradient norm is %v", norm)
	}
	coef := maxNorm / (norm + clipEps)
	if coef >= 1 {
		return norm, nil // torch multiplies by 1: the same bits
	}
	for _, p := range params {
		if err := be.Axpby(coef, p.Grad, 0, p.Grad); err != nil {
			return norm, fmt.Errorf("clipping %s: %w", p.Name, err)
		}
	}
	return norm, nil
}

// checkName refuses state of another optimizer.
func checkName(st State, name string) error {
	if st.Name != name {
		return fmt.Errorf("the checkpoint holds %s optimizer state, the config trains with %s", st.Name, name)
	}
	return nil
}
