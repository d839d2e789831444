package sampling

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"strata/core/graph"
	"strata/core/registry"
)

// Drawer is a sampler's per-layer draw: with the base (SampleLayers,
// SampleLayersGraph) it is a whole sampler, DGL's BlockSampler pattern.
// The base owns what every sampler shares: it checks the graph and the
// seeds, walks the layers from the seeds towards the inputs, relabels the
// drawn neighbours to local ids and chains the blocks; the Drawer only
// says which in-neighbours each destination of a layer gets. A sampler's
// Sample is one call to the base, and AsGraphSampler makes it a
// GraphSampler:
//
//	func (s *Mine) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]sampling.Block, error) {
//		return sampling.SampleLayers(ctx, s, g, seeds, rng)
//	}
//
// Errors name the sampler by its registry ID (registry.Module) or, for a
// plain value, by SamplerID (Named).
type Drawer interface {
	// Layers is the number of blocks.
	Layered
	// DrawLayer returns the in-neighbours of the destinations dst of
	// block l (blocks count first layer first; the base calls the last
	// block, whose Dst are the seeds, first): those of dst[i] are
	// nbr[indptr[i]:indptr[i+1]], GLOBAL node ids, which the base
	// relabels in place. vals are nil or one value per neighbour
	// (Block.Adj.Values). A random draw derives its randomness from rng.
	DrawLayer(ctx context.Context, g Graph, l int, dst []int32, rng uint64) (indptr []int64, nbr []int32, vals []float32, err error)
}

// AsGraphSampler returns the GraphSampler of s: the base's for a Drawer
// (SampleLayersGraph), else s's own; ok is false when s reads the graph
// otherwise than through Graph.
func AsGraphSampler(s any) (gs GraphSampler, ok bool) {
	if d, isDrawer := s.(Drawer); isDrawer {
		return drawerSampler{d}, true
	}
	gs, ok = s.(GraphSampler)
	return gs, ok
}

// drawerSampler is a Drawer as a GraphSampler.
type drawerSampler struct{ d Drawer }

func (s drawerSampler) SampleGraph(ctx context.Context, g Graph, seeds []int32, rng uint64) ([]Block, error) {
	return SampleLayersGraph(ctx, s.d, g, seeds, rng)
}

// Named is implemented by a Drawer that is not a registry module (a
// plain value such as Full), to name it in errors.
type Named interface{ SamplerID() string }

// samplerID returns the name errors give d.
func samplerID(d Drawer) string {
	switch n := d.(type) {
	case registry.Module:
		return n.StrataModule().ID
	case Named:
		return n.SamplerID()
	}
	return fmt.Sprintf("sampler %T", d)
}

// SampleLayers is Sampler.Sample for a Drawer: it checks that g is square
// and the seeds (CheckInput), then runs SampleLayersGraph on CSR(g).
func SampleLayers(ctx context.Context, d Drawer, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error) {
	if err := CheckInput(samplerID(d), g, seeds); err != nil {
		return nil, err
	}
	return SampleLayersGraph(ctx, d, CSR(g), seeds, rng)
}

// SampleLayersGraph is GraphSampler.SampleGraph for a Drawer: it checks
// the seeds (CheckSeeds) and the layer count, then, from the seeds (the
// Dst of the last block) towards the inputs, draws each layer's
// neighbours and relabels them to local ids, appending the nodes not seen
// yet to Src after the destinations, in edge order.
func SampleLayersGraph(ctx context.Context, d Drawer, g Graph, seeds []int32, rng uint64) ([]Block, error) {
	id := samplerID(d)
	layers := d.Layers()
	if layers < 1 {
		return nil, fmt.Errorf("%s: layers = %d: must be >= 1", id, layers)
	}
	if err := CheckSeeds(id, g.NumNodes(), seeds); err != nil {
		return nil, err
	}
	m := newLocalMap(g.NumNodes(), seeds)
	defer m.release()
	blocks := make([]Block, layers)
	dst := slices.Clone(seeds)
	for l := layers - 1; l >= 0; l-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		indptr, nbr, vals, err := d.DrawLayer(ctx, g, l, dst, rng)
		if err != nil {
			return nil, err
		}
		if len(indptr) != len(dst)+1 || indptr[len(dst)] != int64(len(nbr)) || vals != nil && len(vals) != len(nbr) {
			return nil, fmt.Errorf("%s: block %d: the draw returned %d row pointers, %d neighbours and %d values for %d destinations", id, l, len(indptr), len(nbr), len(vals), len(dst))
		}
		src := make([]int32, len(dst), len(dst)+len(nbr)/2+16)
		copy(src, dst)
		if src, err = m.relabel(ctx, nbr, src); err != nil {
			return nil, err
		}
		blocks[l] = Block{
			Dst: dst,
			Src: src,
			Adj: &graph.CSR{NumRows: len(dst), NumCols: len(src), Indptr: indptr, Idx32: nbr, Values: vals},
		}
		dst = src
	}
	return blocks, nil
}

// denseMapLimit is the largest node count for which the global→local map
// is a slice indexed by node id (4 bytes per node, at most 64 MiB, kept
// between calls); larger graphs use an open-addressing hash map sized by
// the batch. A variable so that tests can exercise the hash map.
var denseMapLimit = 1 << 24

// localMap maps global node ids to local ids + 1 (0 = absent).
type localMap struct {
	dense    []int32 // len >= the node count when used; all zero between calls
	useDense bool
	inserted []int32 // the nodes in the dense map, cleared by release

	// open addressing, linear probing; keys hold node+1 (0 = empty)
	keys, vals []int32
	mask       uint64
	count      int
}

// freeMaps recycles maps, so that the dense map is not reallocated (and
// re-zeroed) for every batch.
var freeMaps struct {
	sync.Mutex
	list []*localMap
}

// newLocalMap returns a map of the seeds (local ids in order) for a graph
// of n nodes.
func newLocalMap(n int, seeds []int32) *localMap {
	freeMaps.Lock()
	var m *localMap
	if k := len(freeMaps.list); k > 0 {
		m, freeMaps.list = freeMaps.list[k-1], freeMaps.list[:k-1]
	} else {
		m = &localMap{}
	}
	freeMaps.Unlock()
	m.useDense = n <= denseMapLimit
	if m.useDense {
		if len(m.dense) < n {
			m.dense = make([]int32, n)
		}
	} else {
		m.hashInit(len(seeds) * 8)
	}
	m.inserted = seeds
	for i, v := range seeds {
		m.put(v, int32(i+1))
	}
	return m
}

// release clears the dense map and returns m to the free list.
func (m *localMap) release() {
	if m.useDense {
		for _, v := range m.inserted {
			m.dense[v] = 0
		}
	}
	m.inserted = nil
	freeMaps.Lock()
	defer freeMaps.Unlock()
	if len(freeMaps.list) < 4 {
		freeMaps.list = append(freeMaps.list, m)
	}
}

func (m *localMap) put(v, val int32) {
	if m.useDense {
		m.dense[v] = val
	} else {
		m.hashPut(v, val)
	}
}

// relabelChunk is how many edges are relabelled between checks of ctx.
const relabelChunk = 1 << 16

// relabel rewrites nbr from global to local ids, appending unseen nodes
// to src, and returns src.
func (m *localMap) relabel(ctx context.Context, nbr, src []int32) ([]int32, error) {
	for lo := 0; lo < len(nbr); lo += relabelChunk {
		if lo > 0 {
			if err := ctx.Err(); err != nil {
				m.inserted = src
				return nil, err
			}
		}
		part := nbr[lo:min(lo+relabelChunk, len(nbr))]
		if m.useDense {
			src = relabelDense(m.dense, part, src)
		} else {
			src = m.relabelHash(part, src)
		}
	}
	m.inserted = src
	return src, nil
}

// relabelDense rewrites nbr from global to local ids, appending unseen
// nodes to src.
func relabelDense(local []int32, nbr []int32, src []int32) []int32 {
	for e, v := range nbr {
		li := local[v]
		if li == 0 {
			src = append(src, v)
			li = int32(len(src))
			local[v] = li
		}
		nbr[e] = li - 1
	}
	return src
}

func (m *localMap) relabelHash(nbr []int32, src []int32) []int32 {
	for e, v := range nbr {
		li := m.hashGet(v)
		if li == 0 {
			src = append(src, v)
			li = int32(len(src))
			m.hashPut(v, li)
		}
		nbr[e] = li - 1
	}
	return src
}

// hash mixes a key (SplitMix64's finaliser).
func hash(k int32) uint64 {
	z := uint64(uint32(k))
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (m *localMap) hashInit(n int) {
	size := 1024
	for size < 2*n {
		size <<= 1
	}
	if len(m.keys) != size {
		m.keys = make([]int32, size)
		m.vals = make([]int32, size)
	} else {
		clear(m.keys)
	}
	m.mask = uint64(size - 1)
	m.count = 0
}

func (m *localMap) hashGrow() {
	oldK, oldV := m.keys, m.vals
	m.keys = make([]int32, 2*len(oldK))
	m.vals = make([]int32, 2*len(oldK))
	m.mask = uint64(len(m.keys) - 1)
	for i, k := range oldK {
		if k != 0 {
			h := hash(k) & m.mask
			for m.keys[h] != 0 {
				h = (h + 1) & m.mask
			}
			m.keys[h], m.vals[h] = k, oldV[i]
		}
	}
}

// hashGet returns the value of node v, or 0.
func (m *localMap) hashGet(v int32) int32 {
	k := v + 1
	h := hash(k) & m.mask
	for {
		switch m.keys[h] {
		case k:
			return m.vals[h]
		case 0:
			return 0
		}
		h = (h + 1) & m.mask
	}
}

// hashPut sets the value of node v (absent before).
func (m *localMap) hashPut(v, val int32) {
	if 2*(m.count+1) > len(m.keys) {
		m.hashGrow()
	}
	k := v + 1
	h := hash(k) & m.mask
	for m.keys[h] != 0 && m.keys[h] != k {
		h = (h + 1) & m.mask
	}
	if m.keys[h] == 0 {
		m.count++
	}
	m.keys[h], m.vals[h] = k, val
}
