package microsplit

import (
	"context"
	"fmt"

	"strata/core/config"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
)

// CheckAutoMicro checks that micro_batches = "auto" has a device
// capacity to fit.
func CheckAutoMicro(cfg *config.Config) error {
	if cfg.Train.Backend != "sim" {
		return cfg.KeyError(fmt.Sprintf("%s = \"auto\" sizes the micro-batches to a simulated device's memory, but train.backend = %q; set train.backend = \"sim\" and devices.memory_bytes, or give micro_batches a number", options.SplitKeyName(cfg), cfg.Train.Backend), options.SplitKey(cfg)...)
	}
	if cfg.Devices.MemoryBytes <= 0 {
		return cfg.KeyError(options.SplitKeyName(cfg)+" = \"auto\" sizes the micro-batches to the device's memory, but devices.memory_bytes is 0 (unlimited); set devices.memory_bytes, or give micro_batches a number", options.SplitKey(cfg)...)
	}
	return nil
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
		return 0, &EvalInfeasibleError{Capacity: capacity, MinCapacity: worst}
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
}

func (e *EvalInfeasibleError) Error() string {
	return fmt.Sprintf("micro_batches = \"auto\": evaluation does not fit devices.memory_bytes = %d (%s) even one node at a time: "+
		"the smallest feasible capacity is devices.memory_bytes = %d (%s)", e.Capacity, steprun.MiB(e.Capacity), e.MinCapacity, steprun.MiB(e.MinCapacity))
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
