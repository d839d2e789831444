package synth

import (
	"fmt"
	"math"
	"slices"

	"strata/core/graph"
)

// DegreeModel is a Chung-Lu expected-degree curve: the node of rank x
// (a fraction of the nodes, 0 the highest degree) has expected degree
// proportional to (x + R)^-Alpha. Its shares of the edge endpoints do not
// depend on the node count, so a stand-in keeps its shape at any scale:
// a power law of exponent 1 + 1/Alpha in the tail, flattened at the head
// by R.
type DegreeModel struct{ Alpha, R float64 }

// g is the antiderivative of x^-Alpha (shifted to vanish at 1), stable
// around Alpha = 1 where it is log x.
func (m DegreeModel) g(x float64) float64 {
	k := 1 - m.Alpha
	if math.Abs(k) < 1e-9 {
		return math.Log(x)
	}
	return math.Expm1(k*math.Log(x)) / k
}

// gInv inverts g.
func (m DegreeModel) gInv(y float64) float64 {
	k := 1 - m.Alpha
	if math.Abs(k) < 1e-9 {
		return math.Exp(y)
	}
	return math.Exp(math.Log1p(k*y) / k)
}

// Share returns the share of the edge endpoints that the top fraction f
// of the nodes hold.
func (m DegreeModel) Share(f float64) float64 {
	lo := m.g(m.R)
	return (m.g(f+m.R) - lo) / (m.g(1+m.R) - lo)
}

// Rank returns the node rank (in [0, 1)) at which the endpoint
// distribution's CDF reaches u in [0, 1): an endpoint drawn as Rank(u)
// for uniform u follows the model.
func (m DegreeModel) Rank(u float64) float64 { return m.ranker()(u) }

// ranker returns Rank with the curve's ends evaluated once, for drawing
// many endpoints.
func (m DegreeModel) ranker() func(u float64) float64 {
	lo := m.g(m.R)
	span := m.g(1+m.R) - lo
	top := math.Nextafter(1, 0)
	return func(u float64) float64 {
		return min(max(m.gInv(lo+u*span)-m.R, 0), top)
	}
}

// FitDegreeShape returns the model whose top-1% and top-10% shares are
// those of s. The shares must be those of a graph whose degrees fall with
// rank: 0.01 <= Top1 and 0.1 <= Top10 <= min(1, 10 Top1).
func FitDegreeShape(s graph.DegreeShape) (DegreeModel, error) {
	if !(s.Top1 >= 0.01 && s.Top10 >= 0.1 && s.Top10 <= 1 && s.Top1 <= s.Top10 && s.Top10 <= 10*s.Top1) {
		return DegreeModel{}, fmt.Errorf("degree shape: top-1%% share %g and top-10%% share %g are not those of a graph (want 0.01 <= top1, 0.1 <= top10 <= min(1, 10 top1)): %w", s.Top1, s.Top10, graph.ErrRange)
	}
	if s.Top10-0.1 < 1e-9 {
		return DegreeModel{Alpha: 0, R: 1}, nil // uniform
	}
	// For each Alpha, R follows from the top-10% share (it falls from a
	// pure power law's share, R -> 0, as R grows); the top-1% share then
	// falls with Alpha, from the pure power law's Top10² at the smallest
	// Alpha that reaches Top10 (1 - log Top10 / log 0.1) to an
	// exponential's at large Alpha: bisect Alpha between those ends.
	top1 := func(a float64) (float64, DegreeModel, bool) {
		m, ok := fitR(a, s.Top10)
		return m.Share(0.01), m, ok
	}
	lo, hi := 1-math.Log(s.Top10)/math.Log(0.1), float64(maxAlpha)
	if s.Top1 > s.Top10*s.Top10 {
		return DegreeModel{}, fmt.Errorf("degree shape: top-1%% share %g is more than a pure power law with top-10%% share %g gives (%g): %w", s.Top1, s.Top10, s.Top10*s.Top10, graph.ErrRange)
	}
	if v, _, ok := top1(hi); !ok || v > s.Top1 {
		return DegreeModel{}, fmt.Errorf("degree shape: top-1%% share %g is less than any curve (x+R)^-a with top-10%% share %g gives (%g): %w", s.Top1, s.Top10, v, graph.ErrRange)
	}
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if v, _, ok := top1(mid); !ok || v > s.Top1 {
			lo = mid
		} else {
			hi = mid
		}
	}
	_, m, _ := top1(hi)
	return m, nil
}

// maxAlpha bounds the fitted exponent: beyond it the curve is an
// exponential for every purpose and g() loses its precision.
const maxAlpha = 16.0

// fitR solves Share(0.1) = top10 for R at a fixed Alpha (bisection on
// log R); false when no R reaches it.
func fitR(alpha, top10 float64) (DegreeModel, bool) {
	share := func(lr float64) float64 { return DegreeModel{alpha, math.Exp(lr)}.Share(0.1) }
	a, b := -40.0, 40.0
	if share(a) < top10 || share(b) > top10 {
		return DegreeModel{alpha, math.Exp(a)}, false
	}
	for range 200 {
		mid := (a + b) / 2
		if share(mid) > top10 {
			a = mid
		} else {
			b = mid
		}
	}
	return DegreeModel{alpha, math.Exp((a + b) / 2)}, true
}

// maxIdleRounds bounds the rounds in a row that add no new edge while
// duplicates are redrawn (the shape then cannot give that many distinct
// edges).
const maxIdleRounds = 16

// chungLuGraph draws exactly edges distinct edges without self loops on n
// nodes, both endpoints from m, node ids randomly permuted. An undirected
// edge is stored once, in a direction drawn from its key.
func chungLuGraph(m DegreeModel, n int, edges int64, directed bool, seed uint64) (*graph.CSR, error) {
	perm := newCyclePerm(seed, streamPerm, n)
	keys, err := distinctKeys(make([]uint64, edges), n, func(out []uint64, round uint64) {
		drawEdgeKeys(m, perm, out, directed, seed, round)
	})
	if err != nil {
		return nil, err
	}
	return keysCSR(n, keys, directed, seed), nil
}

// distinctKeys fills keys with distinct edge keys: draw(out, round) fills
// out with the keys of a round, and duplicates are redrawn in later
// rounds until every slot holds a new key. The result is sorted.
func distinctKeys(keys []uint64, n int, draw func(out []uint64, round uint64)) ([]uint64, error) {
	edges := len(keys)
	keys = keys[:edges:edges]
	draw(keys, 0)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for round, idle := 1, 0; len(keys) < edges; round++ {
		before := len(keys)
		extra := make([]uint64, edges-before)
		draw(extra, uint64(round))
		if keys = mergeNewKeys(keys, extra); len(keys) == before {
			idle++
		} else {
			idle = 0
		}
		if idle == maxIdleRounds {
			return nil, fmt.Errorf("%d edges on %d nodes: %d distinct after %d rounds of redrawing duplicates; the degree shape is too concentrated for this many edges (use a larger graph or fewer edges): %w",
				edges, n, len(keys), round, graph.ErrRange)
		}
	}
	return keys, nil
}

// keysCSR turns distinct edge keys (src<<32 | dst, in any order) into the
// CSR of n nodes; an undirected edge is stored in a direction drawn from
// its key.
func keysCSR(n int, keys []uint64, directed bool, seed uint64) *graph.CSR {
	src, dst := make([]int32, len(keys)), make([]int32, len(keys))
	graph.ParallelFor(len(keys), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a, b := int32(keys[i]>>32), int32(keys[i]&0xffffffff)
			if !directed && mix64(keys[i]^seed)&1 == 1 {
				a, b = b, a
			}
			src[i], dst[i] = a, b
		}
	})
	indptr, cols := graph.GroupEdges(n, dst, src)
	graph.SortRows(indptr, cols)
	return graph.MakeCSR(n, n, indptr, cols)
}

// mergeNewKeys adds to the sorted distinct keys those of extra that are
// new, in place (keys has room for them), and returns the sorted result.
func mergeNewKeys(keys, extra []uint64) []uint64 {
	slices.Sort(extra)
	extra = slices.Compact(extra)
	fresh := extra[:0]
	for _, k := range extra {
		if _, found := slices.BinarySearch(keys, k); !found {
			fresh = append(fresh, k)
		}
	}
	have := len(keys)
	keys = keys[:have+len(fresh)]
	// Merge from the back: the largest of both tails goes last.
	i, j := have-1, len(fresh)-1
	for w := len(keys) - 1; j >= 0; w-- {
		if i >= 0 && keys[i] > fresh[j] {
			keys[w] = keys[i]
			i--
		} else {
			keys[w] = fresh[j]
			j--
		}
	}
	return keys
}

// drawEdgeKeys fills out with edge keys (src<<32 | dst; for an undirected
// edge the smaller id first), in parallel chunks of independent RNG
// streams of the round.
func drawEdgeKeys(m DegreeModel, perm cyclePerm, out []uint64, directed bool, seed, round uint64) {
	n := float64(perm.n)
	rank := m.ranker()
	node := func(r *rng) uint64 {
		u := float64(r.next()>>11) / (1 << 53)
		return perm.apply(min(uint64(rank(u)*n), perm.n-1))
	}
	chunks := (len(out) + rmatChunk - 1) / rmatChunk
	graph.ParallelFor(chunks, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			r := newRNG(mix3(seed, round, streamEdges), streamEdges, uint64(c))
			for e := c * rmatChunk; e < min((c+1)*rmatChunk, len(out)); e++ {
				a, b := node(&r), node(&r)
				for a == b {
					b = node(&r)
				}
				if !directed && a > b {
					a, b = b, a
				}
				out[e] = a<<32 | b
			}
		}
	})
}
