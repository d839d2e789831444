// Package sampler holds neighbourhood samplers: modules of the "sampler"
// registry namespace that turn a batch of seed nodes into the message-flow
// blocks of a multi-layer GNN.
//
// Registered modules:
//
//	sampler.full        every in-neighbour, for `layers` hops
//	sampler.uniform     uniform neighbour sampling with per-layer `fanouts`,
//	                    with or without `replace`
//	sampler.khop        XGNN's KHop: uniform without replacement, sampled
//	                    positions deduplicated, then one batched read per layer
//	sampler.randomwalk  PinSAGE: the `top_k` nodes most visited by `walks`
//	                    random walks of `walk_length` hops, optional weights
//
// Fanouts are listed FIRST LAYER FIRST, DGL's convention: fanouts[0]
// belongs to blocks[0], the first GNN layer, the hop FARTHEST from the
// seeds; the last fanout is the seeds' own. PyG's NeighborLoader and the
// peer's minibatch.py list them seeds first ("25,10" there is
// fanouts = [10, 25] here).
//
// The random samplers run rows in parallel on GOMAXPROCS goroutines and
// are deterministic: the blocks depend only on the graph, the seeds, rng
// and the config (each destination row draws from a stream derived from
// rng, the block index and its node id), not on GOMAXPROCS. They are safe
// for concurrent calls.
package sampler

import (
	"context"
	"fmt"

	"strata/core/graph"
	"strata/core/registry"
)

// Sampler builds the blocks that compute the final-layer outputs of seeds.
//
// The graph follows the core/graph convention: row i of g lists the
// sources (in-neighbours) of node i, and g must be square. seeds are
// distinct node ids. rng seeds the sampler's randomness (deterministic
// samplers ignore it); the same arguments give the same blocks.
//
// Blocks are returned FIRST LAYER FIRST (the DGL order): blocks[0] consumes
// the input features of blocks[0].Src, and blocks[len-1].Dst == seeds. For
// consecutive blocks, blocks[l].Dst == blocks[l+1].Src.
type Sampler interface {
	Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error)
}

// Block is one layer of message flow: the nodes it computes (Dst), the
// nodes it reads (Src) and the edges between them.
type Block struct {
	// Dst are the global ids of the block's destination nodes.
	Dst []int32
	// Src are the global ids of the block's source nodes. The first
	// len(Dst) sources are the destinations themselves, in the same order,
	// so a layer can read a destination's own previous representation at
	// the same local id.
	Src []int32
	// Adj holds the edges in local ids: len(Dst) rows, len(Src) columns;
	// row i lists the local source ids of the in-edges of Dst[i]. Values is
	// nil (normalisation weights are up to the consumer), except for
	// sampler.randomwalk with weights = true, where it holds each edge's
	// normalised visit count (every row sums to 1).
	Adj *graph.CSR
}

// Layered is implemented by samplers whose block count is set by their
// config (sampler.uniform, sampler.khop, sampler.randomwalk), so that a
// trainer can check it against the model's layer count.
type Layered interface {
	// Layers returns the number of blocks Sample returns.
	Layers() int
}

// NumLayers returns the number of blocks s returns: Layers() for a
// Layered sampler, the layers field of sampler.full (whose exported
// Layers field rules out a method of that name), or 0 if unknown.
func NumLayers(s Sampler) int {
	switch x := s.(type) {
	case Layered:
		return x.Layers()
	case *Full:
		return x.Layers
	}
	return 0
}

// NumEdges returns the number of edges of the block.
func (b *Block) NumEdges() int64 { return b.Adj.NNZ() }

// checkInput validates the arguments common to samplers.
func checkInput(id string, g *graph.CSR, seeds []int32) error {
	if g == nil {
		return fmt.Errorf("%s: nil graph", id)
	}
	if g.NumRows != g.NumCols {
		return fmt.Errorf("%s: graph is %d x %d; samplers need a square adjacency", id, g.NumRows, g.NumCols)
	}
	if g.NumRows > 1<<31-1 {
		return fmt.Errorf("%s: graph has %d nodes; blocks use int32 node ids", id, g.NumRows)
	}
	seen := make(map[int32]struct{}, len(seeds))
	for i, s := range seeds {
		if s < 0 || int(s) >= g.NumRows {
			return fmt.Errorf("%s: seed %d (position %d) is outside [0,%d)", id, s, i, g.NumRows)
		}
		if _, dup := seen[s]; dup {
			return fmt.Errorf("%s: seed %d is listed twice", id, s)
		}
		seen[s] = struct{}{}
	}
	return nil
}

func init() {
	registry.Register(new(Full))
	registry.Register(new(Uniform))
	registry.Register(new(KHop))
	registry.Register(new(RandomWalk))
}
