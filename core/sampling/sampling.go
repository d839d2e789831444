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
	// Excluded, when set, is the in-degree (weighted, for a weighted
	// graph) each node lost in the graph the block reads: in-edges taken
	// out of the graph for this batch (link prediction's own edges).
	// Degree-normalised weights (GCN's) then use the graph's degrees
	// less these, as they would in the graph without those edges.
	Excluded map[int32]float64
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

// Graph is read access to a graph's topology, XGNN's NumNeighbor and
// Neighbors in batched form. A sampler that reads only through it can
// sample a graph spread over devices and the host (core/store), where
// every read is served by the tier holding the row and counted on its
// link. Positions are offsets within a node's row (0 .. degree-1), and
// neighbours are in-neighbours (row i lists the sources of node i).
// Implementations are safe for concurrent use.
type Graph interface {
	// NumNodes returns the number of nodes.
	NumNodes() int
	// NumNeighbors writes the degree of ids[i] into deg[i]: one batched
	// read.
	NumNeighbors(ids []int32, deg []int64)
	// Neighbors writes the neighbours at positions pos of v's row into
	// out (pos nil: the whole row), requesting them one by one, as a
	// sampler does that reads each neighbour as soon as it is picked.
	Neighbors(v int32, pos []int64, out []int32)
	// NeighborsBatch writes, for every i, the neighbours of ids[i] at
	// positions pos[rowptr[i]:rowptr[i+1]] (ascending within a row; pos
	// nil: whole rows) into out[rowptr[i]:rowptr[i+1]]: one batched
	// request, in which positions of a row that share a memory
	// transaction are read together (XGNN's coalesced KHop reads).
	NeighborsBatch(ids []int32, rowptr []int64, pos []int64, out []int32)
}

// GraphSampler is implemented by samplers that read the graph only
// through Graph. Sample(ctx, g, ...) equals SampleGraph(ctx, CSR(g), ...).
type GraphSampler interface {
	SampleGraph(ctx context.Context, g Graph, seeds []int32, rng uint64) ([]Block, error)
}

// CSR returns the access API of an in-memory graph.
func CSR(g *graph.CSR) Graph { return csrGraph{g} }

type csrGraph struct{ g *graph.CSR }

var _ Graph = csrGraph{}

func (c csrGraph) NumNodes() int { return c.g.NumRows }

func (c csrGraph) NumNeighbors(ids []int32, deg []int64) {
	ip := c.g.Indptr
	for i, v := range ids {
		deg[i] = ip[v+1] - ip[v]
	}
}

func (c csrGraph) Neighbors(v int32, pos []int64, out []int32) {
	start := c.g.Indptr[v]
	if pos == nil {
		ReadRow(c.g, start, out)
		return
	}
	ReadAt(c.g, start, pos, out)
}

func (c csrGraph) NeighborsBatch(ids []int32, rowptr []int64, pos []int64, out []int32) {
	for i, v := range ids {
		lo, hi := rowptr[i], rowptr[i+1]
		if pos == nil {
			ReadRow(c.g, c.g.Indptr[v], out[lo:hi])
		} else {
			ReadAt(c.g, c.g.Indptr[v], pos[lo:hi], out[lo:hi])
		}
	}
}

// ReadRow copies len(out) columns of g starting at edge start.
func ReadRow(g *graph.CSR, start int64, out []int32) {
	if g.Idx32 != nil {
		copy(out, g.Idx32[start:start+int64(len(out))])
		return
	}
	for q := range out {
		out[q] = int32(g.Idx64[start+int64(q)])
	}
}

// ReadAt reads the columns of g at edges start+pos into out.
func ReadAt(g *graph.CSR, start int64, pos []int64, out []int32) {
	if c := g.Idx32; c != nil {
		row := c[start:]
		for q, p := range pos {
			out[q] = row[p]
		}
		return
	}
	for q, p := range pos {
		out[q] = int32(g.Idx64[start+p])
	}
}

// Batcher is implemented by a training strategy (decoded with its options)
// that samples batches of seed nodes: Batch returns the seeds per batch.
// Tools that sample as training would (the experiment runner's hitratio
// kind) take the batch size from it.
type Batcher interface {
	Batch() int
}
