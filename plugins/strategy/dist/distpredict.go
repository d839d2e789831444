package dist

import (
	"maps"
	"math"
	"slices"

	"strata/core/graph"
)

// expectedSampledRows estimates how many feature rows rank me sends for
// one global batch of strategy.distmini: the expected number of distinct
// nodes of rank me among the input nodes (the first block's sources) that
// every other rank samples for its seeds. seeds[j] are rank j's seeds of
// the batch, fanouts the sampler's per block (first layer first, -1:
// every neighbour) and replace whether it draws with replacement.
//
// The estimate propagates inclusion probabilities from the seeds
// outwards, one block at a time: a destination v (present with
// probability p(v)) samples its in-neighbour u with probability
// π(v) = min(1, fanout/deg(v)) (1 − (1 − 1/deg(v))^fanout with
// replacement), and u is a source of the block unless it is neither a
// destination nor sampled by any destination, taking the draws as
// independent: P(u) = 1 − (1 − p(u)) · Π_v (1 − p(v)·π(v)). It reads the
// graph, not the sampler's random streams, so it is a prediction from the
// partition and the fanouts, not a replay of the draws.
func expectedSampledRows(adj *graph.CSR, owner []int32, me int, seeds [][]int32, fanouts []int, replace bool) float64 {
	rows := 0.0
	for j, s := range seeds {
		if j == me || len(s) == 0 {
			continue
		}
		p := make(map[int32]float64, len(s))
		for _, v := range s {
			p[v] = 1
		}
		for l := len(fanouts) - 1; l >= 0; l-- {
			miss := make(map[int32]float64, len(p)*4) // P(u is not a source)
			// In node order: the sums and products do not depend on the
			// maps' order.
			for _, v := range slices.Sorted(maps.Keys(p)) {
				pv := p[v]
				if _, ok := miss[v]; !ok {
					miss[v] = 1
				}
				miss[v] *= 1 - pv
				deg := adj.Indptr[v+1] - adj.Indptr[v]
				if deg == 0 {
					continue
				}
				pi := 1.0
				if f := fanouts[l]; f >= 0 {
					if replace {
						pi = 1 - math.Pow(1-1/float64(deg), float64(f))
					} else {
						pi = min(1, float64(f)/float64(deg))
					}
				}
				for k := adj.Indptr[v]; k < adj.Indptr[v+1]; k++ {
					u := int32(adj.Col(k))
					if _, ok := miss[u]; !ok {
						miss[u] = 1
					}
					miss[u] *= 1 - pv*pi
				}
			}
			p = make(map[int32]float64, len(miss))
			for u, m := range miss {
				p[u] = 1 - m
			}
		}
		for _, u := range slices.Sorted(maps.Keys(p)) {
			if owner[u] == int32(me) {
				rows += p[u]
			}
		}
	}
	return rows
}
