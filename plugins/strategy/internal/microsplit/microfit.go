package microsplit

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
)

// CheckAutoMicro checks what can be told of micro_batches = "auto" from
// the config: on the simulated device, that devices.memory_bytes gives
// it a capacity to fit. Whether another backend reports its memory is
// told when it runs (NewEstimator).
func CheckAutoMicro(cfg *config.Config) error {
	if cfg.Train.Backend == "sim" && cfg.Devices.MemoryBytes <= 0 {
		return cfg.KeyError(options.SplitKeyName(cfg)+" = \"auto\" sizes the micro-batches to the device's memory, but devices.memory_bytes is 0 (unlimited); set devices.memory_bytes, or give micro_batches a number", options.SplitKey(cfg)...)
	}
	return nil
}

// NewEstimator returns the memory estimator of a splitter on e's device
// and the capacity it fits ("auto"), or nil when the device has no
// capacity to fit and auto is false:
//   - a simulated machine (backend.Machine): devices.memory_bytes, the
//     estimate counting the bytes of every tensor (the simulator's
//     accounting);
//   - a device that reports its memory (backend.MemoryCapacity, cuda):
//     the limit of its memory pool; the estimate counts, beside the
//     step's bytes, those already in use there and what the allocator's
//     rounding can add to every allocation then live (the step's, the
//     model's and those already there).
//
// On any other backend "auto" is a cfg.KeyError that names the fix.
// Close the estimator when done.
func NewEstimator(ctx context.Context, cfg *config.Config, e steprun.Env, auto bool) (*memest.Estimator, int64, error) {
	_, sim := e.Be.(backend.Machine)
	dev, reports := e.Be.(backend.MemoryCapacity)
	switch {
	case sim:
	case reports && auto:
	case auto:
		return nil, 0, cfg.KeyError(fmt.Sprintf("%s = \"auto\" sizes the micro-batches to the device's memory, but train.backend = %q does not report its memory; "+
			"use train.backend = \"cuda\" (its free memory) or \"sim\" with devices.memory_bytes, or give micro_batches a number", options.SplitKeyName(cfg), cfg.Train.Backend), options.SplitKey(cfg)...)
	default:
		return nil, 0, nil
	}
	est, err := memest.New(ctx, e, cfg.Train.Optimizer, cfg.Train.Momentum, true)
	if err != nil {
		return nil, 0, err
	}
	if sim {
		return est, cfg.Devices.MemoryBytes, nil
	}
	mem, err := dev.DeviceMemory(e.Tier)
	if err != nil {
		est.Close()
		return nil, 0, fmt.Errorf("%s = \"auto\": %w", options.SplitKeyName(cfg), err)
	}
	// What the device holds now stays beside every step: its bytes are
	// resident, its allocations counted with the step's.
	est.Resident = float64(mem.InUse)
	est.OnDevice(dev, mem)
	return est, mem.Limit, nil
}

// FitEvalChunks returns the smallest number of evaluation chunks, from
// start and doubling, whose full-neighbour inference fits capacity by the
// estimate; when not even one node at a time fits, an *EvalInfeasibleError.
func FitEvalChunks(ctx context.Context, e steprun.Env, est *memest.Estimator, capacity int64, start int) (int, error) {
	n := e.DS.NumNodes
	full := sampling.Full{Hops: len(steprun.GraphsPerLayer(e.Model))}
	for chunks := max(1, min(start, n)); chunks < n; chunks = min(n, 2*chunks) {
		fits := true
		for c := 0; c < chunks && fits; c++ {
			blocks, err := full.Sample(ctx, e.Adjs.Adj, steprun.Iota32From(c*n/chunks, (c+1)*n/chunks), 0)
			if err != nil {
				return 0, err
			}
			m, err := est.Infer(blocks)
			if err != nil {
				return 0, err
			}
			fits = m.Peak <= capacity
		}
		if fits {
			return chunks, nil
		}
	}
	worst, err := EvalMinCapacity(ctx, e, est)
	if err != nil {
		return 0, err
	}
	if worst > capacity {
		return 0, &EvalInfeasibleError{Capacity: capacity, MinCapacity: worst, OnDevice: est.Device() != nil}
	}
	return n, nil
}

// EvalMinCapacity returns the smallest capacity evaluation fits in: the
// largest estimated inference peak of one node's full neighbourhood.
func EvalMinCapacity(ctx context.Context, e steprun.Env, est *memest.Estimator) (int64, error) {
	full := sampling.Full{Hops: len(steprun.GraphsPerLayer(e.Model))}
	var worst int64
	for v := range e.DS.NumNodes {
		blocks, err := full.Sample(ctx, e.Adjs.Adj, []int32{int32(v)}, 0)
		if err != nil {
			return 0, err
		}
		m, err := est.Infer(blocks)
		if err != nil {
			return 0, err
		}
		worst = max(worst, m.Peak)
	}
	return worst, nil
}

// EvalInfeasibleError says that evaluation does not fit the device even
// one node at a time.
type EvalInfeasibleError struct {
	Capacity, MinCapacity int64
	OnDevice              bool // as InfeasibleError's
}

func (e *EvalInfeasibleError) Error() string {
	name := capacityName(e.OnDevice)
	return fmt.Sprintf("micro_batches = \"auto\": evaluation does not fit %s = %d (%s) even one node at a time: "+
		"the smallest feasible capacity is %s = %d (%s)", name, e.Capacity, steprun.MiB(e.Capacity), name, e.MinCapacity, steprun.MiB(e.MinCapacity))
}

// partitionerNames lists the registered partitioners other than
// betty-reg, which the message suggests first.
func partitionerNames() []string {
	var out []string
	for _, mi := range registry.Namespace("partitioner") {
		if mi.Name() != "betty-reg" {
			out = append(out, mi.Name())
		}
	}
	return out
}
