package toyplugins

import (
	"context"
	"fmt"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// FirstK is sampler.toy-first-k: every destination keeps its first k
// in-neighbours (CSR order), for `hops` blocks. Deterministic.
type FirstK struct {
	K    int `toml:"k" range:"[1,)" doc:"in-neighbours kept per node"`
	Hops int `toml:"hops" range:"[1,)" doc:"blocks (one per GNN layer)"`
}

var (
	_ sampling.Sampler   = (*FirstK)(nil)
	_ sampling.Layered   = (*FirstK)(nil)
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

// Sample implements sampling.Sampler.
func (f *FirstK) Sample(ctx context.Context, g *graph.CSR, seeds []int32, _ uint64) ([]sampling.Block, error) {
	if g == nil || g.NumRows != g.NumCols {
		return nil, fmt.Errorf("toy-first-k: want a square graph")
	}
	seen := make(map[int32]bool, len(seeds))
	for _, s := range seeds {
		if s < 0 || int(s) >= g.NumRows || seen[s] {
			return nil, fmt.Errorf("toy-first-k: bad or repeated seed %d", s)
		}
		seen[s] = true
	}
	blocks := make([]sampling.Block, f.Hops)
	dst := append([]int32(nil), seeds...)
	for l := f.Hops - 1; l >= 0; l-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		local := make(map[int32]int32, len(dst))
		src := append([]int32(nil), dst...)
		for i, v := range dst {
			local[v] = int32(i)
		}
		indptr := make([]int64, 1, len(dst)+1)
		var cols []int32
		for _, v := range dst {
			dup := map[int64]bool{}
			for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
				u := g.Col(e)
				if len(dup) == f.K {
					break
				}
				if dup[u] {
					continue
				}
				dup[u] = true
				id, ok := local[int32(u)]
				if !ok {
					id = int32(len(src))
					local[int32(u)] = id
					src = append(src, int32(u))
				}
				cols = append(cols, id)
			}
			indptr = append(indptr, int64(len(cols)))
		}
		if cols == nil {
			cols = []int32{}
		}
		adj := &graph.CSR{NumRows: len(dst), NumCols: len(src), Indptr: indptr, Idx32: cols}
		blocks[l] = sampling.Block{Dst: dst, Src: src, Adj: adj}
		dst = src
	}
	return blocks, nil
}

func init() { registry.Register(new(FirstK)) }
