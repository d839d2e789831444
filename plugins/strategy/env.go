// Package strategy holds strata's built-in training strategies: modules of
// the registry namespace "strategy" that train.mode picks by name.
//
//	strategy.fullgraph  every step over the whole graph with one program
//	strategy.micro      Betty: the training nodes split into micro-batches
//	                    (a partitioner, full-neighbour blocks), gradients
//	                    accumulated, one optimizer step per epoch
//	strategy.minibatch  sampled mini-batches on a prefetching pipeline,
//	                    optionally through the tiered feature store and
//	                    data-parallel over several devices
//	strategy.hybrid     HyScale-GNN: each mini-batch split between CPU
//	                    trainers and the devices, two-stage feature
//	                    prefetch, dynamic resource management
//	strategy.chunked    HongTu: full-graph, layer by layer over the chunks
//	                    of a 2-level partition, vertex data in a host tier
//
// A strategy builds a train.Stepper; core/train runs the loop.
package strategy

import (
	"io"
	"strata/core/backend"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/tensor"
	"strata/core/train"
)

// stepEnv is train.Env in the short names the steppers use.
type stepEnv struct {
	be    backend.Backend
	dt    tensor.DType
	tier  tensor.Tier
	model *ir.Graph
	ds    *graph.Dataset
	feats []float32
	// half is the storage of 16-bit feature rows (tensor.Float16 or
	// tensor.BFloat16; 0: float32 rows in feats), whose bits feats16 holds.
	half    tensor.DType
	feats16 []uint16
	dim     int
	adjs    *train.Adjacencies
	seed    uint64
	host    modhost.Host // for the cost models (memory estimate)
	log     io.Writer    // progress of long steps (nil: none)
}

func envOf(e *train.Env) stepEnv {
	s := stepEnv{be: e.Backend, dt: e.DType, tier: e.Tier, model: e.Model, ds: e.Dataset, feats: e.Features,
		feats16: e.Features16, dim: e.Dim, adjs: e.Adjs, seed: e.Seed, host: e.Host, log: e.Progress}
	if e.FeatureDType.IsHalf() {
		s.half = e.FeatureDType
	}
	return s
}

// pipelinedS predicts a pipeline of batches in which batch i+1's transfers
// run while batch i computes: the first transfer, then per batch the
// longer of its computation and the next batch's transfer.
func pipelinedS(transfer, compute []float64) float64 {
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
