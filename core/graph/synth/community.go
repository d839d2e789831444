package synth

import (
	"fmt"
	"math"

	"strata/core/graph"
)

// Community stand-ins: a degree-corrected planted partition on top of the
// Chung-Lu degrees of GenerateStandIn. The node of degree rank r belongs
// to community r mod K, so every community holds an equal, interleaved
// sample of the ranks (the same degree curve, the same share of the
// endpoints). A fraction 1-Mu of the edges (exactly, rounded) joins two
// nodes of one community: one endpoint drawn from the whole degree curve,
// the other from the curve of its community alone; the rest join two
// nodes of different communities, both endpoints from the whole curve.
// Every node thus keeps its expected degree and has, in expectation, the
// fraction Mu of its edges outside its community (LFR's mixing
// parameter, Lancichinetti et al., Phys. Rev. E 78, 2008).

// communityModel draws the endpoints of a community stand-in by rank.
type communityModel struct {
	rank func(u float64) float64 // DegreeModel.ranker
	perm cyclePerm               // rank -> node id
	n, k uint64                  // nodes, communities
}

func newCommunityModel(m DegreeModel, n, k int, seed uint64) communityModel {
	return communityModel{rank: m.ranker(), perm: newCyclePerm(seed, streamPerm, n), n: uint64(n), k: uint64(k)}
}

// global draws a rank from the whole degree curve.
func (c communityModel) global(r *rng) uint64 {
	u := float64(r.next()>>11) / (1 << 53)
	return min(uint64(c.rank(u)*float64(c.n)), c.n-1)
}

// local draws a rank of community com from the degree curve scaled to
// the community's members (ranks com, com+k, com+2k, ...).
func (c communityModel) local(r *rng, com uint64) uint64 {
	size := c.n / c.k
	if com < c.n%c.k {
		size++
	}
	u := float64(r.next()>>11) / (1 << 53)
	return min(uint64(c.rank(u)*float64(size)), size-1)*c.k + com
}

// drawKeys fills out with edge keys (src<<32 | dst; for an undirected
// edge the smaller id first) inside communities (intra) or between them,
// in parallel chunks of independent RNG streams of the round.
func (c communityModel) drawKeys(out []uint64, intra, directed bool, seed, round uint64) {
	stream := uint64(streamInter)
	if intra {
		stream = streamIntra
	}
	chunks := (len(out) + rmatChunk - 1) / rmatChunk
	graph.ParallelFor(chunks, 1, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			r := newRNG(mix3(seed, round, stream), stream, uint64(ch))
			for e := ch * rmatChunk; e < min((ch+1)*rmatChunk, len(out)); e++ {
				ra := c.global(&r)
				com := ra % c.k
				var rb uint64
				if intra {
					for rb = c.local(&r, com); rb == ra; rb = c.local(&r, com) {
					}
				} else {
					for rb = c.global(&r); rb%c.k == com; rb = c.global(&r) {
					}
				}
				a, b := c.perm.apply(ra), c.perm.apply(rb)
				if !directed && a > b {
					a, b = b, a
				}
				out[e] = a<<32 | b
			}
		}
	})
}

// IntraEdges is the number of the stand-in's edges that stay inside a
// community: (1-Mu) of them, rounded to the nearest.
func IntraEdges(edges int64, mu float64) int64 {
	return int64(math.Round((1 - mu) * float64(edges)))
}

// communityGraph draws exactly edges distinct edges without self loops,
// IntraEdges of them inside communities, the rest between.
func communityGraph(m DegreeModel, n int, edges int64, directed bool, o StandInOptions) (*graph.CSR, error) {
	c := newCommunityModel(m, n, o.Communities, o.Seed)
	keys := make([]uint64, edges)
	mi := IntraEdges(edges, o.Mu)
	for _, part := range []struct {
		keys  []uint64
		intra bool
	}{{keys[:mi], true}, {keys[mi:], false}} {
		if len(part.keys) == 0 {
			continue
		}
		_, err := distinctKeys(part.keys, n, func(out []uint64, round uint64) {
			c.drawKeys(out, part.intra, directed, o.Seed, round)
		})
		if err != nil {
			return nil, fmt.Errorf("communities=%d, mu=%g: %w", o.Communities, o.Mu, err)
		}
	}
	return keysCSR(n, keys, directed, o.Seed), nil
}

// StandInCommunities returns the community of every node of the stand-in
// that s and o generate (nil without communities), without generating it.
func StandInCommunities(s StandIn, o StandInOptions) []int32 {
	if o.Communities == 0 {
		return nil
	}
	n := int(s.Scaled(o.Divisor).Nodes)
	perm := newCyclePerm(o.Seed, streamPerm, n)
	com := make([]int32, n)
	k := uint64(o.Communities)
	graph.ParallelFor(n, 1<<14, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			com[perm.apply(uint64(r))] = int32(uint64(r) % k)
		}
	})
	return com
}

// communityLabels gives every node the class of its community: community
// c carries class c mod classes, so each class spans about
// communities/classes communities of equal size.
func communityLabels(com []int32, classes int) []int32 {
	labels := make([]int32, len(com))
	graph.ParallelFor(len(com), 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			labels[i] = com[i] % int32(classes)
		}
	})
	return labels
}

// checkCommunities validates the community options against the scaled
// counts before anything is allocated: every community has two nodes at
// least, each class a community, and neither the edges inside
// communities nor those between them fill more than half of their node
// pairs.
func (s StandIn) checkCommunities(o StandInOptions) error {
	k := int64(o.Communities)
	if k == 0 && o.Mu == 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("stand-in %s: "+format+": %w", append([]any{s.Name}, append(args, graph.ErrRange)...)...)
	}
	switch {
	case k == 0:
		return bad("mu=%g without communities: add communities=<k> (2 or more)", o.Mu)
	case k < 2 || k > s.Nodes/2:
		return bad("communities=%d outside [2, %d] (two nodes a community at least, %d nodes); choose a count in that range", k, s.Nodes/2, s.Nodes)
	case !(o.Mu >= 0 && o.Mu <= 1):
		return bad("mu=%g outside [0, 1] (the fraction of each node's edges that leave its community); e.g. mu=0.2", o.Mu)
	case s.Classes > 0 && k < int64(s.Classes):
		return bad("communities=%d is fewer than the %d classes (each community carries one class); use communities=%d or more", k, s.Classes, s.Classes)
	}
	size := float64(s.Nodes) / float64(k)
	inside := float64(k) * size * (size - 1) // ordered pairs inside communities
	between := float64(s.Nodes)*float64(s.Nodes-1) - inside
	if !s.Directed {
		inside, between = inside/2, between/2
	}
	mi := IntraEdges(s.Edges, o.Mu)
	switch {
	case float64(mi) > inside/2:
		return bad("communities=%d, mu=%g: %d edges inside communities of %.0f nodes fill more than half of their %.0f node pairs; use fewer communities or a larger mu", k, o.Mu, mi, size, inside)
	case float64(s.Edges-mi) > between/2:
		return bad("communities=%d, mu=%g: %d edges between communities fill more than half of their %.0f node pairs; use a smaller mu", k, o.Mu, s.Edges-mi, between)
	}
	return nil
}
