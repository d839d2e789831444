// Package sampling is the contract of neighbourhood samplers (registry
// namespace "sampler"): a batch of seed nodes becomes the message-flow
// blocks of a multi-layer GNN. Implementations live in plugins/sampler.
package sampling

import (
	"context"

	"strata/core/graph"
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
	// samplers that weigh their edges (sampler.randomwalk with weights =
	// true: each edge's normalised visit count, every row summing to 1).
	Adj *graph.CSR
}

// NumEdges returns the number of edges of the block.
func (b *Block) NumEdges() int64 { return b.Adj.NNZ() }

// Layered is implemented by samplers whose block count is set by their
// config, so that a trainer can check it against the model's layer count.
type Layered interface {
	// Layers returns the number of blocks Sample returns.
	Layers() int
}

// NumLayers returns the number of blocks s returns, or 0 if s does not
// say (it is not Layered).
func NumLayers(s Sampler) int {
	if l, ok := s.(Layered); ok {
		return l.Layers()
	}
	return 0
}

// Capabilities declare what a sampler promises, so that one conformance
// suite (samplertest) checks every sampler against its own promises.
type Capabilities struct {
	// Random: the blocks depend on rng (a deterministic sampler ignores it).
	Random bool
	// Replacement: a destination may list the same source more than once.
	Replacement bool
	// Subset: every edge of a block is an edge of the graph (false for
	// samplers that make edges of their own, such as random-walk
	// neighbourhoods).
	Subset bool
}

// Describer is implemented by samplers that declare their capabilities;
// a sampler that does not is treated as random, without replacement, and
// a subset of the graph.
type Describer interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns what s declares, or the default.
func CapabilitiesOf(s Sampler) Capabilities {
	if d, ok := s.(Describer); ok {
		return d.Capabilities()
	}
	return Capabilities{Random: true, Subset: true}
}
