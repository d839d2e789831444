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
// Every sampler implements only its per-layer draw (sampling.Drawer); the
// sampler base (sampling.SampleLayers) checks the graph and the seeds,
// walks the layers and relabels the drawn neighbours into blocks.
//
// The random samplers run rows in parallel on GOMAXPROCS goroutines and
// are deterministic: the blocks depend only on the graph, the seeds, rng
// and the config (each destination row draws from a stream derived from
// rng, the block index and its node id), not on GOMAXPROCS. They are safe
// for concurrent calls.
package sampler

import (
	"strata/core/registry"
	"strata/core/sampling"
)

// The contract's types (core/sampling), under their package-local names.
type (
	// Sampler is sampling.Sampler.
	Sampler = sampling.Sampler
	// Block is sampling.Block.
	Block = sampling.Block
	// Layered is sampling.Layered.
	Layered = sampling.Layered
	// Graph is sampling.Graph.
	Graph = sampling.Graph
)

// NumLayers returns the number of blocks s returns (sampling.NumLayers).
func NumLayers(s Sampler) int { return sampling.NumLayers(s) }

func init() {
	registry.Register(new(Full))
	registry.Register(new(Uniform))
	registry.Register(new(KHop))
	registry.Register(new(RandomWalk))
}

// Every sampler is a per-layer draw on the sampler base
// (sampling.Drawer), reading the graph only through sampling.Graph (a
// sampling.GraphSampler through sampling.AsGraphSampler).
var (
	_ sampling.Drawer = (*Full)(nil)
	_ sampling.Drawer = (*Uniform)(nil)
	_ sampling.Drawer = (*KHop)(nil)
	_ sampling.Drawer = (*RandomWalk)(nil)
)
