package sampler

import (
	"context"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// KHop is XGNN's KHop sampler (Fig. 5 of the XGNN paper, VLDB 2024): the
// same blocks as sampler.uniform without replacement, in distribution, with
// XGNN's access pattern:
//
//  1. for every destination of the layer, draw random neighbour positions
//     idx = random() mod degree and deduplicate them (XGNN uses a hash
//     table in GPU shared memory; here a bitmap over the row's positions,
//     or a hash set for rows over 4096 neighbours) until fanout distinct
//     positions are held (a node of degree <= fanout takes all positions);
//     the positions are turned into edge addresses in ascending order,
//     without touching the column array;
//  2. one batched read per layer gathers the columns at all the addresses
//     of the layer, in address order within each row.
//
// Difference from sampler.uniform: uniform runs Floyd's algorithm (exactly
// fanout draws per row) and reads each row's neighbours as soon as they
// are picked; KHop draws with rejection (on average degree·(H(degree) -
// H(degree-fanout)) draws, close to fanout when fanout << degree, more as
// fanout approaches the degree) and separates address generation from
// one coalesced gather, which is what makes it cheap on a remote or
// device-resident graph (on a CPU too, the independent loads of the
// gather loop overlap better than uniform's per-row reads: see
// BenchmarkSampleRMAT18). Both pick a uniformly random fanout-subset of the
// in-neighbour positions, in CSR order, but from different random draws:
// for the same rng the two samplers return different (equally
// distributed) blocks. There is no replacement option. Fanouts are listed
// first layer (farthest from the seeds) first, as for sampler.uniform.
type KHop struct {
	Fanouts []int `toml:"fanouts" range:"[1,1048576]" special:"-1:all neighbours" doc:"neighbours per destination, first layer (farthest from the seeds) first, as DGL; one entry per model layer"`
}

// StrataModule registers sampler.khop.
func (*KHop) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "sampler.khop",
		New: func() registry.Module { return &KHop{Fanouts: []int{10, 25}} },
		Doc: "XGNN KHop: deduplicated neighbour positions, batched reads",
	}
}

// Layers returns the number of blocks (GNN layers): len(Fanouts).
func (k *KHop) Layers() int { return len(k.Fanouts) }

// Validate checks the config.
func (k *KHop) Validate() error { return sampling.CheckFanouts(k.Fanouts) }

// Sample implements Sampler (the base, sampling.SampleLayers).
func (kh *KHop) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error) {
	return sampling.SampleLayers(ctx, kh, g, seeds, rng)
}

// DrawLayer implements sampling.Drawer: one batched degree read and one
// batched neighbour read.
func (kh *KHop) DrawLayer(_ context.Context, g Graph, l int, dst []int32, rng uint64) ([]int64, []int32, []float32, error) {
	s := getScratch()
	defer putScratch(s)
	k := int64(kh.Fanouts[l])
	degs := s.degrees(g, dst)
	indptr := prefixCounts(degs, func(d int64) int64 { return uniformCount(d, k, false) })
	m := indptr[len(dst)]
	if int64(cap(s.pos)) < m {
		s.pos = make([]int64, m)
	}
	pos := s.pos[:m]
	// Phase 1: the positions of the sampled neighbours, ascending
	// within each row.
	s.parallel(len(dst), indptr, func(w, lo, hi int) {
		ws := s.worker(w)
		for i := lo; i < hi; i++ {
			deg := degs[i]
			out := pos[indptr[i]:indptr[i+1]]
			if k < 0 || deg <= k {
				for q := range out {
					out[q] = int64(q)
				}
				continue
			}
			r := newRNG(rng, l, dst[i])
			copy(out, pickSorted(&r, deg, k, true, ws))
		}
	})
	// Phase 2: one batched read of the whole layer.
	nbr := make([]int32, m)
	g.NeighborsBatch(dst, indptr, pos, nbr)
	return indptr, nbr, nil, nil
}

// Capabilities implements sampling.Describer: random, without replacement.
func (*KHop) Capabilities() sampling.Capabilities {
	return sampling.Capabilities{Random: true, Subset: true}
}
