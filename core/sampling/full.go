package sampling

import (
	"context"
	"fmt"
	"slices"

	"strata/core/graph"
)

// FullID is the registry ID of the full-neighbour sampler, which names
// the errors of Full.
const FullID = "sampler.full"

// Full is the full-neighbour sampler's draw as a plain value, for the
// callers that need every in-neighbour without a configured module (a
// strategy's evaluation over full neighbourhoods): its blocks are the
// exact Hops-hop in-neighbourhood of the seeds, those of sampler.full
// with layers = Hops. It is a RowSampler of fanout -1 in every block.
type Full struct{ Hops int }

var (
	_ Sampler      = Full{}
	_ GraphSampler = Full{}
	_ RowSampler   = Full{}
)

// Sample implements Sampler. rng is unused: full blocks are deterministic.
func (f Full) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error) {
	if err := CheckInput(FullID, g, seeds); err != nil {
		return nil, err
	}
	return f.SampleGraph(ctx, CSR(g), seeds, rng)
}

// SampleGraph implements GraphSampler: per layer one batched degree read
// and one batched read of the whole rows.
func (f Full) SampleGraph(ctx context.Context, g Graph, seeds []int32, _ uint64) ([]Block, error) {
	if f.Hops < 1 {
		return nil, fmt.Errorf("%s: layers = %d: must be >= 1", FullID, f.Hops)
	}
	if err := CheckSeeds(FullID, g.NumNodes(), seeds); err != nil {
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

// Capabilities implements Describer: full blocks are deterministic and
// hold every in-edge once.
func (Full) Capabilities() Capabilities { return Capabilities{Subset: true} }

// Layers implements Layered.
func (f Full) Layers() int { return f.Hops }

// RowFanouts implements RowSampler: every neighbour in every block.
func (f Full) RowFanouts() ([]int, bool) { return slices.Repeat([]int{-1}, f.Hops), false }

// SampleRows implements RowSampler: the whole rows (a fanout other than
// -1 is refused: the full sampler draws nothing).
func (f Full) SampleRows(g *graph.CSR, rows, dst []int32, l, fanout int, replace bool, rng uint64) ([]int64, []int32, error) {
	if fanout >= 0 {
		return nil, nil, fmt.Errorf("%s: fanout %d in block %d: full blocks take every neighbour (-1)", FullID, fanout, l)
	}
	return SampleRowsWith(g, rows, dst, func(deg int64) int64 { return deg }, func(int, int64) []int64 { return nil })
}

// CheckInput validates the arguments common to samplers: a square graph
// and seeds as CheckSeeds. id names the sampler in the errors.
func CheckInput(id string, g *graph.CSR, seeds []int32) error {
	if g == nil {
		return fmt.Errorf("%s: nil graph", id)
	}
	if g.NumRows != g.NumCols {
		return fmt.Errorf("%s: graph is %d x %d; samplers need a square adjacency", id, g.NumRows, g.NumCols)
	}
	return CheckSeeds(id, g.NumRows, seeds)
}

// CheckSeeds validates the seeds of a graph of n nodes: distinct ids in
// [0, n), and n within int32 ids.
func CheckSeeds(id string, n int, seeds []int32) error {
	if n > 1<<31-1 {
		return fmt.Errorf("%s: graph has %d nodes; blocks use int32 node ids", id, n)
	}
	seen := make(map[int32]struct{}, len(seeds))
	for i, s := range seeds {
		if s < 0 || int(s) >= n {
			return fmt.Errorf("%s: seed %d (position %d) is outside [0,%d)", id, s, i, n)
		}
		if _, dup := seen[s]; dup {
			return fmt.Errorf("%s: seed %d is listed twice", id, s)
		}
		seen[s] = struct{}{}
	}
	return nil
}
