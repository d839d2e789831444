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
	_ Sampler    = Full{}
	_ RowSampler = Full{}
	_ Drawer     = Full{}
)

// Sample implements Sampler (the base, SampleLayers). rng is unused:
// full blocks are deterministic.
func (f Full) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error) {
	return SampleLayers(ctx, f, g, seeds, rng)
}

// DrawLayer implements Drawer: one batched degree read and one batched
// read of the whole rows.
func (Full) DrawLayer(_ context.Context, g Graph, _ int, dst []int32, _ uint64) ([]int64, []int32, []float32, error) {
	deg := make([]int64, len(dst))
	g.NumNeighbors(dst, deg)
	indptr := make([]int64, len(dst)+1)
	for i, d := range deg {
		indptr[i+1] = indptr[i] + d
	}
	nbr := make([]int32, indptr[len(dst)])
	g.NeighborsBatch(dst, indptr, nil, nbr)
	return indptr, nbr, nil, nil
}

// SamplerID implements Named.
func (Full) SamplerID() string { return FullID }

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
	// Seen seeds in a bitset of the graph's nodes where it is no larger
	// than a few words per seed (an evaluation's chunk of every node: a
	// map of a million seeds cost a fifth of R-MAT 2^20's layer-wise
	// evaluation), else in a map.
	var bits []uint64
	var seen map[int32]struct{}
	if n/64 <= 4*len(seeds) {
		bits = make([]uint64, n/64+1)
	} else {
		seen = make(map[int32]struct{}, len(seeds))
	}
	for i, s := range seeds {
		if s < 0 || int(s) >= n {
			return fmt.Errorf("%s: seed %d (position %d) is outside [0,%d)", id, s, i, n)
		}
		dup := false
		if bits != nil {
			w, b := s/64, uint64(1)<<(s%64)
			dup, bits[w] = bits[w]&b != 0, bits[w]|b
		} else {
			_, dup = seen[s]
			seen[s] = struct{}{}
		}
		if dup {
			return fmt.Errorf("%s: seed %d is listed twice", id, s)
		}
	}
	return nil
}
