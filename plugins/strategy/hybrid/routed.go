package hybrid

import (
	"sync/atomic"

	"strata/core/sampling"
)

// routedGraph is a device trainer's view of the topology when the CPU
// sampler takes a share of the device's sampling (HyScale Alg. 1's
// balance work between T_SC and T_SA): the rows of a share of the nodes,
// chosen by a hash of the node id, are read from the host's graph by the
// CPU sampler, the others from the device's own copy. Both hold the same
// rows, so a sampler draws through it exactly the blocks it draws from
// either (whatever the share, for any sampler that reads through
// sampling.Graph); what moves is who reads which row, and so whose time
// it costs: the device's reads are counted by its view, the host's here.
type routedGraph struct {
	host, dev sampling.Graph
	cut       uint64 // a node whose hash is below cut is read on the host
	// The neighbours read on the host and on the device.
	hostNbrs, devNbrs atomic.Int64
}

var _ sampling.Graph = (*routedGraph)(nil)

// newRoutedGraph routes share of the nodes' rows to host (share in [0, 1]).
func newRoutedGraph(host, dev sampling.Graph, share float64) *routedGraph {
	g := &routedGraph{host: host, dev: dev}
	switch {
	case share >= 1:
		g.cut = 1 << 32
	case share > 0:
		g.cut = uint64(share * (1 << 32))
	}
	return g
}

// onHost reports whether v's row is read on the host: the top 32 bits of
// a multiplicative hash of v, below cut.
func (g *routedGraph) onHost(v int32) bool {
	return (uint64(uint32(v))*0x9e3779b97f4a7c15)>>32 < g.cut
}

// hostShare is the share of the neighbours read on the host.
func (g *routedGraph) hostShare() float64 {
	h, d := g.hostNbrs.Load(), g.devNbrs.Load()
	if h+d == 0 {
		return 0
	}
	return float64(h) / float64(h+d)
}

func (g *routedGraph) NumNodes() int { return g.dev.NumNodes() }

func (g *routedGraph) NumNeighbors(ids []int32, deg []int64) {
	var idx [2][]int
	var sub [2][]int32
	for i, v := range ids {
		k := g.side(v)
		idx[k], sub[k] = append(idx[k], i), append(sub[k], v)
	}
	for k, gr := range [2]sampling.Graph{g.host, g.dev} {
		if len(sub[k]) == 0 {
			continue
		}
		d := make([]int64, len(sub[k]))
		gr.NumNeighbors(sub[k], d)
		for j, i := range idx[k] {
			deg[i] = d[j]
		}
	}
}

func (g *routedGraph) Neighbors(v int32, pos []int64, out []int32) {
	if g.onHost(v) {
		g.host.Neighbors(v, pos, out)
		g.hostNbrs.Add(int64(len(out)))
		return
	}
	g.dev.Neighbors(v, pos, out)
	g.devNbrs.Add(int64(len(out)))
}

// NeighborsBatch splits the request into one on each side, each row
// keeping its positions, and scatters the answers back.
func (g *routedGraph) NeighborsBatch(ids []int32, rowptr []int64, pos []int64, out []int32) {
	var idx [2][]int
	var sub [2][]int32
	var ptr [2][]int64
	var spos [2][]int64
	for k := range ptr {
		ptr[k] = []int64{0}
	}
	for i, v := range ids {
		k := g.side(v)
		lo, hi := rowptr[i], rowptr[i+1]
		idx[k], sub[k] = append(idx[k], i), append(sub[k], v)
		ptr[k] = append(ptr[k], ptr[k][len(ptr[k])-1]+hi-lo)
		if pos != nil {
			spos[k] = append(spos[k], pos[lo:hi]...)
		}
	}
	for k, gr := range [2]sampling.Graph{g.host, g.dev} {
		n := ptr[k][len(ptr[k])-1]
		if len(sub[k]) == 0 {
			continue
		}
		var p []int64
		if pos != nil {
			p = spos[k]
		}
		o := make([]int32, n)
		gr.NeighborsBatch(sub[k], ptr[k], p, o)
		for j, i := range idx[k] {
			copy(out[rowptr[i]:rowptr[i+1]], o[ptr[k][j]:ptr[k][j+1]])
		}
		if k == 0 {
			g.hostNbrs.Add(n)
		} else {
			g.devNbrs.Add(n)
		}
	}
}

// side is 0 for a row read on the host, 1 on the device.
func (g *routedGraph) side(v int32) int {
	if g.onHost(v) {
		return 0
	}
	return 1
}
