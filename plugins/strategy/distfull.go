package strategy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"strata/core/comm"
	"strata/core/registry"
	"strata/core/train"
)

// DistFull is strategy.distfull: distributed full-graph training over the
// ranks of an MPI job. Each rank owns a partition's nodes (their in-edges
// and feature rows) and computes the loss of the training nodes it owns
// over their full L-hop neighbourhoods: each step it fetches the
// neighbour lists and feature rows of the halo (the nodes of that
// neighbourhood owned by other ranks) by all-to-all-v, and the gradients
// are all-reduced: one optimizer step per epoch, the gradient of
// strategy.fullgraph. The halo is exchanged once per step for all L hops
// (its input rows), not layer by layer: the layers of one model run as
// one program.
type DistFull struct{}

var (
	_ train.Strategy   = (*DistFull)(nil)
	_ comm.Distributed = (*DistFull)(nil)
)

// StrataModule implements registry.Module.
func (*DistFull) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.distfull", New: func() registry.Module { return new(DistFull) },
		Doc: "distributed full-graph training over MPI ranks: a METIS partition per rank, the L-hop halo's rows by all-to-all-v, all-reduced gradients (docs/distributed.md)"}
}

// Distributed implements comm.Distributed.
func (*DistFull) Distributed() {}

// Uses implements train.Strategy.
func (*DistFull) Uses() train.Uses { return train.Uses{RankPartition: true} }

// NewStepper implements train.Strategy.
func (*DistFull) NewStepper(ctx context.Context, env *train.Env) (train.Stepper, error) {
	layers := 0
	for _, op := range env.Model.Ops {
		layers = max(layers, int(op.Layer)+1)
	}
	d, err := newDistRank(ctx, env.Config, envOf(env), slices.Repeat([]int{-1}, layers), false)
	if err != nil {
		return nil, err
	}
	f := &distFull{distRank: d}
	f.predict = f.predictedFeatureBytes()
	return f, nil
}

type distFull struct{ *distRank }

var _ train.ResultReporter = (*distFull)(nil)

// Epoch implements train.Stepper: one step over every training node.
func (f *distFull) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	t0 := time.Now()
	f.startEpoch()
	me := int32(f.c.Rank())
	var mine []int32
	for _, v := range f.e.ds.Train {
		if f.owner[v] == me {
			mine = append(mine, v)
		}
	}
	loss, err := f.step(ctx, mine, len(f.e.ds.Train), 0, seed, update)
	if err != nil {
		return 0, fmt.Errorf("rank %d: %w", me, err)
	}
	f.endEpoch(t0)
	return loss, nil
}

// predictedFeatureBytes is what the partition says this rank sends each
// epoch: the feature rows of its nodes that lie in another rank's halo,
// the L-hop in-neighbourhood of that rank's training nodes.
func (f *distFull) predictedFeatureBytes() int64 {
	me := int32(f.c.Rank())
	adj := f.e.adjs.Adj
	rows := int64(0)
	seen := make([]bool, f.e.ds.NumNodes)
	for j := 0; j < f.c.Size(); j++ {
		if int32(j) == me {
			continue
		}
		clear(seen)
		var front []int32
		for _, v := range f.e.ds.Train {
			if f.owner[v] == int32(j) && !seen[v] {
				seen[v] = true
				front = append(front, v)
			}
		}
		for range f.fanouts {
			var next []int32
			for _, v := range front {
				for k := adj.Indptr[v]; k < adj.Indptr[v+1]; k++ {
					if u := int32(adj.Col(k)); !seen[u] {
						seen[u] = true
						next = append(next, u)
					}
				}
			}
			front = next
		}
		for v, s := range seen {
			if s && f.owner[v] == me {
				rows++
			}
		}
	}
	return rows * int64(f.e.dim) * 4
}

func init() { registry.Register(new(DistFull)) }
