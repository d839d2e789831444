package placement

import (
	"context"
	"fmt"
	"math/bits"
	"strata/core/topology"

	"strata/core/registry"
)

// XGNN is XGNN's Placement Solver (§4.2, Fig. 8): a pruning search that
// starts from one logical partition per GPU and, GPU by GPU in selection
// order, replicates each partition the GPU cannot reach (from itself or a
// neighbour) onto itself or one of its neighbours. The candidates for a
// replica are chosen by two prioritized rules:
//
//   - R1 balance: the candidates storing the fewest partitions;
//   - R2 less replication: among those, the ones where the replica is
//     most needed, i.e. that would give the most GPUs (still lacking the
//     partition) access to it: the candidate and the GPUs that read from
//     it; on a tie the GPU that needs the partition itself comes first.
//
// Every candidate that ties on both rules is a branch of the search. Of the
// complete plans, the one kept is the best by, in order: R1 (fewest
// partitions on the fullest GPU), R2 (fewest replicas in all) and R3
// bandwidth (highest MinBandwidth, see Plan); on a full tie the first found.
// Branches whose partial plan is already worse on R1 then R2 than the best
// complete plan are pruned (both only grow as replicas are added). The
// order of branches is fixed, so the result is deterministic. The search is
// exponential in the worst case (large sparse selections): after max_steps
// steps (replicas tried) it finishes its current path greedily, taking the
// first candidate each time, and returns the best complete plan seen.
type XGNN struct {
	LocalGBps float64 `toml:"local_gbps" range:"(0,)" doc:"local GPU memory bandwidth, GB/s: rates a worker's own partitions in MinBandwidth"`
	MaxStored int     `toml:"max_stored" range:"[0,1048576]" doc:"most partitions one GPU may store (0 = no limit); a partition that fits on no GPU a worker reaches is read from the host"`
	MaxSteps  int     `toml:"max_steps" range:"[0,1000000000000]" doc:"search steps before the search finishes greedily and keeps its best plan (0 = no limit)"`
}

// StrataModule implements registry.Module.
func (*XGNN) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "placement.xgnn",
		New: func() registry.Module { return &XGNN{LocalGBps: DefaultLocalGBps, MaxSteps: DefaultMaxSteps} },
		Doc: "XGNN's pruning-search placement (balance, less replication, bandwidth)",
	}
}

// Validate checks the options.
func (x *XGNN) Validate() error {
	if err := checkLocal(x.LocalGBps); err != nil {
		return err
	}
	if x.MaxStored < 0 {
		return fmt.Errorf("max_stored = %d: must be >= 0", x.MaxStored)
	}
	if x.MaxSteps < 0 {
		return fmt.Errorf("max_steps = %d: must be >= 0", x.MaxSteps)
	}
	return nil
}

// Place implements Solver.
func (x *XGNN) Place(ctx context.Context, topo topology.Topology, devices []int) (*Plan, error) {
	v, err := newView(topo, devices)
	if err != nil {
		return nil, fmt.Errorf("placement.xgnn: %w", err)
	}
	s := &search{v: v, ctx: ctx, maxStored: x.MaxStored, maxSteps: x.MaxSteps, local: x.LocalGBps,
		store: make([]uint64, v.n), count: make([]int, v.n)}
	// Line 2-4 of Fig. 8: logical partition p on the p-th GPU.
	for i := range v.n {
		s.store[i] = 1 << i
		s.count[i] = 1
	}
	s.gpu(0)
	if s.err != nil {
		return nil, fmt.Errorf("placement.xgnn: %w", s.err)
	}
	return v.buildPlan("placement.xgnn", s.best, v.nbr, x.LocalGBps), nil
}

// DefaultMaxSteps is the default max_steps of placement.xgnn: ample for
// the 8-GPU DGX-1, whose search takes 3,425 steps and compares 576
// complete plans.
const DefaultMaxSteps = 1 << 20

// search is the state of the pruning search of Fig. 8.
type search struct {
	v         *view
	ctx       context.Context
	maxStored int
	maxSteps  int
	local     float64

	store []uint64 // partitions on each GPU
	count []int    // popcount of store
	total int      // replicas so far

	best      []uint64 // the best complete plan
	bestMax   int
	bestTotal int
	bestBW    float64
	plans     int
	nodes     int
	exhausted bool // past maxSteps: finish the current path greedily
	stop      bool
	err       error
}

// access returns the partitions GPU i reaches.
func (s *search) access(i int) uint64 {
	a := s.store[i]
	for n := s.v.nbr[i]; n != 0; n &= n - 1 {
		a |= s.store[bits.TrailingZeros64(n)]
	}
	return a
}

// gpu is PruningSearch entered for a new GPU (p_list null).
func (s *search) gpu(g int) {
	if g == s.v.n {
		s.complete()
		return
	}
	missing := s.v.all &^ s.access(g)
	s.part(g, ones(missing), 0)
}

// part places p_list[k] of GPU g (lines 12-19 of Fig. 8).
func (s *search) part(g int, plist []int, k int) {
	if s.stop {
		return
	}
	if s.nodes++; s.maxSteps > 0 && s.nodes > s.maxSteps && !s.exhausted {
		s.exhausted = true
		if s.best != nil {
			s.stop = true
			return
		}
	}
	if s.nodes&1023 == 0 {
		if err := s.ctx.Err(); err != nil {
			s.err, s.stop = err, true
			return
		}
	}
	if s.best != nil {
		m := 0
		for _, c := range s.count {
			m = max(m, c)
		}
		if m > s.bestMax || m == s.bestMax && s.total > s.bestTotal {
			return
		}
	}
	if k == len(plist) {
		s.gpu(g + 1)
		return
	}
	q := plist[k]
	nbs := s.choose(q, g)
	if len(nbs) == 0 { // every candidate is full: g reads q from the host
		s.part(g, plist, k+1)
		return
	}
	for b, nb := range nbs {
		if b > 0 && s.exhausted {
			break
		}
		s.store[nb] |= 1 << q
		s.count[nb]++
		s.total++
		s.part(g, plist, k+1)
		s.store[nb] &^= 1 << q
		s.count[nb]--
		s.total--
		if s.stop {
			return
		}
	}
}

// choose is ChooseNbrs of Fig. 8: the candidates (g and its neighbours)
// to store partition q on, best first, by R1 then R2.
func (s *search) choose(q, g int) []int {
	var lacking uint64 // GPUs that do not reach q yet
	for i := range s.v.n {
		if s.access(i)&(1<<q) == 0 {
			lacking |= 1 << i
		}
	}
	bestW1, bestW2 := -1, -1
	var out []int
	for c := s.v.closed(g); c != 0; c &= c - 1 {
		nb := bits.TrailingZeros64(c)
		if s.store[nb]&(1<<q) != 0 || s.maxStored > 0 && s.count[nb] >= s.maxStored {
			continue
		}
		w1 := s.count[nb]
		w2 := bits.OnesCount64(s.v.reach(nb) & lacking)
		switch {
		case bestW1 < 0 || w1 < bestW1 || w1 == bestW1 && w2 > bestW2:
			bestW1, bestW2 = w1, w2
			out = append(out[:0], nb)
		case w1 == bestW1 && w2 == bestW2:
			out = append(out, nb)
		}
	}
	// The GPU that needs the partition itself comes first.
	for k, nb := range out {
		if nb == g {
			copy(out[1:k+1], out[:k])
			out[0] = g
			break
		}
	}
	return out
}

// complete rates a complete plan (line 9 of Fig. 8) and keeps it if it is
// the best so far (R1, R2, then R3).
func (s *search) complete() {
	s.plans++
	if s.exhausted {
		s.stop = true
	}
	m := 0
	for _, c := range s.count {
		m = max(m, c)
	}
	if s.best != nil && (m > s.bestMax || m == s.bestMax && s.total > s.bestTotal) {
		return
	}
	bw := s.minBandwidth(s.best != nil && m == s.bestMax && s.total == s.bestTotal)
	if s.best != nil && m == s.bestMax && s.total == s.bestTotal && !(bw > s.bestBW) {
		return
	}
	if s.best == nil {
		s.best = make([]uint64, s.v.n)
	}
	copy(s.best, s.store)
	s.bestMax, s.bestTotal, s.bestBW = m, s.total, bw
}

// minBandwidth rates the current stores. When cutoff is set it may stop
// early, returning a value <= s.bestBW, once a worker is no better.
func (s *search) minBandwidth(cutoff bool) float64 {
	minBW := 0.0
	for i := range s.v.n {
		_, a := s.v.reads(i, s.store, s.v.nbr[i], s.local)
		if i == 0 || a < minBW {
			minBW = a
		}
		if cutoff && minBW <= s.bestBW {
			return minBW
		}
	}
	return minBW
}
