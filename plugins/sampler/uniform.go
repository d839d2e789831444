package sampler

import (
	"context"
	"slices"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// Uniform is GraphSAGE's uniform neighbour sampler (DGL's
// MultiLayerNeighborSampler): each destination of a block draws
// Fanouts[l] of its in-neighbours uniformly at random.
//
// Fanouts are listed FIRST LAYER FIRST, as in DGL: Fanouts[0] is the fanout
// of blocks[0], the first GNN layer, i.e. the hop FARTHEST from the seeds;
// the last entry is the fanout of the seeds themselves. (PyG's
// NeighborLoader and the peer's minibatch.py list them seeds first: their
// "25,10" is fanouts = [10, 25] here.)
//
// Without replacement a node of in-degree <= fanout keeps all its
// in-neighbours (in CSR order); the others get a uniform random subset of
// fanout distinct neighbour positions (Floyd's algorithm: exactly fanout
// draws, deduplicated in a bitmap or, for rows over 4096 neighbours, a
// hash set), read in CSR order. With replacement a node with at least one
// in-neighbour gets exactly fanout independent draws (duplicate edges
// possible), in draw order. A fanout of -1 keeps every in-neighbour.
//
// Randomness: row v of block l uses its own stream derived from (rng, l,
// v), so the result is independent of GOMAXPROCS. Rows are sampled in
// parallel; relabelling to local ids is one ordered pass per layer.
type Uniform struct {
	Fanouts []int `toml:"fanouts" range:"[1,1048576]" special:"-1:all neighbours" doc:"neighbours per destination, first layer (farthest from the seeds) first, as DGL; one entry per model layer"`
	Replace bool  `toml:"replace" doc:"sample with replacement (exactly fanout draws per node with neighbours)"`
}

// StrataModule registers sampler.uniform.
func (*Uniform) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "sampler.uniform",
		New: func() registry.Module { return &Uniform{Fanouts: []int{10, 25}} },
		Doc: "uniform neighbour sampling (GraphSAGE/DGL), per-layer fanouts",
		// DGL's NeighborSampler, PyG's NeighborLoader.
		Aliases: []string{"neighbor", "neighbour"},
	}
}

// Layers returns the number of blocks (GNN layers): len(Fanouts).
func (u *Uniform) Layers() int { return len(u.Fanouts) }

// Validate checks the config.
func (u *Uniform) Validate() error { return sampling.CheckFanouts(u.Fanouts) }

// SetFanouts implements sampling.Fanned.
func (u *Uniform) SetFanouts(f []int) { u.Fanouts = f }

// RowFanouts implements sampling.RowSampler.
func (u *Uniform) RowFanouts() ([]int, bool) { return u.Fanouts, u.Replace }

// SampleRows implements sampling.RowSampler (see the function SampleRows).
func (u *Uniform) SampleRows(g *graph.CSR, rows, dst []int32, l, fanout int, replace bool, rng uint64) ([]int64, []int32, error) {
	return SampleRows(g, rows, dst, l, fanout, replace, rng)
}

// uniformCount is the number of neighbours a node of in-degree deg gets.
func uniformCount(deg, k int64, replace bool) int64 {
	switch {
	case k < 0:
		return deg
	case replace:
		if deg == 0 {
			return 0
		}
		return k
	default:
		return min(deg, k)
	}
}

// Sample implements Sampler (the base, sampling.SampleLayers).
func (u *Uniform) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error) {
	return sampling.SampleLayers(ctx, u, g, seeds, rng)
}

// DrawLayer implements sampling.Drawer: one batched degree read, then
// each row's picked neighbours requested one by one as soon as they are
// picked.
func (u *Uniform) DrawLayer(_ context.Context, g Graph, l int, dst []int32, rng uint64) ([]int64, []int32, []float32, error) {
	s := getScratch()
	defer putScratch(s)
	replace := u.Replace
	k := int64(u.Fanouts[l])
	degs := s.degrees(g, dst)
	indptr := prefixCounts(degs, func(d int64) int64 { return uniformCount(d, k, replace) })
	nbr := make([]int32, indptr[len(dst)])
	s.parallel(len(dst), indptr, func(w, lo, hi int) {
		ws := s.worker(w)
		for i := lo; i < hi; i++ {
			v, deg := dst[i], degs[i]
			out := nbr[indptr[i]:indptr[i+1]]
			if len(out) == 0 {
				continue
			}
			g.Neighbors(v, uniformPick(rng, l, v, deg, k, replace, ws), out)
		}
	})
	return indptr, nbr, nil, nil
}

// uniformPick returns the positions in v's row of deg in-edges that
// v's draw in layer l takes with fanout k (nil: the whole row, in order).
// The draw depends only on (rng, l, v), so any process sampling v draws
// the same (SampleRows). The result may live in ws until its next use.
func uniformPick(rng uint64, l int, v int32, deg, k int64, replace bool, ws *workerScratch) []int64 {
	if k < 0 || !replace && deg <= k {
		return nil
	}
	r := newRNG(rng, l, v)
	if !replace {
		return pickSorted(&r, deg, k, false, ws)
	}
	sel := ws.sel[:0]
	for range k {
		sel = append(sel, r.below(deg))
	}
	ws.sel = sel
	return sel
}

// floyd appends k distinct positions drawn uniformly from [0, deg) (k <
// deg) to sel with Floyd's algorithm: for j = deg-k .. deg-1 draw t in
// [0, j]; take t unless it was taken already, then take j.
func floyd(r *rngStream, deg, k int64, sel []int64, set *posSet) []int64 {
	if k <= 32 { // linear membership test beats hashing for short rows
		for j := deg - k; j < deg; j++ {
			t := r.below(j + 1)
			if slices.Contains(sel, t) {
				t = j
			}
			sel = append(sel, t)
		}
		return sel
	}
	set.reset(int(k))
	for j := deg - k; j < deg; j++ {
		t := r.below(j + 1)
		if !set.insert(t) {
			t = j
			set.insert(j)
		}
		sel = append(sel, t)
	}
	return sel
}

// Capabilities implements sampling.Describer: random, with replacement
// when replace is set.
func (u *Uniform) Capabilities() sampling.Capabilities {
	return sampling.Capabilities{Random: true, Replacement: u.Replace, Subset: true}
}
