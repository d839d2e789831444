package placement

import (
	"context"
	"fmt"
	"math/bits"
	"strata/core/topology"

	"strata/core/registry"
)

// Clique is QUIVER's placement policy, the baseline of XGNN §4.2 and §6.6:
// split the selected GPUs into fully connected cliques of equal size and
// replicate the whole data on each clique. The clique size is the largest
// k dividing the number n of GPUs for which such a split exists (1 when
// there is none: then every GPU stores everything); of the splits of that
// size (at most maxSplits are compared) the one with the highest
// MinBandwidth is kept, the first on a tie. Inside a clique each GPU keeps
// its own partition and the n-k partitions of the other cliques are dealt
// to the members round-robin (ascending), so every GPU stores n/k
// partitions. A worker reads only from its own clique, as in QUIVER: the
// links between cliques stay idle.
type Clique struct {
	LocalGBps float64 `toml:"local_gbps" range:"(0,)" doc:"local GPU memory bandwidth, GB/s: rates a worker's own partitions in MinBandwidth"`
}

// maxSplits bounds the clique splits Clique compares.
const maxSplits = 1024

// StrataModule implements registry.Module.
func (*Clique) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "placement.clique",
		New: func() registry.Module { return &Clique{LocalGBps: DefaultLocalGBps} },
		Doc: "QUIVER's placement: whole data replicated on each GPU clique",
	}
}

// Validate checks the options.
func (c *Clique) Validate() error { return checkLocal(c.LocalGBps) }

// Place implements Solver.
func (c *Clique) Place(ctx context.Context, topo topology.Topology, devices []int) (*Plan, error) {
	v, err := newView(topo, devices)
	if err != nil {
		return nil, fmt.Errorf("placement.clique: %w", err)
	}
	// adj[i]: the GPUs linked to i in both directions.
	adj := make([]uint64, v.n)
	for i := range v.n {
		for j := range v.n {
			if v.nbr[i]&(1<<j) != 0 && v.nbr[j]&(1<<i) != 0 {
				adj[i] |= 1 << j
			}
		}
	}
	var best *Plan
	for k := v.n; k >= 1 && best == nil; k-- {
		if v.n%k != 0 {
			continue
		}
		for split := range cliqueSplits(adj, v.all, k) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("placement.clique: %w", err)
			}
			p := c.plan(v, split)
			if best == nil || p.MinBandwidth > best.MinBandwidth {
				best = p
			}
		}
	}
	return best, nil
}

// plan builds the plan of one split into cliques (selection bit sets).
func (c *Clique) plan(v *view, split []uint64) *Plan {
	store := make([]uint64, v.n)
	eligible := make([]uint64, v.n)
	cliques := make([][]int, len(split))
	for ci, cl := range split {
		members := ones(cl)
		for t, q := range ones(v.all &^ cl) {
			store[members[t%len(members)]] |= 1 << q
		}
		for _, i := range members {
			store[i] |= 1 << i
			eligible[i] = cl &^ (1 << i)
			cliques[ci] = append(cliques[ci], v.dev[i])
		}
	}
	p := v.buildPlan("placement.clique", store, eligible, c.LocalGBps)
	p.Cliques = cliques
	return p
}

// cliqueSplits yields the splits of the GPUs in left into fully connected
// groups of k (each group a bit set), the group of the lowest GPU first, in
// lexicographic order; at most maxSplits of them.
func cliqueSplits(adj []uint64, left uint64, k int) func(yield func([]uint64) bool) {
	return func(yield func([]uint64) bool) {
		count := 0
		var split []uint64
		var rec func(left uint64) bool
		rec = func(left uint64) bool {
			if left == 0 {
				count++
				return yield(append([]uint64(nil), split...)) && count < maxSplits
			}
			u := bits.TrailingZeros64(left)
			// grow a clique from u with members above u, ascending.
			var grow func(cl, cands uint64, need int) bool
			grow = func(cl, cands uint64, need int) bool {
				if need == 0 {
					split = append(split, cl)
					ok := rec(left &^ cl)
					split = split[:len(split)-1]
					return ok
				}
				for c := cands; c != 0; c &= c - 1 {
					w := bits.TrailingZeros64(c)
					// the members after w must be above w and linked to it
					above := cands & adj[w] &^ (uint64(2)<<w - 1)
					if bits.OnesCount64(above) < need-1 {
						continue
					}
					if !grow(cl|1<<w, above, need-1) {
						return false
					}
				}
				return true
			}
			return grow(1<<u, left&adj[u], k-1)
		}
		rec(left)
	}
}
