package sampler

import (
	"context"
	"fmt"
	"slices"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// Full keeps every in-neighbour: its blocks are the exact `layers`-hop
// in-neighbourhood of the seeds, as full-graph training computes it.
type Full struct {
	Hops int `toml:"layers" range:"[1,64]" doc:"number of hops (one block per GNN layer); match model.layers"`
}

// StrataModule registers sampler.full.
func (*Full) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "sampler.full",
		New: func() registry.Module { return &Full{Hops: 2} },
		Doc: "full-neighbour blocks: every in-neighbour for `layers` hops",
	}
}

// Layers implements sampling.Layered.
func (f *Full) Layers() int { return f.Hops }

// Capabilities implements sampling.Describer: full blocks are
// deterministic and hold every in-edge once.
func (*Full) Capabilities() sampling.Capabilities {
	return sampling.Capabilities{Subset: true}
}

// Validate checks the config.
func (f *Full) Validate() error {
	if f.Hops < 1 {
		return fmt.Errorf("layers = %d: must be >= 1", f.Hops)
	}
	return nil
}

// Sample implements Sampler. rng is unused: full blocks are deterministic.
func (f *Full) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error) {
	if err := checkInput("sampler.full", g, seeds); err != nil {
		return nil, err
	}
	return f.SampleGraph(ctx, sampling.CSR(g), seeds, rng)
}

// SampleGraph implements sampling.GraphSampler: per layer one batched
// degree read and one batched read of the whole rows.
func (f *Full) SampleGraph(ctx context.Context, g Graph, seeds []int32, rng uint64) ([]Block, error) {
	const id = "sampler.full"
	if err := checkSeeds(id, g.NumNodes(), seeds); err != nil {
		return nil, err
	}
	// local maps a global id to its local id in the current Src list. Each
	// block's Dst is the next block's Src prefix in the same order, so one
	// map serves all layers.
	local := make(map[int32]int32, len(seeds)*4)
	for i, s := range seeds {
		local[s] = int32(i)
	}
	blocks := make([]Block, f.Hops)
	dst := slices.Clone(seeds)
	for l := f.Hops - 1; l >= 0; l-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		deg := make([]int64, len(dst))
		g.NumNeighbors(dst, deg)
		indptr := make([]int64, len(dst)+1)
		for i, d := range deg {
			indptr[i+1] = indptr[i] + d
		}
		idx := make([]int32, indptr[len(dst)])
		g.NeighborsBatch(dst, indptr, nil, idx)
		src := slices.Clone(dst)
		for e, c := range idx {
			if e%(1<<16) == 0 && e > 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			li, ok := local[c]
			if !ok {
				li = int32(len(src))
				local[c] = li
				src = append(src, c)
			}
			idx[e] = li
		}
		blocks[l] = Block{
			Dst: dst,
			Src: src,
			Adj: &graph.CSR{NumRows: len(dst), NumCols: len(src), Indptr: indptr, Idx32: idx},
		}
		dst = src
	}
	return blocks, nil
}
