package toyplugins

import (
	"context"
	"slices"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// FirstK is sampler.toy-first-k: every destination keeps its first k
// distinct in-neighbours (CSR order), for `hops` blocks. Deterministic. It
// implements only its per-layer draw; the sampler base
// (sampling.SampleLayers) checks the input, walks the layers and
// relabels.
type FirstK struct {
	K    int `toml:"k" range:"[1,)" doc:"in-neighbours kept per node"`
	Hops int `toml:"hops" range:"[1,)" doc:"blocks (one per GNN layer)"`
}

var (
	_ sampling.Sampler   = (*FirstK)(nil)
	_ sampling.Drawer    = (*FirstK)(nil)
	_ sampling.Describer = (*FirstK)(nil)
)

// StrataModule implements registry.Module.
func (*FirstK) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "sampler.toy-first-k", New: func() registry.Module { return &FirstK{K: 3, Hops: 2} },
		Doc: "toy: the first k in-neighbours of every node"}
}

// Layers implements sampling.Layered.
func (f *FirstK) Layers() int { return f.Hops }

// Capabilities implements sampling.Describer.
func (*FirstK) Capabilities() sampling.Capabilities { return sampling.Capabilities{Subset: true} }

// Sample implements sampling.Sampler (the base).
func (f *FirstK) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]sampling.Block, error) {
	return sampling.SampleLayers(ctx, f, g, seeds, rng)
}

// DrawLayer implements sampling.Drawer: the first K distinct neighbours of
// each row.
func (f *FirstK) DrawLayer(_ context.Context, g sampling.Graph, _ int, dst []int32, _ uint64) ([]int64, []int32, []float32, error) {
	deg := make([]int64, len(dst))
	g.NumNeighbors(dst, deg)
	indptr := make([]int64, 1, len(dst)+1)
	var nbr []int32
	for i, v := range dst {
		row := make([]int32, deg[i])
		g.Neighbors(v, nil, row)
		start := len(nbr)
		for _, u := range row {
			if len(nbr)-start == f.K {
				break
			}
			if !slices.Contains(nbr[start:], u) {
				nbr = append(nbr, u)
			}
		}
		indptr = append(indptr, int64(len(nbr)))
	}
	return indptr, nbr, nil, nil
}

func init() { registry.Register(new(FirstK)) }
