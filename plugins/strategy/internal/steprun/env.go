// Package steprun is the step machinery the strategies share (part of
// the internal kit of plugins/strategy, docs/architecture.md): train.Env
// in short names (Env), the block runner that binds a batch's blocks and
// trains or predicts over them (Runner), the feature rows a step uploads,
// and the batch helpers (shuffles, dropout seeds, the all-reduce of
// replicas' gradients, a sampler's check against the model).
//
// A strategy builds a train.Stepper; core/train runs the loop. Every
// strategy is a package of its own under plugins/strategy; none imports
// another, and all of them may import this kit.
package steprun

import (
	"io"
	"strata/core/backend"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/tensor"
	"strata/core/train"
)

// Env is train.Env in the short names the steppers use.
type Env struct {
	Be    backend.Backend
	DT    tensor.DType
	Tier  tensor.Tier
	Model *ir.Graph
	DS    *graph.Dataset
	Feats []float32
	// Disk, when set, serves the input rows of mini-batches (GatherInput)
	// from the dataset file instead of Feats (minibatch.features.tier).
	Disk RowSource
	// Entries, when set, holds the features by their non-zeros: the input
	// rows of blocks are gathered and bound as entries (UseSparseInput,
	// entries.go).
	Entries *graph.CSR
	// half is the storage of 16-bit feature rows (tensor.Float16 or
	// tensor.BFloat16; 0: float32 rows in feats), whose bits feats16 holds.
	Half    tensor.DType
	feats16 []uint16
	Dim     int
	Adjs    *train.Adjacencies
	Seed    uint64
	Host    modhost.Host // for the cost models (memory estimate)
	Log     io.Writer    // progress of long steps (nil: none)
	// NewOptimizer returns an optimizer for a replica over a backend,
	// following the run's schedule and clipping (train.Env.NewOptimizer).
	NewOptimizer func(backend.Backend) (train.Optimizer, error)
	// Link is the link-prediction task (train.task = "link"), or nil.
	Link *train.LinkTask
}

func EnvOf(e *train.Env) Env {
	s := Env{Be: e.Backend, DT: e.DType, Tier: e.Tier, Model: e.Model, DS: e.Dataset, Feats: e.Features,
		feats16: e.Features16, Dim: e.Dim, Adjs: e.Adjs, Seed: e.Seed, Host: e.Host, Log: e.Progress,
		NewOptimizer: e.NewOptimizer, Link: e.Link}
	if e.FeatureDType.IsHalf() {
		s.Half = e.FeatureDType
	}
	return s
}

// PipelinedS predicts a pipeline of batches in which batch i+1's transfers
// run while batch i computes: the first transfer, then per batch the
// longer of its computation and the next batch's transfer.
func PipelinedS(transfer, compute []float64) float64 {
	if len(transfer) == 0 {
		return 0
	}
	t := transfer[0]
	for i, c := range compute {
		next := 0.0
		if i+1 < len(transfer) {
			next = transfer[i+1]
		}
		t += max(c, next)
	}
	return t
}

// LockstepS predicts a pipeline of batches through stages in lock step,
// each stage one batch ahead of the next: stages[s][i] is stage s's time
// on batch i, and tick k runs stage s on batch k-s, as long as its
// slowest stage. With two stages it is PipelinedS.
func LockstepS(stages ...[]float64) float64 {
	n := 0
	for _, st := range stages {
		n = max(n, len(st))
	}
	if n == 0 {
		return 0
	}
	var t float64
	for k := range n + len(stages) - 1 {
		var tick float64
		for s, st := range stages {
			if i := k - s; i >= 0 && i < len(st) {
				tick = max(tick, st[i])
			}
		}
		t += tick
	}
	return t
}
